/**
 * `listings` and `listing_status_history`, and which listings turned Inaccurate.
 *
 * One upsert for all listings of a business, guarded by the content hash; a history row
 * for each listing whose status, sync_status, a _valid flag or claimed differs from the
 * stored row (and one for a listing seen for the first time: its starting point); the
 * listings that newly turned Inaccurate, reported as changes (`changes.ts`) for the alert
 * rules; `removed_at` for stored listings that the (successful) stream no longer lists
 * (held instead on a volume drop, held-removals.ts); the
 * day's row of the `listing_accuracy_days` read model (see `listing-accuracy.ts`); and the
 * Inaccurate episodes that open or close, in `listing_fixes` (see `listing-fixes.ts`).
 * Directory usernames and passwords never get here: only `has_site_credentials`.
 */
import { type ColumnType, sql } from 'kysely';
import { columnTypesOf, type Listing, listingShape, rowOf } from '../../api/index.ts';
import type { Db, TableColumns, Timestamp } from '../database.ts';
import { type AllColumnTypes, type BulkRow, seenRow, writeChildRows } from '../write/bulk-write.ts';
import type { Change } from '../write/changes.ts';
import { fieldsHash } from '../write/content-hash.ts';
import {
  day,
  HASH_BEFORE,
  history,
  OF_BUSINESS,
  PER_BUSINESS,
  REMOVED_BEFORE,
  type ReplayTable,
  SEEN_BEFORE,
  setBefore,
  time,
} from '../write/replay-table.ts';
import {
  type BusinessWriteContext,
  isRefused,
  type StreamWriteContext,
  type StreamWriter,
} from '../write/write-context.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';
import { type CountedListing, countStatuses, writeListingAccuracyDay } from './listing-accuracy.ts';
import { type EpisodeOpened, writeListingFixes } from './listing-fixes.ts';

/*
 * The tables this writer writes, as Kysely sees them (`Database` in database.ts lists
 * them; the column helper types are there). `listing_fixes` is written in SQL only
 * (listing-fixes.ts) and has no type.
 */

/** `listings`: a listing's columns (`listingShape`, src/api/listings.ts) and the writer's own. */
export interface ListingsTable extends TableColumns<typeof listingShape> {
  business_id: number;
  content_hash: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  status_changed_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface ListingStatusHistoryTable {
  business_id: number;
  listing_id: number;
  observed_at: Timestamp;
  site_name: string;
  status: string;
  previous_status: string | null;
  sync_status: string | null;
  name_valid: boolean | null;
  phone_valid: boolean | null;
  address_valid: boolean | null;
  claimed: boolean | null;
  run_id: string | null;
}

/** Read model: per business and UTC day, its live listings by status at the end of that day. */
export interface ListingAccuracyDaysTable {
  business_id: number;
  day: ColumnType<string, string, string>;
  listings: number;
  accurate: number;
  inaccurate: number;
  not_present: number;
}

// Its tables in `Database` (database.ts), declared with the writer that writes them.
declare module '../database.ts' {
  interface Database {
    listings: ListingsTable;
    listing_status_history: ListingStatusHistoryTable;
    listing_accuracy_days: ListingAccuracyDaysTable;
  }
}

const INACCURATE = 'Inaccurate';

/** The stored content of a listing: what its content hash covers. */
export function listingToRow(listing: Listing) {
  return rowOf(listingShape, listing);
}

/** The content hash of a listing: its `listingToRow` fields, in that order. */
export function listingContentHash(content: ReturnType<typeof listingToRow>): string {
  return fieldsHash(Object.values(content));
}

/**
 * The fields whose change appends a `listing_status_history` row (and which
 * `replay --in-place` winds a listing back to from its last history row).
 */
export const TRACKED = [
  'status',
  'sync_status',
  'name_valid',
  'phone_valid',
  'address_valid',
  'claimed',
] as const;

export interface ListingsWriteResult {
  stats: WriteStats;
  /** The listings that newly turned Inaccurate (none on the business's first listings sync). */
  changes: Change[];
}

/** The columns of `listings` the upsert writes, with their types: all of them. */
const LISTING_COLUMNS = {
  business_id: 'bigint',
  ...columnTypesOf(listingShape),
  content_hash: 'text',
  first_seen_at: 'timestamptz',
  last_seen_at: 'timestamptz',
  status_changed_at: 'timestamptz',
  removed_at: 'timestamptz',
} as const satisfies AllColumnTypes<'listings'>;

/** A listing whose tracked fields changed: its history row is copied from the upserted row. */
interface StatusChange {
  listingId: number;
  previousStatus: string | null;
}

/** The business's listings as stored: what a read is compared with. */
function storedListings(db: Db, businessId: number) {
  return db
    .selectFrom('listings')
    .select(['listing_id', ...TRACKED, 'status_changed_at', 'content_hash', 'removed_at'])
    .where('business_id', '=', businessId)
    .execute();
}

/**
 * Writes the complete listings of one business (the stream succeeded).
 * `hadSync`: whether the business already had a completed listings sync; on its
 * first one the stored state is the baseline and nothing is alerted.
 *
 * Only new and changed listings are sent: a listing whose stored content hash matches and
 * that is not marked removed counts as unchanged without travelling to the database.
 */
export async function writeListings(
  db: Db,
  ctx: StreamWriteContext,
  listings: readonly Listing[],
): Promise<ListingsWriteResult> {
  const { businessId, observedAt } = ctx;
  const stored = ctx.newBusiness ? [] : await storedListings(db, businessId);
  const previous = new Map(stored.map((row) => [row.listing_id, row]));

  const latest = new Map(listings.map((listing) => [listing.id, listing]));
  const rows: BulkRow<'listings'>[] = [];
  const statusChanges: StatusChange[] = [];
  const changes: (Change & { type: 'listing_turned_inaccurate' })[] = [];
  const opened: EpisodeOpened[] = [];
  const closed: number[] = [];
  let unchanged = 0;
  for (const listing of latest.values()) {
    const content = listingToRow(listing);
    const hash = listingContentHash(content);
    const before = previous.get(listing.id);
    if (before && before.content_hash === hash && before.removed_at === null) {
      unchanged += 1;
      continue;
    }
    rows.push({
      ...seenRow(content, businessId, hash, observedAt),
      status_changed_at:
        before && before.status === listing.status ? before.status_changed_at : observedAt,
      removed_at: null,
    });
    if (!before || TRACKED.some((field) => before[field] !== content[field])) {
      statusChanges.push({ listingId: listing.id, previousStatus: before?.status ?? null });
    }
    if (listing.status === INACCURATE && before?.status !== INACCURATE) {
      opened.push({ listingId: listing.id, siteName: listing.siteName, firstSeen: !before });
    } else if (listing.status !== INACCURATE && before?.status === INACCURATE) {
      closed.push(listing.id);
    }
    const newlyInaccurate =
      listing.status === INACCURATE && (before ? before.status !== INACCURATE : ctx.hadSync);
    if (newlyInaccurate) {
      changes.push({
        type: 'listing_turned_inaccurate',
        accountName: ctx.accountName,
        businessId,
        listingId: listing.id,
        siteName: listing.siteName,
        previousStatus: before?.status ?? null,
        previousStatusSince: before?.status_changed_at ?? null,
        status: listing.status,
        detectedAt: observedAt,
        runId: ctx.runId,
        lastFixedAt: null,
      });
    }
  }

  // Whether the read is a volume drop whose removals are held (held-removals.ts).
  let held = false;
  const stats = await writeChildRows(
    db,
    {},
    ctx,
    {
      table: 'listings',
      key: ['business_id', 'listing_id'],
      columns: LISTING_COLUMNS,
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'removed_at'],
      id: 'listing_id',
      stamp: 'removed_at',
    },
    {
      rows,
      unsent: unchanged,
      stored,
      seen: latest,
      refused: (row) => isRefused(ctx, 'listings', row.listing_id),
      removeGone: (live, gone) => {
        held = !(ctx.removals?.('listings', live, gone) ?? true);
        return !held;
      },
    },
  );

  const historyInserted = await appendStatusHistory(db, ctx, statusChanges);
  addCounts(stats, 'listing_status_history', { inserted: historyInserted });
  const previousFix = await writeListingFixes(db, businessId, observedAt, opened, closed);
  for (const change of changes) change.lastFixedAt = previousFix.get(change.listingId) ?? null;

  // The live listings after this write are the business's listings at the end of the day;
  // on a held drop, the listings it kept live count too (BI's accuracy must not drop).
  const live: CountedListing[] = [...latest.values()];
  if (held) {
    for (const row of stored) {
      if (row.removed_at === null && !latest.has(row.listing_id)) {
        live.push({
          status: row.status,
          nameValid: row.name_valid,
          phoneValid: row.phone_valid,
          addressValid: row.address_valid,
        });
      }
    }
  }
  await writeListingAccuracyDay(db, businessId, observedAt, countStatuses(live));
  return { stats, changes };
}

/** How `replay --in-place` seeds and merges the listings' tables (`StreamWriter.replay`). */
const LISTINGS_REPLAY: readonly ReplayTable[] = [
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
];

/** The listings stream's entry in `STREAM_WRITERS` (stream-writers.ts). */
export const listingsWriter: StreamWriter<'listings'> = {
  write: writeListings,
  location: (listing) => `listings ${listing.id}`,
  // The alert baseline: a business's first listings read raises nothing.
  firstSynced: 'listings_first_synced_at',
  // Its stats have always counted alerts, 0 included.
  countsAlerts: true,
  replay: LISTINGS_REPLAY,
};

/**
 * One `listing_status_history` row per changed listing, copied from the listing row just
 * upserted in this transaction, so the listing's fields are not sent a second time: only
 * its id and previous status travel. A business stored for the first time has no listing,
 * so no history row to collide with: a plain insert, without the conflict check per row.
 */
async function appendStatusHistory(
  db: Db,
  ctx: BusinessWriteContext,
  changes: readonly StatusChange[],
): Promise<number> {
  if (changes.length === 0) return 0;
  const result = await sql`
    insert into listing_status_history (business_id, listing_id, observed_at, site_name,
      status, previous_status, sync_status, name_valid, phone_valid, address_valid, claimed,
      run_id)
    select l.business_id, l.listing_id, ${ctx.observedAt}::timestamptz, l.site_name,
      l.status, changed.previous_status, l.sync_status, l.name_valid, l.phone_valid,
      l.address_valid, l.claimed, ${ctx.runId}::uuid
    from unnest(${changes.map((c) => c.listingId)}::bigint[],
      ${changes.map((c) => c.previousStatus)}::text[]) as changed(listing_id, previous_status)
    join listings l on l.business_id = ${ctx.businessId} and l.listing_id = changed.listing_id
    ${ctx.newBusiness ? sql`` : sql`on conflict (business_id, listing_id, observed_at) do nothing`}`.execute(
    db,
  );
  return Number(result.numAffectedRows ?? 0);
}
