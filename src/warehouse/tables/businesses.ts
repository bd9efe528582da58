/**
 * `businesses` and `business_versions`.
 *
 * The profile is the full read (`type=all`). When the full read failed this run, the
 * stored profile is kept and only the summary fields (from the list) refresh. A version
 * row is appended whenever the profile's content hash changes, including the first time
 * a business is seen. An unchanged business is not rewritten at all (a sync with no
 * upstream change writes no row): `last_seen_at` moves only when the row is written, and
 * the `*_first_synced_at` columns are set once, by the first successful read of their
 * stream (the first listings read is the alert baseline).
 */
import { type Selectable, sql } from 'kysely';
import {
  type BusinessFull,
  type BusinessSummary,
  businessShape,
  businessSummaryShape,
  columnTypesOf,
  type RowOf,
  rowOf,
} from '../../api/index.ts';
import { ListingsSyncError } from '../../errors.ts';
import type { Db, Json, TableColumns, Timestamp } from '../database.ts';
import { contentHash } from '../write/content-hash.ts';
import type { BusinessWriteContext, FirstSyncedColumn } from '../write/write-context.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';

/*
 * The tables this module writes, as Kysely sees them (`Database` in database.ts lists
 * them, and names a stored row `BusinessRow`).
 */

/** `businesses`: a profile's columns (`businessShape`, src/api/businesses.ts) and the writer's own. */
export interface BusinessesTable extends TableColumns<typeof businessShape> {
  business_id: number;
  account_name: string;
  content_hash: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  archived_at: Timestamp | null;
  /** Added: when the profile's content hash last changed. */
  profile_changed_at: Timestamp;
  /** Added: the last run whose full read (`type=all`) succeeded; null if none yet. */
  profile_first_read_at: Timestamp | null;
  /** Added: the last run whose listings stream succeeded (the alert baseline). */
  listings_first_synced_at: Timestamp | null;
  reviews_first_synced_at: Timestamp | null;
  rankings_first_synced_at: Timestamp | null;
  keywords_first_synced_at: Timestamp | null;
  /**
   * Added (0006): the category operation 4 answered; the reads never serve it, so a sync
   * leaves it as it is. Null for businesses not created through listings-sync.
   */
  sub_category_name: string | null;
  /**
   * Added (0012): the removals held on a volume drop, per stream (`HeldRemovals` in
   * held-removals.ts, docs/warehouse.md "How removals work"); null when none is held.
   */
  removals_held: Json | null;
}

export interface BusinessVersionsTable {
  business_id: number;
  observed_at: Timestamp;
  content_hash: string;
  /** The profile as stored in `businesses` at that time (snake_case keys). */
  profile: Json;
  run_id: string | null;
}

/** The advisory lock key of a business (with the schema): src/warehouse/runs/sync-lock.ts's keys differ. */
const BUSINESS_LOCK_PREFIX = 'listings-sync:business:';

/**
 * The profile columns of `businesses`: what its content hash covers (`businessShape`'s row;
 * the two jsonb columns hold what the reads give).
 */
export type BusinessProfile = RowOf<typeof businessShape>;

/** The profile from a full read. */
export function businessToProfile(full: BusinessFull): BusinessProfile {
  return rowOf(businessShape, full);
}

/** The profile's columns and what a profile the full read never filled holds in each. */
const PROFILE_EMPTY = Object.entries(columnTypesOf(businessShape)).map(
  ([column, type]) => [column, type === 'jsonb' ? [] : null] as const,
);

/** The stored profile with the list's summary fields laid over it (full read failed). */
export function summaryOverProfile(
  summary: BusinessSummary,
  stored: BusinessRow | undefined,
): BusinessProfile {
  const profile: Record<string, unknown> = {};
  for (const [column, empty] of PROFILE_EMPTY) {
    profile[column] = stored?.[column as keyof BusinessProfile] ?? empty;
  }
  return { ...profile, ...rowOf(businessSummaryShape, summary) } as BusinessProfile;
}

/** The stored row, locked for the rest of the transaction (one writer per business). */
/**
 * Thrown when another transaction held a business's lock past `lock_timeout`: another
 * run (a shard of another count, say) writing the same business for that long.
 */
export class BusinessLockTimeoutError extends ListingsSyncError {
  readonly code = 'BUSINESS_LOCK_TIMEOUT';
  readonly businessId: number;
  constructor(businessId: number, cause: unknown) {
    super(
      `business ${businessId} is being written by another sync run (a shard of another ` +
        'count, or a run beside it), and its lock was not granted within the lock timeout ' +
        '(DATABASE_LOCK_TIMEOUT_MS); it is written by that run, or by the next one',
      { cause },
    );
    this.businessId = businessId;
  }
}

/**
 * Locks one business for the transaction and reads its stored row. First a
 * transaction-level advisory lock on the business id (held to commit or rollback), which
 * covers a business that has no row yet: two runs that can hold the same business (shards
 * of different counts, `--shard 0/2` beside `--shard 0/4`) write it one after the other,
 * and the second sees the first's row, so no version is appended twice. Then the row
 * itself, `for update`. Waits at most `lock_timeout` (DATABASE_LOCK_TIMEOUT_MS), then
 * throws `BusinessLockTimeoutError`.
 */
export async function lockBusiness(db: Db, businessId: number): Promise<BusinessRow | undefined> {
  try {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${BUSINESS_LOCK_PREFIX}${businessId}`}::text || ':' || current_schema(), 0))`.execute(
      db,
    );
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === '55P03') {
      throw new BusinessLockTimeoutError(businessId, error);
    }
    throw error;
  }
  return db
    .selectFrom('businesses')
    .selectAll()
    .where('business_id', '=', businessId)
    .forUpdate()
    .executeTakeFirst();
}

export interface BusinessWrite {
  summary: BusinessSummary;
  full: BusinessFull | null;
  /** The stored row, from `lockBusiness`. */
  stored: BusinessRow | undefined;
  /**
   * Each stream's `*_first_synced_at` column (its writer's, stream-writers.ts), true when
   * the stream was written this run: a column still null is set now.
   */
  synced: Partial<Record<FirstSyncedColumn, boolean>>;
}

/**
 * Whether `writeBusiness` would leave the stored row as it is for a run that wrote no
 * stream and read no profile: the list's summary changes no field, the business is
 * live and under the same credential, and every stream's first read is recorded.
 */
export function summaryLeavesRow(
  stored: BusinessRow,
  summary: BusinessSummary,
  accountName: string,
): boolean {
  return (
    stored.archived_at === null &&
    stored.account_name === accountName &&
    stored.content_hash === contentHash(summaryOverProfile(summary, stored))
  );
}

/** Upserts the business row (clearing archived_at) and appends a version on change. */
export async function writeBusiness(
  db: Db,
  ctx: BusinessWriteContext,
  write: BusinessWrite,
): Promise<WriteStats> {
  const { stored, synced } = write;
  const at = ctx.observedAt;
  const profile = write.full
    ? businessToProfile(write.full)
    : summaryOverProfile(write.summary, stored);
  const hash = contentHash(profile);
  const profileChanged = stored?.content_hash !== hash;
  const row = {
    ...profile,
    additional_categories: JSON.stringify(profile.additional_categories),
    business_hours: JSON.stringify(profile.business_hours),
    business_id: ctx.businessId,
    account_name: ctx.accountName,
    content_hash: hash,
    first_seen_at: stored?.first_seen_at ?? at,
    last_seen_at: at,
    archived_at: null,
    profile_changed_at: profileChanged ? at : (stored?.profile_changed_at ?? at),
    profile_first_read_at: stored?.profile_first_read_at ?? (write.full ? at : null),
  };
  const firstSynced: Partial<Record<FirstSyncedColumn, Date | null>> = {};
  for (const [column, written] of Object.entries(synced) as [FirstSyncedColumn, boolean][]) {
    firstSynced[column] = stored?.[column] ?? (written ? at : null);
  }
  const changed =
    stored !== undefined &&
    (profileChanged || stored.account_name !== ctx.accountName || stored.archived_at !== null);
  const firstReads =
    stored !== undefined &&
    (stored.profile_first_read_at !== row.profile_first_read_at ||
      Object.entries(firstSynced).some(
        ([column, value]) => stored[column as FirstSyncedColumn] !== value,
      ));
  const stats: WriteStats = {};
  addCounts(stats, 'businesses', {
    inserted: stored ? 0 : 1,
    updated: stored && changed ? 1 : 0,
    unchanged: stored && !changed ? 1 : 0,
  });
  if (stored && !changed && !firstReads) {
    addCounts(stats, 'business_versions', { inserted: 0 });
    return stats;
  }
  if (stored && !changed) row.last_seen_at = stored.last_seen_at;
  const { business_id: _key, first_seen_at: _first, ...update } = { ...row, ...firstSynced };
  await db
    .insertInto('businesses')
    .values({ ...row, ...firstSynced })
    .onConflict((oc) => oc.column('business_id').doUpdateSet(update))
    .execute();

  let versions = 0;
  if (profileChanged) {
    const result = await db
      .insertInto('business_versions')
      .values({
        business_id: ctx.businessId,
        observed_at: at,
        content_hash: hash,
        profile: JSON.stringify(profile),
        run_id: ctx.runId,
      })
      .onConflict((oc) => oc.columns(['business_id', 'observed_at']).doNothing())
      .executeTakeFirst();
    versions = Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  addCounts(stats, 'business_versions', { inserted: versions });
  return stats;
}

/**
 * Stores a business's category, `sub_category_name`: the name operation 4 answered, or,
 * after operation 5 changed its `sub_category_id` (whose answer names no category), that
 * id's name in the `sub_categories` reference table, null when it is not known there rather
 * than keeping a category the business no longer has. The reads never serve a category
 * (docs/upstream.md, Fields), so this is the only way in and `writeBusiness` leaves the
 * column alone. False when the business is not stored yet.
 */
export async function recordBusinessCategory(
  db: Db,
  businessId: number,
  category: { name: string | null } | { subCategoryId: number },
): Promise<boolean> {
  const result = await db
    .updateTable('businesses')
    .set({
      sub_category_name:
        'name' in category
          ? category.name
          : (eb) =>
              eb
                .selectFrom('sub_categories')
                .select('name')
                .where('sub_category_id', '=', category.subCategoryId),
    })
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * The business reads as "This business doesn't exist": set archived_at if not yet.
 * Returns whether the row was archived now.
 */
export async function markBusinessMissing(
  db: Db,
  accountName: string,
  businessId: number,
  at: Date,
): Promise<boolean> {
  return (await archiveLiveBusinesses(db, accountName, [businessId], at)) > 0;
}

/**
 * The summaries stored for these businesses of an account, archived or not: what a
 * business is synced under when its list entry cannot be read this run.
 */
export async function storedBusinessSummaries(
  db: Db,
  accountName: string,
  businessIds: readonly number[],
): Promise<BusinessSummary[]> {
  if (businessIds.length === 0) return [];
  const rows = await db
    .selectFrom('businesses')
    .select(['business_id', 'name', 'street', 'city', 'state_name', 'postal_code', 'phone'])
    .where('account_name', '=', accountName)
    .where(sql<boolean>`business_id = any(${[...businessIds]}::bigint[])`)
    .orderBy('business_id')
    .execute();
  return rows.map((row) => ({
    id: Number(row.business_id),
    name: row.name,
    street: row.street,
    city: row.city,
    stateName: row.state_name,
    postalCode: row.postal_code,
    phone: row.phone,
  }));
}

/**
 * The ids of the account's live (not archived) businesses: what its business list is
 * measured against (the volume guard, held-removals.ts).
 */
export async function liveBusinessIds(db: Db, accountName: string): Promise<number[]> {
  const rows = await db
    .selectFrom('businesses')
    .select('business_id')
    .where('account_name', '=', accountName)
    .where('archived_at', 'is', null)
    .orderBy('business_id')
    .execute();
  return rows.map((row) => Number(row.business_id));
}

/**
 * Archives the account's businesses that the list operation no longer returns (`listedIds`:
 * the caller adds the businesses other credentials listed this run, which moved there).
 * With `inScope` (sharding), only businesses this shard owns are considered. The archiving
 * statement itself checks the account: a business another credential wrote between the
 * read of the candidates and the update (moved between accounts, credentials run side by
 * side) is that credential's now, and stays live. A business that reappears is un-archived
 * by its next `writeBusiness`. Returns how many were archived.
 */
export async function archiveMissingBusinesses(
  db: Db,
  accountName: string,
  listedIds: readonly number[],
  at: Date,
  inScope?: (businessId: number) => boolean,
): Promise<number> {
  const candidates = await db
    .selectFrom('businesses')
    .select('business_id')
    .where('account_name', '=', accountName)
    .where('archived_at', 'is', null)
    .where(sql<boolean>`business_id <> all(${[...listedIds]}::bigint[])`)
    .execute();
  const ids = candidates.map((row) => row.business_id).filter((id) => !inScope || inScope(id));
  if (ids.length === 0) return 0;
  return archiveLiveBusinesses(db, accountName, ids, at);
}

/**
 * Archives those of these businesses that are the account's and live, in one statement
 * that checks both (a business another credential has written since is not archived);
 * returns how many were archived now.
 */
async function archiveLiveBusinesses(
  db: Db,
  accountName: string,
  businessIds: readonly number[],
  at: Date,
): Promise<number> {
  const result = await db
    .updateTable('businesses')
    .set({ archived_at: at })
    .where(sql<boolean>`business_id = any(${[...businessIds]}::bigint[])`)
    .where('account_name', '=', accountName)
    .where('archived_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The row shapes read outside this file (a stored row, as Kysely returns it). */
export type BusinessRow = Selectable<BusinessesTable>;

declare module '../database.ts' {
  interface Database {
    businesses: BusinessesTable;
    business_versions: BusinessVersionsTable;
  }
}
