/**
 * `keywords`: the business's tracked keywords. A keyword a successful read no longer
 * lists gets `deleted_at` (held instead on a volume drop, held-removals.ts); one that
 * comes back has it cleared.
 */
import { columnTypesOf, type Keyword, keywordShape, rowOf } from '../../api/index.ts';
import type { Db, TableColumns, Timestamp } from '../database.ts';
import {
  type AllColumnTypes,
  type BulkRow,
  type ChildTable,
  lockInKeyOrder,
  seenRow,
  writeChildRows,
} from '../write/bulk-write.ts';
import { fieldsHash } from '../write/content-hash.ts';
import type { QuarantinedRecord } from '../write/quarantine.ts';
import {
  HASH_BEFORE,
  OF_BUSINESS,
  PER_BUSINESS,
  SEEN_BEFORE,
  setBefore,
  time,
} from '../write/replay-table.ts';
import { type BusinessWriteContext, isRefused, type StreamWriter } from '../write/write-context.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';

/**
 * `keywords` as Kysely sees it (`Database` in database.ts lists it): a keyword's columns
 * (`keywordShape`, src/api/keywords.ts) and the writer's own.
 */
export interface KeywordsTable extends TableColumns<typeof keywordShape> {
  business_id: number;
  content_hash: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  deleted_at: Timestamp | null;
}

// Its tables in `Database` (database.ts), declared with the writer that writes them.
declare module '../database.ts' {
  interface Database {
    keywords: KeywordsTable;
  }
}

/** The stored content of a keyword: what its content hash covers. */
export function keywordToRow(keyword: Keyword) {
  return rowOf(keywordShape, keyword);
}

/** The content hash of a keyword: its `keywordToRow` fields, in that order. */
export function keywordContentHash(content: ReturnType<typeof keywordToRow>): string {
  return fieldsHash(Object.values(content));
}

/**
 * Writes the complete keywords of one business (the stream succeeded). Only new and
 * changed keywords are sent: one whose stored content hash matches and that is not marked
 * deleted counts as unchanged without travelling. A keyword whose id another business
 * holds is not written (its stored row stays with its owner, docs/warehouse.md, "Ids
 * under two businesses"): it comes back as `quarantined`, as reviews.ts does.
 */
export async function writeKeywords(
  db: Db,
  ctx: BusinessWriteContext,
  keywords: readonly Keyword[],
): Promise<{ stats: WriteStats; quarantined: QuarantinedRecord[] }> {
  const { businessId, observedAt } = ctx;
  const stored = ctx.newBusiness
    ? []
    : await db
        .selectFrom('keywords')
        .select(['keyword_id', 'content_hash', 'deleted_at'])
        .where('business_id', '=', businessId)
        .execute();
  const storedState = new Map(stored.map((row) => [row.keyword_id, row]));
  const latest = new Map(keywords.map((keyword) => [keyword.id, keyword]));
  const rows: BulkRow<'keywords'>[] = [];
  for (const keyword of latest.values()) {
    const content = keywordToRow(keyword);
    const hash = keywordContentHash(content);
    const before = storedState.get(keyword.id);
    if (before && before.content_hash === hash && before.deleted_at === null) continue;
    rows.push({ ...seenRow(content, businessId, hash, observedAt), deleted_at: null });
  }
  // Locked first, in id order as every writer locks them: a concurrent business's marking
  // gone of one of them has committed by now, or waits for this transaction.
  const ownGone = stored
    .filter(
      (row) =>
        row.deleted_at === null &&
        !latest.has(row.keyword_id) &&
        !isRefused(ctx, 'keywords', row.keyword_id),
    )
    .map((row) => row.keyword_id);
  const locked = await lockInKeyOrder(db, KEYWORDS_PLAN, [
    ...rows.map((row) => row.keyword_id),
    ...ownGone,
  ]);
  // Keywords another business holds and has marked gone: taken over (moved), unless it let
  // go of them this very run, which would make the move depend on which write came first:
  // those wait for the next run, quarantined meanwhile (docs/warehouse.md, "Rules as
  // implemented").
  const gone = locked
    .filter((row) => Number(row.owner) !== businessId && row.stamp !== null)
    .map((row) => ({ keyword_id: Number(row.id) }));
  const waiting = new Set(
    gone.map((row) => Number(row.keyword_id)).filter((id) => ctx.keywordsGone?.has(String(id))),
  );
  const sending = rows.filter((row) => !waiting.has(Number(row.keyword_id)));
  const moved = gone.length - waiting.size;
  let removing = true;
  const stats = await writeChildRows(db, {}, ctx, KEYWORDS_PLAN, {
    rows: sending,
    unsent: latest.size - sending.length,
    locked: true,
    stored,
    seen: latest,
    refused: (row) => isRefused(ctx, 'keywords', row.keyword_id),
    removeGone: (live, gone) => {
      removing = ctx.removals?.('keywords', live, gone) ?? true;
      return removing;
    },
  });
  if (removing && ctx.keywordsGone) {
    for (const row of stored) {
      if (
        row.deleted_at === null &&
        !latest.has(row.keyword_id) &&
        !isRefused(ctx, 'keywords', row.keyword_id)
      ) {
        ctx.keywordsGone.add(String(row.keyword_id));
      }
    }
  }
  // Counted moved, not updated.
  if (moved > 0) addCounts(stats, 'keywords', { updated: -moved, moved });
  // Every row sent is new or changed, so one the upsert left unwritten is another
  // business's: the only statement spent on the question is on that path.
  const counts = stats['keywords'];
  const unwritten =
    rows.length - (counts ? counts.inserted + counts.updated + (counts.moved ?? 0) : 0);
  // (`waiting` ones were not sent: unwritten too.)
  const quarantined: QuarantinedRecord[] = [];
  if (unwritten > 0) {
    const owners = await keywordsStoredElsewhere(
      db,
      businessId,
      rows.map((row) => Number(row.keyword_id)),
    );
    for (const [id, owner] of owners) {
      quarantined.push({
        stream: 'keywords',
        location: `keywords ${id}`,
        reason: `keyword ${id} is stored under business ${owner}; business ${businessId}'s answer carries it too`,
        payload: latest.get(id),
      });
    }
    // The upsert counted them unchanged: they are quarantined instead.
    addCounts(stats, 'keywords', { unchanged: -quarantined.length });
  }
  return { stats, quarantined };
}

/** Of `ids`, those whose keyword row another business holds, with that business. */
async function keywordsStoredElsewhere(
  db: Db,
  businessId: number,
  ids: readonly number[],
): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('keywords')
    .select(['keyword_id', 'business_id'])
    .where('keyword_id', 'in', ids)
    .where('business_id', '<>', businessId)
    .orderBy('keyword_id')
    .execute();
  return new Map(rows.map((row) => [Number(row.keyword_id), Number(row.business_id)]));
}

/** How `writeKeywords` upserts and marks gone (bulk-write.ts, `writeChildRows`). */
const KEYWORDS_PLAN: ChildTable<'keywords'> = {
  table: 'keywords',
  key: ['keyword_id'],
  columns: {
    business_id: 'bigint',
    ...columnTypesOf(keywordShape),
    content_hash: 'text',
    first_seen_at: 'timestamptz',
    last_seen_at: 'timestamptz',
    deleted_at: 'timestamptz',
  } satisfies AllColumnTypes<'keywords'>,
  insertOnly: ['first_seen_at'],
  compare: ['content_hash', 'deleted_at'],
  owner: 'business_id',
  takesGone: 'deleted_at',
  id: 'keyword_id',
  stamp: 'deleted_at',
};

/** The keywords stream's entry in `STREAM_WRITERS` (stream-writers.ts): it raises nothing. */
export const keywordsWriter: StreamWriter<'keywords'> = {
  write: async (db, ctx, keywords) => ({
    ...(await writeKeywords(db, ctx, keywords)),
    changes: [],
  }),
  location: (keyword) => `keywords ${keyword.id}`,
  firstSynced: 'keywords_first_synced_at',
  // How `replay --in-place` seeds and merges `keywords`.
  replay: [
    {
      table: 'keywords',
      key: ['keyword_id'],
      owner: 'business_id',
      sharedId: { location: 'keywords' },
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
  ],
};

/**
 * The business a stored keyword belongs to, deleted or not; undefined when the warehouse
 * never stored it: what `listings-sync api keywords delete` syncs again after the
 * upstream deleted the keyword, since the upstream's answer does not say.
 */
export async function businessOfStoredKeyword(
  db: Db,
  keywordId: number,
): Promise<number | undefined> {
  const stored = await db
    .selectFrom('keywords')
    .select('business_id')
    .where('keyword_id', '=', keywordId)
    .executeTakeFirst();
  return stored?.business_id;
}
