/**
 * `reviews`, `review_versions` and `review_responses`, for both categories (`review` and
 * `social`) at once.
 *
 * A review's content hash covers what a reader would call the review: rating, title and
 * text, author, date, likes and its responses. A version row is appended when that hash
 * differs from the stored one (and for a review seen for the first time). Reviews and
 * responses that a successful read no longer lists get `removed_at` (unless the read is a
 * volume drop: then both are held, held-removals.ts). The reviews seen for
 * the first time are reported as a change (`changes.ts`) for the alert rules.
 *
 * A review id belongs to one business: the one whose row holds it. A read of another
 * business that carries the same id never moves that row (nor its versions and
 * responses): its copy is returned for quarantine, naming both businesses
 * (docs/warehouse.md, "Rules as implemented"), and the rest of the read is written.
 */
import { sql } from 'kysely';
import {
  columnTypesOf,
  type Review,
  type ReviewResponse,
  reviewResponseShape,
  reviewShape,
  rowOf,
} from '../../api/index.ts';
import type { Db, Numeric, TableColumns, Timestamp } from '../database.ts';
import { type AllColumnTypes, type BulkRow, seenRow, writeChildRows } from '../write/bulk-write.ts';
import type { Change } from '../write/changes.ts';
import { fieldsHash } from '../write/content-hash.ts';
import type { QuarantinedRecord } from '../write/quarantine.ts';
import {
  HASH_BEFORE,
  history,
  OF_BUSINESS,
  type Owner,
  PER_BUSINESS,
  REMOVED_BEFORE,
  type ReplayTable,
  SEEN_BEFORE,
  time,
} from '../write/replay-table.ts';
import {
  type BusinessWriteContext,
  isRefused,
  type StreamWriteContext,
  type StreamWriter,
} from '../write/write-context.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';

/*
 * The tables this writer writes, as Kysely sees them (`Database` in database.ts lists
 * them; the column helper types are there).
 */

/** `reviews`: a review's columns (`reviewShape`, src/api/reviews.ts) and the writer's own. */
export interface ReviewsTable extends TableColumns<typeof reviewShape> {
  business_id: number;
  content_hash: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface ReviewVersionsTable {
  review_id: string;
  observed_at: Timestamp;
  content_hash: string;
  rating: Numeric | null;
  title: string | null;
  content: string;
  likes_count: number | null;
  likes_change: number | null;
  response_count: number;
  run_id: string | null;
}

/**
 * `review_responses`: a response's columns (`reviewResponseShape`, src/api/reviews.ts) and
 * the writer's own.
 */
export interface ReviewResponsesTable extends TableColumns<typeof reviewResponseShape> {
  review_id: string;
  business_id: number;
  content_hash: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  removed_at: Timestamp | null;
}

/**
 * Migration 0021: per business, its reviews waiting for an answer, whatever their age
 * (docs/warehouse.md, "Read models", review_backlog), kept by this writer.
 */
export interface ReviewBacklogTable {
  business_id: number;
  reviews_waiting: number;
}

// Its tables in `Database` (database.ts), declared with the writer that writes them.
declare module '../database.ts' {
  interface Database {
    reviews: ReviewsTable;
    review_versions: ReviewVersionsTable;
    review_responses: ReviewResponsesTable;
    review_backlog: ReviewBacklogTable;
  }
}

/** The stored content of a response: what its content hash covers (with its review's id). */
export function responseToRow(response: ReviewResponse) {
  return rowOf(reviewResponseShape, response);
}

/** The stored content of a review: what its content hash covers (with its responses). */
export function reviewToRow(review: Review) {
  return rowOf(reviewShape, review);
}

/**
 * The content hash of a review: its `reviewToRow` fields, in that order, then each
 * response's `responseToRow` fields.
 */
function reviewHash(
  content: ReturnType<typeof reviewToRow>,
  responses: readonly ReturnType<typeof responseToRow>[],
): string {
  return fieldsHash([...Object.values(content), responses.map((r) => Object.values(r))]);
}

/** The content hash of a response: its `responseToRow` fields, then its review's id. */
function responseHash(content: ReturnType<typeof responseToRow>, reviewId: string): string {
  return fieldsHash([...Object.values(content), reviewId]);
}

/** What a review's row and a response's row keep besides the record: its hash, when seen. */
const SEEN_COLUMNS = {
  content_hash: 'text',
  first_seen_at: 'timestamptz',
  last_seen_at: 'timestamptz',
  removed_at: 'timestamptz',
} as const;

/** The columns of `reviews` the upsert writes, with their types: all of them. */
const REVIEW_COLUMNS = {
  business_id: 'bigint',
  ...columnTypesOf(reviewShape),
  ...SEEN_COLUMNS,
} as const satisfies AllColumnTypes<'reviews'>;

/** The columns of `review_responses` the upsert writes, with their types: all of them. */
const RESPONSE_COLUMNS = {
  review_id: 'uuid',
  business_id: 'bigint',
  ...columnTypesOf(reviewResponseShape),
  ...SEEN_COLUMNS,
} as const satisfies AllColumnTypes<'review_responses'>;

/** A stored row's state as far as a rewrite goes: unchanged when both match. */
interface StoredState {
  content_hash: string;
  removed_at: Date | null;
}

interface StoredReview extends StoredState {
  review_id: string;
}

interface StoredResponse extends StoredState {
  response_id: string;
  review_id: string;
}

/**
 * The business's stored reviews and responses, in one statement (one round trip): a
 * review row has no `response_id`.
 */
async function storedState(
  db: Db,
  businessId: number,
): Promise<{ storedReviews: StoredReview[]; storedResponses: StoredResponse[] }> {
  const { rows } = await sql<StoredResponse | (StoredReview & { response_id: null })>`
    select null::uuid as response_id, review_id, content_hash, removed_at
      from reviews where business_id = ${businessId}
    union all
    select response_id, review_id, content_hash, removed_at
      from review_responses where business_id = ${businessId}`.execute(db);
  const storedReviews: StoredReview[] = [];
  const storedResponses: StoredResponse[] = [];
  for (const row of rows) {
    if (row.response_id === null) {
      storedReviews.push({
        review_id: row.review_id,
        content_hash: row.content_hash,
        removed_at: row.removed_at,
      });
    } else storedResponses.push(row);
  }
  return { storedReviews, storedResponses };
}

function isUnchanged(stored: StoredState | undefined, hash: string): boolean {
  return stored !== undefined && stored.content_hash === hash && stored.removed_at === null;
}

/**
 * Of `ids` (reviews or responses), those whose row another business holds, with that
 * business (ids lower-cased, as uuid text reads back). Asked after the guarded upsert
 * (`owner` in bulk-write.ts), so that a row another business's transaction inserted
 * meanwhile has committed and is seen.
 */
async function storedElsewhere(
  db: Db,
  table: 'reviews' | 'review_responses',
  businessId: number,
  ids: readonly unknown[],
): Promise<Map<string, number>> {
  const id = sql.ref(table === 'reviews' ? 'review_id' : 'response_id');
  const { rows } = await sql<{ id: string; business_id: number | string }>`
    select ${id}::text as id, business_id from ${sql.table(table)}
    where ${id} = any(${ids}::uuid[]) and business_id <> ${businessId}`.execute(db);
  return new Map(rows.map((row) => [row.id.toLowerCase(), Number(row.business_id)]));
}

/** Rows sent to a guarded upsert that it did not write: held, perhaps, by another business. */
function unwritten(stats: WriteStats, table: string, sent: number): number {
  const counts = stats[table];
  return sent - (counts ? counts.inserted + counts.updated : 0);
}

/** What a reader calls the item: a review, or a social item. */
function itemName(review: Review): string {
  return review.category === 'social' ? 'social item' : 'review';
}

/** A response of the answer: its review, and its row to send (null: stored and unchanged, still counted). */
interface ResponseSeen {
  review: Review;
  response: ReviewResponse;
  row: BulkRow<'review_responses'> | null;
}

/** The answer's reviews and responses against the stored rows: what to send, what is new. */
interface ReviewPlan {
  latest: Map<string, Review>;
  rows: BulkRow<'reviews'>[];
  /** Reviews whose content changed (or new): each gets a version row. */
  changedIds: string[];
  unchangedReviews: number;
  responses: Map<string, ResponseSeen>;
  firstSeen: Review[];
}

type StoredReviewState = Awaited<ReturnType<typeof storedState>>;

/** Compares the answer with the stored hashes: only new and changed rows are sent. */
function planReviews(
  ctx: StreamWriteContext,
  reviews: readonly Review[],
  stored: StoredReviewState,
): ReviewPlan {
  const { businessId, observedAt } = ctx;
  const reviewState = new Map(stored.storedReviews.map((row) => [row.review_id, row]));
  const responseState = new Map(stored.storedResponses.map((row) => [row.response_id, row]));
  const plan: ReviewPlan = {
    latest: new Map(reviews.map((review) => [review.id, review])),
    rows: [],
    changedIds: [],
    unchangedReviews: 0,
    responses: new Map(),
    firstSeen: [],
  };
  for (const review of plan.latest.values()) {
    const content = reviewToRow(review);
    const responseContents = review.responses.map(responseToRow);
    const hash = reviewHash(content, responseContents);
    const storedRow = reviewState.get(review.id);
    if (!storedRow) plan.firstSeen.push(review);
    if (isUnchanged(storedRow, hash)) plan.unchangedReviews += 1;
    else {
      plan.rows.push({ ...seenRow(content, businessId, hash, observedAt), removed_at: null });
      if (storedRow?.content_hash !== hash) plan.changedIds.push(review.id);
    }
    review.responses.forEach((response, i) => {
      const responseContent = responseContents[i] as ReturnType<typeof responseToRow>;
      const responseHashValue = responseHash(responseContent, review.id);
      plan.responses.set(responseContent.response_id, {
        review,
        response,
        row: isUnchanged(responseState.get(responseContent.response_id), responseHashValue)
          ? null
          : {
              ...seenRow(responseContent, businessId, responseHashValue, observedAt),
              review_id: review.id,
              removed_at: null,
            },
      });
    });
  }
  return plan;
}

/**
 * The reviews another business holds, quarantined. Every row sent is new or changed, so
 * one the upsert left unwritten is another business's: the only statement spent on the
 * question is on that path. Returns who owns each such review (by id, lowercased).
 */
async function quarantineHeldReviews(
  db: Db,
  stats: WriteStats,
  businessId: number,
  plan: ReviewPlan,
  quarantined: QuarantinedRecord[],
): Promise<(review: Review) => number | undefined> {
  const owners =
    unwritten(stats, 'reviews', plan.rows.length) > 0
      ? await storedElsewhere(
          db,
          'reviews',
          businessId,
          plan.rows.map((row) => row.review_id),
        )
      : new Map<string, number>();
  const ownerOf = (review: Review) => owners.get(review.id.toLowerCase());
  let held = 0;
  for (const review of plan.latest.values()) {
    const owner = ownerOf(review);
    if (owner === undefined) continue;
    held += 1;
    quarantined.push({
      stream: 'reviews',
      location: `reviews ${review.id}`,
      reason: `${itemName(review)} ${review.id} is stored under business ${owner}; business ${businessId}'s answer carries it too`,
      payload: review,
    });
  }
  // The upsert counted them unchanged: they are quarantined instead.
  addCounts(stats, 'reviews', { unchanged: -held });
  return ownerOf;
}

/** The first reviews read is the baseline: a business's whole history is not "new". */
function firstSeenChanges(ctx: StreamWriteContext, firstSeenHere: readonly Review[]): Change[] {
  if (!ctx.hadSync || firstSeenHere.length === 0) return [];
  return [
    {
      type: 'reviews_first_seen',
      accountName: ctx.accountName,
      businessId: ctx.businessId,
      runId: ctx.runId,
      detectedAt: ctx.observedAt,
      reviews: firstSeenHere.map((review) => ({
        reviewId: review.id,
        siteName: review.siteName,
        rating: review.rating,
        authorName: review.authorName,
      })),
    },
  ];
}

/**
 * Writes the responses of the reviews written here (a held review's responses are its
 * owner's: none is written here), and quarantines those another business holds.
 */
async function writeResponses(
  db: Db,
  stats: WriteStats,
  ctx: StreamWriteContext,
  written: {
    responses: ReadonlyMap<string, ResponseSeen>;
    stored: StoredReviewState['storedResponses'];
    ownerOf: (review: Review) => number | undefined;
    removeGone: boolean;
  },
  quarantined: QuarantinedRecord[],
): Promise<void> {
  const { responses, ownerOf } = written;
  const changedResponses: BulkRow<'review_responses'>[] = [];
  let unchangedResponses = 0;
  for (const { review, row } of responses.values()) {
    if (ownerOf(review) !== undefined) continue;
    if (row) changedResponses.push(row);
    else unchangedResponses += 1;
  }
  await writeChildRows(
    db,
    stats,
    ctx,
    {
      table: 'review_responses',
      key: ['response_id'],
      columns: RESPONSE_COLUMNS,
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'removed_at'],
      owner: 'business_id',
      id: 'response_id',
      stamp: 'removed_at',
    },
    {
      rows: changedResponses,
      unsent: unchangedResponses,
      stored: written.stored,
      seen: responses,
      // A response goes with its review: kept while the review is refused.
      refused: (row) => isRefused(ctx, 'reviews', row.review_id),
      removeGone: () => written.removeGone,
    },
  );
  if (unwritten(stats, 'review_responses', changedResponses.length) === 0) return;
  const responseOwners = await storedElsewhere(
    db,
    'review_responses',
    ctx.businessId,
    changedResponses.map((row) => row.response_id),
  );
  let held = 0;
  for (const [responseId, { review, response }] of responses) {
    const owner = responseOwners.get(responseId.toLowerCase());
    if (owner === undefined) continue;
    held += 1;
    quarantined.push({
      stream: 'reviews',
      location: `responses ${responseId}`,
      reason: `response ${responseId} (of ${itemName(review)} ${review.id}) is stored under business ${owner}; business ${ctx.businessId}'s answer carries it too`,
      payload: response,
    });
  }
  addCounts(stats, 'review_responses', { unchanged: -held });
}

/**
 * Writes every review and social item of one business (all review reads succeeded).
 * Only new and changed reviews and responses are sent: one whose stored content hash
 * matches and that is not marked removed counts as unchanged without travelling. A review
 * or response whose id another business holds is not written, and neither are a held
 * review's responses: they come back as `quarantined`, and the stored rows stay as they
 * were.
 */
export async function writeReviews(
  db: Db,
  ctx: StreamWriteContext,
  reviews: readonly Review[],
): Promise<{ stats: WriteStats; changes: Change[]; quarantined: QuarantinedRecord[] }> {
  const { businessId } = ctx;
  const stored: StoredReviewState = ctx.newBusiness
    ? { storedReviews: [], storedResponses: [] }
    : await storedState(db, businessId);
  const plan = planReviews(ctx, reviews, stored);

  // Responses go with their reviews: held together on a volume drop (held-removals.ts).
  let removeGone = true;
  const stats = await writeChildRows(
    db,
    {},
    ctx,
    {
      table: 'reviews',
      key: ['review_id'],
      columns: REVIEW_COLUMNS,
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'removed_at'],
      owner: 'business_id',
      id: 'review_id',
      stamp: 'removed_at',
    },
    {
      rows: plan.rows,
      unsent: plan.unchangedReviews,
      stored: stored.storedReviews,
      seen: plan.latest,
      refused: (row) => isRefused(ctx, 'reviews', row.review_id),
      removeGone: (live, gone) => {
        removeGone = ctx.removals?.('reviews', live, gone) ?? true;
        return removeGone;
      },
    },
  );

  const quarantined: QuarantinedRecord[] = [];
  const ownerOf = await quarantineHeldReviews(db, stats, businessId, plan, quarantined);
  const ownReviewIds = plan.changedIds.filter(
    (id) => ownerOf(plan.latest.get(id) as Review) === undefined,
  );
  // Reviews this business had never stored (its first reviews read, above all) have no
  // version yet: a new review's row was just inserted, and a version goes with its review.
  const storedIds = new Set(stored.storedReviews.map((row) => row.review_id));
  const fresh = ownReviewIds.every((id) => !storedIds.has(id));
  const versionsInserted = await appendReviewVersions(db, ctx, ownReviewIds, fresh);
  addCounts(stats, 'review_versions', { inserted: versionsInserted });

  const changes = firstSeenChanges(
    ctx,
    plan.firstSeen.filter((review) => ownerOf(review) === undefined),
  );
  await writeResponses(
    db,
    stats,
    ctx,
    { responses: plan.responses, stored: stored.storedResponses, ownerOf, removeGone },
    quarantined,
  );
  if (wroteAny(stats, 'reviews') || wroteAny(stats, 'review_responses')) {
    await countReviewsWaiting(db, businessId);
  }
  return { stats, changes, quarantined };
}

/** The review fields a review's version row records (`appendReviewVersions`). */
const REVIEW_FIELDS = [
  'rating',
  'title',
  'content',
  'likes_count',
  'likes_change',
  'response_count',
];
const OF_REVIEW = { table: 'reviews', on: 'review_id' } as const;
const BY_REVIEW: Owner = { parent: 'reviews', on: 'review_id' };

/** How `replay --in-place` seeds and merges the reviews' tables (`StreamWriter.replay`). */
const REVIEWS_REPLAY: readonly ReplayTable[] = [
  {
    table: 'reviews',
    key: ['review_id'],
    owner: 'business_id',
    sharedId: { location: 'reviews' },
    seed: {
      before: time('first_seen_at'),
      parent: OF_BUSINESS,
      // Each review's content as its last version has it.
      lastVersion: { history: 'review_versions', match: ['review_id'], fields: REVIEW_FIELDS },
      overrides: {
        content_hash: "coalesce(v.content_hash, '')",
        removed_at: REMOVED_BEFORE,
        last_seen_at: SEEN_BEFORE,
      },
    },
    merge: PER_BUSINESS,
  },
  history(
    'review_versions',
    ['review_id', 'observed_at'],
    time('observed_at'),
    BY_REVIEW,
    OF_REVIEW,
  ),
  {
    table: 'review_responses',
    key: ['response_id'],
    owner: 'business_id',
    sharedId: { location: 'responses' },
    seed: {
      before: time('first_seen_at'),
      parent: OF_REVIEW,
      overrides: {
        removed_at: REMOVED_BEFORE,
        last_seen_at: SEEN_BEFORE,
        content_hash: HASH_BEFORE,
      },
    },
    merge: PER_BUSINESS,
  },
  // The reviews waiting as they stood before the window: counted from the reviews and
  // responses just seeded, as `countReviewsWaiting` counts them.
  {
    table: 'review_backlog',
    key: ['business_id'],
    owner: 'business_id',
    seed: {
      derive: async (db, scratch) => {
        await sql`insert into ${sql.id(scratch, 'review_backlog')} (business_id, reviews_waiting)
          select x.business_id, (count(*) filter (where x.category = 'review'
              and x.removed_at is null and x.can_respond and x.response_count = 0
              and not exists (select 1 from ${sql.id(scratch, 'review_responses')} p
                where p.review_id = x.review_id and p.removed_at is null)))::int
            from ${sql.id(scratch, 'reviews')} x
           group by x.business_id`.execute(db);
      },
    },
    // A business holding or carrying a contested review keeps its live count: the rows
    // it counts stay as the live warehouse has them.
    merge: { kind: 'per business', liveWhereContested: true },
  },
];

/** The reviews stream's entry in `STREAM_WRITERS` (stream-writers.ts). */
export const reviewsWriter: StreamWriter<'reviews'> = {
  write: writeReviews,
  location: (review) => `reviews ${review.id}`,
  // The first reviews read is the baseline: nothing is "new" in it.
  firstSynced: 'reviews_first_synced_at',
  replay: REVIEWS_REPLAY,
};

function wroteAny(stats: WriteStats, table: string): boolean {
  const counts = stats[table];
  return counts !== undefined && counts.inserted + counts.updated + counts.deleted > 0;
}

/**
 * The business's `review_backlog` row (migration 0021; docs/warehouse.md, "Read models",
 * review_backlog): its live reviews the API can answer with no response, upstream or
 * stored, whatever their age, as `v_location_scorecard` shows them. Counted again from the
 * rows just written, in the business's transaction, whenever its reviews or responses
 * changed: `reviews_waiting_idx` holds only the waiting reviews, so the count reads those
 * (and each one's responses by `review_responses_review_id_idx`), never the business's
 * answered history. Written only when the count differs.
 */
async function countReviewsWaiting(db: Db, businessId: number): Promise<void> {
  await sql`
    insert into review_backlog as b (business_id, reviews_waiting)
    select ${businessId}::bigint, count(*)::int from reviews x
    where x.business_id = ${businessId}::bigint and x.category = 'review'
      and x.removed_at is null and x.can_respond and x.response_count = 0
      and not exists (select 1 from review_responses p
        where p.review_id = x.review_id and p.removed_at is null)
    on conflict (business_id) do update set reviews_waiting = excluded.reviews_waiting
      where b.reviews_waiting is distinct from excluded.reviews_waiting`.execute(db);
}

/**
 * One `review_versions` row per review whose content hash changed, copied from the review
 * row just upserted in this transaction, so the review's text is not sent a second time.
 * `fresh`: every review is new to the warehouse, so no version of it exists and none is
 * looked for (a plain insert, without the conflict check per row).
 */
async function appendReviewVersions(
  db: Db,
  ctx: BusinessWriteContext,
  reviewIds: readonly string[],
  fresh: boolean,
): Promise<number> {
  if (reviewIds.length === 0) return 0;
  const result = await sql`
    insert into review_versions (review_id, observed_at, content_hash, rating, title, content,
      likes_count, likes_change, response_count, run_id)
    select review_id, ${ctx.observedAt}::timestamptz, content_hash, rating, title, content,
      likes_count, likes_change, response_count, ${ctx.runId}::uuid
    from reviews where review_id = any(${reviewIds}::uuid[])
    ${fresh ? sql`` : sql`on conflict (review_id, observed_at) do nothing`}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
