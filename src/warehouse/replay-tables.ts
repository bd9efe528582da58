/**
 * What `replay --in-place` does with each table (docs/replay.md, "Replay in place"): how
 * the scratch schema starts (its `seed`) and how the rebuilt rows reach the live table
 * (its `merge`), one entry per table. Seeding (src/warehouse/replay-scratch.ts) and the
 * merge (src/warehouse/replay-merge.ts) read nothing else, so a table the in-place replay
 * must know about is one entry here. A table with no entry is neither seeded nor merged:
 * runs, the raw zone, webhook events and the rest no replay rebuilds.
 *
 * The order is the order of the writes: parents before children, for their foreign keys
 * (the merge deletes in the reverse order), and a table derived from others after them.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './database.ts';
import { TRACKED } from './listings.ts';
import { recomputeLatest } from './rankings.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** How a row finds the business it belongs to: its own `business_id`, or its parent row's. */
export type Owner = 'business_id' | { parent: string; on: string };

/**
 * A rebuilt business's rows as they stood before its window (`t`: the live row; `w`: its
 * business's window, `window_start` and `window_day`, its UTC day).
 */
export interface WoundBack {
  /**
   * A row is kept when `column` is before its business's window: before its start (`time`)
   * or before its first UTC day (`day`). Null: every row of the business is kept.
   */
  before: { column: string; by: 'time' | 'day' } | null;
  /** A row is kept only when its parent row was: the scratch `table` holds its `on`. */
  parent: { table: string; on: string } | null;
  /**
   * The row's content wound back to its last version before the window (`v`): the
   * `history` row of the same `match` columns with the latest `observed_at`. `fields` are
   * taken from it (as they are now when there is none); `profile`: every column not in
   * `overrides`, from the version's `profile` document (`p`), where it has the key.
   */
  lastVersion?: {
    history: string;
    match: readonly string[];
    fields: readonly string[] | 'profile';
  };
  /** Columns written otherwise than as they are now: raw SQL over `t`, `w`, `v` and `p`. */
  overrides?: Readonly<Record<string, string>>;
}

export type Seed =
  /** Every live row as it is: the replay reads it and does not rebuild it per business. */
  | 'copy'
  | WoundBack
  /** Computed from the tables seeded before it (`db` works in the scratch schema). */
  | { derive: (db: Db, scratch: string) => Promise<void> };

export type Merge =
  /**
   * For each business of the merge, the rebuilt rows upserted by key and the live rows the
   * rebuild lacks deleted. `keepLive`: columns no replay rebuilds, taken from the live row.
   */
  | { kind: 'per business'; keepLive?: readonly string[] }
  /** The rows of the replayed runs (`run_id`), of the merged businesses or of none, replaced. */
  | { kind: 'per run' }
  /** Every rebuilt row upserted by key, none deleted; `leaveOut`: live rows keep their own. */
  | { kind: 'upsert'; leaveOut: readonly string[] }
  /**
   * A rebuilt row the live table lacks (none has its `sameAs`) is added closed: `delivered`
   * set to the merge's time, `note` saying why it was never sent. Live rows stay as they are.
   */
  | { kind: 'add closed'; sameAs: string; delivered: string; note: string };

export interface ReplayTable {
  table: string;
  /** The primary key: what the merge matches a rebuilt row with a live one by. */
  key: readonly string[];
  /** How a row finds its business, for the tables rebuilt per business. */
  owner?: Owner;
  /**
   * The column a sequence numbers. Seeded, the scratch sequence starts past every live id,
   * so an id the replay gives is never a live row's. With `sameRowAs`, a rebuilt row keeps
   * the id of the live row equal on those columns (BI may hold it) and the merge writes the
   * ids; without it, the merge never writes the column: a live row keeps its id, an added
   * row takes the live sequence's next.
   */
  ids?: { column: string; sameRowAs?: readonly string[] };
  /** What the scratch schema starts with; none: the replay writes every row. */
  seed?: Seed;
  /** How the rebuilt rows reach the live table; none: they do not. */
  merge?: Merge;
}

/** A time set inside the window was not set before it. */
const setBefore = (column: string) => `case when t.${column} < w.window_start then t.${column} end`;
/** Before its window, a row removed inside it was still there. */
const REMOVED_BEFORE = setBefore('removed_at');
/** A row is written (and `last_seen_at` moved) only when its content changes. */
const SEEN_BEFORE = "least(t.last_seen_at, w.window_start - interval '1 millisecond')";
/**
 * A row last written before the window held then what it holds now; one written inside
 * it is written again by the first night of the window that reads it (an empty hash never
 * matches), which is what makes its later nights compare as they did.
 */
const HASH_BEFORE = "case when t.last_seen_at < w.window_start then t.content_hash else '' end";

/** The parent a row is seeded with (`WoundBack.parent`) and the one it belongs to (`Owner`). */
const OF_BUSINESS = { table: 'businesses', on: 'business_id' } as const;
const OF_REVIEW = { table: 'reviews', on: 'review_id' } as const;
const OF_SERIES = { table: 'rank_series', on: 'series_id' } as const;
const BY_REVIEW: Owner = { parent: 'reviews', on: 'review_id' };
const BY_SERIES: Owner = { parent: 'rank_series', on: 'series_id' };

const PER_BUSINESS: Merge = { kind: 'per business' };
/** Reference data, upserted by key; a live row keeps its `updated_at`. */
const REFERENCE: Merge = { kind: 'upsert', leaveOut: ['updated_at'] };
const time = (column: string) => ({ column, by: 'time' as const });
const day = (column: string) => ({ column, by: 'day' as const });

/**
 * A table rebuilt per business whose rows from before the window (`before`: an observation
 * time or day) are kept as they are, when their parent (by default their business) was.
 */
function history(
  table: string,
  key: readonly string[],
  before: WoundBack['before'],
  owner: Owner = 'business_id',
  parent: WoundBack['parent'] = OF_BUSINESS,
): ReplayTable {
  return { table, key, owner, seed: { before, parent }, merge: PER_BUSINESS };
}

const REVIEW_FIELDS = [
  'rating',
  'title',
  'content',
  'likes_count',
  'likes_change',
  'response_count',
];

export const REPLAY_TABLES: readonly ReplayTable[] = [
  { table: 'accounts', key: ['name'], seed: 'copy' },
  { table: 'countries', key: ['country_id'], seed: 'copy', merge: REFERENCE },
  { table: 'states', key: ['state_id'], seed: 'copy', merge: REFERENCE },
  { table: 'sub_categories', key: ['sub_category_id'], seed: 'copy', merge: REFERENCE },
  { table: 'review_response_requests', key: ['request_id'], seed: 'copy' },
  {
    table: 'review_response_request_events',
    key: ['request_id', 'observed_at', 'status'],
    seed: 'copy',
  },
  // Every alert is seeded, so that none is raised twice; each keeps its id and delivery.
  {
    table: 'alerts',
    key: ['alert_id'],
    ids: { column: 'alert_id' },
    seed: 'copy',
    merge: {
      kind: 'add closed',
      sameAs: 'dedupe_key',
      delivered: 'delivered_at',
      note: 'last_error',
    },
  },

  {
    table: 'businesses',
    key: ['business_id'],
    owner: 'business_id',
    seed: {
      before: time('first_seen_at'),
      parent: null,
      lastVersion: { history: 'business_versions', match: ['business_id'], fields: 'profile' },
      // The bookkeeping columns; every other column is the profile a version records.
      overrides: {
        business_id: 't.business_id',
        account_name: 't.account_name',
        first_seen_at: 't.first_seen_at',
        last_seen_at:
          'case when t.last_seen_at < w.window_start then t.last_seen_at else coalesce(v.observed_at, t.first_seen_at) end',
        archived_at: setBefore('archived_at'),
        content_hash: "coalesce(v.content_hash, '')",
        profile_changed_at: 'coalesce(v.observed_at, t.first_seen_at)',
        profile_first_read_at: setBefore('profile_first_read_at'),
        listings_first_synced_at: setBefore('listings_first_synced_at'),
        reviews_first_synced_at: setBefore('reviews_first_synced_at'),
        rankings_first_synced_at: setBefore('rankings_first_synced_at'),
        keywords_first_synced_at: setBefore('keywords_first_synced_at'),
        // Set by operation 4, which no read serves: as it is.
        sub_category_name: 't.sub_category_name',
        removals_held: 'null',
      },
    },
    // Set by operation 4, which no read serves: a business first seen in its window keeps it.
    merge: { kind: 'per business', keepLive: ['sub_category_name'] },
  },
  history('business_versions', ['business_id', 'observed_at'], time('observed_at')),
  {
    table: 'listings',
    key: ['business_id', 'listing_id'],
    owner: 'business_id',
    seed: {
      before: time('first_seen_at'),
      parent: OF_BUSINESS,
      // Each listing's status fields as its last history row has them.
      lastVersion: {
        history: 'listing_status_history',
        match: ['business_id', 'listing_id'],
        fields: TRACKED,
      },
      overrides: {
        status_changed_at: 'coalesce(v.observed_at, t.first_seen_at)',
        removed_at: REMOVED_BEFORE,
        last_seen_at: SEEN_BEFORE,
        content_hash: HASH_BEFORE,
      },
    },
    merge: PER_BUSINESS,
  },
  history(
    'listing_status_history',
    ['business_id', 'listing_id', 'observed_at'],
    time('observed_at'),
  ),
  history('listing_accuracy_days', ['business_id', 'day'], day('day')),
  // The Inaccurate episodes begun before the window, as they stood then: one fixed inside
  // it is open again, for the window's nights to fix.
  {
    table: 'listing_fixes',
    key: ['business_id', 'listing_id', 'turned_inaccurate_at'],
    owner: 'business_id',
    seed: {
      before: time('turned_inaccurate_at'),
      parent: OF_BUSINESS,
      overrides: {
        fixed_at: setBefore('fixed_at'),
        fixed_on: 'case when t.fixed_at < w.window_start then t.fixed_on end',
      },
    },
    merge: PER_BUSINESS,
  },
  {
    table: 'reviews',
    key: ['review_id'],
    owner: 'business_id',
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
  // responses just seeded, as the reviews writer counts them (src/warehouse/reviews.ts).
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
    merge: PER_BUSINESS,
  },
  {
    table: 'keywords',
    key: ['keyword_id'],
    owner: 'business_id',
    seed: {
      before: time('first_seen_at'),
      parent: OF_BUSINESS,
      overrides: {
        deleted_at: setBefore('deleted_at'),
        last_seen_at: SEEN_BEFORE,
        content_hash: HASH_BEFORE,
      },
    },
    merge: PER_BUSINESS,
  },
  // Rank series keep their ids (BI may hold them): the series of the same business,
  // keyword and site is the same series. Every series of a business is kept.
  {
    ...history('rank_series', ['series_id'], null),
    ids: { column: 'series_id', sameRowAs: ['business_id', 'keyword', 'site'] },
  },
  history('rank_history', ['series_id', 'observed_on'], day('observed_on'), BY_SERIES, OF_SERIES),
  // The ranks' read model, as the rankings writer computes it (src/warehouse/rankings.ts).
  {
    table: 'rank_latest',
    key: ['series_id'],
    owner: BY_SERIES,
    seed: {
      derive: async (db, scratch) => {
        const { rows } = await sql<{ id: number }>`
          select series_id as id from ${sql.id(scratch, 'rank_series')}`.execute(db);
        await recomputeLatest(
          db,
          rows.map((s) => s.id),
        );
      },
    },
    merge: PER_BUSINESS,
  },
  history('visibility_days', ['business_id', 'day', 'site'], day('day')),
  // The answers record, one row per business and read (migration 0022; docs/warehouse.md,
  // "Answers applied"): the replay writes it whole, from its own reads, so nothing is
  // seeded. The only place the in-place replay names its key.
  {
    table: 'business_answers',
    key: ['business_id', 'read'],
    owner: 'business_id',
    merge: PER_BUSINESS,
  },
  // The replayed runs' quarantine rows, for the merged businesses and the accounts' own.
  {
    table: 'quarantine',
    key: ['quarantine_id'],
    owner: 'business_id',
    ids: { column: 'quarantine_id' },
    merge: { kind: 'per run' },
  },
];
