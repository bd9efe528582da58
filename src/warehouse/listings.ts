/**
 * `listings`, `listing_status_history` and the `alerts` they raise.
 *
 * One upsert for all listings of a business, guarded by the content hash; a history row
 * for each listing whose status, sync_status, a _valid flag or claimed differs from the
 * stored row (and one for a listing seen for the first time: its starting point); an
 * alert for each listing that newly turned Inaccurate (see `alerts.ts`); and
 * `removed_at` for stored listings that the (successful) stream no longer lists.
 * Directory usernames and passwords never get here: only `has_site_credentials`.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Listing } from '../api/types.ts';
import { type ListingInaccurateAlert, raiseListingAlerts } from './alerts.ts';
import { type BulkRow, insertRows, upsertRows } from './bulk-write.ts';
import { contentHash } from './content-hash.ts';
import type { Database } from './database.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

type Db = Kysely<Database> | Transaction<Database>;

const INACCURATE = 'Inaccurate';

/** The stored content of a listing: what its content hash covers. */
export function listingToRow(listing: Listing) {
  return {
    listing_id: listing.id,
    site_name: listing.siteName,
    status: listing.status,
    sync_status: listing.syncStatus,
    order_status: listing.orderStatus,
    name: listing.name,
    name_valid: listing.nameValid,
    phone: listing.phone,
    phone_valid: listing.phoneValid,
    street: listing.street,
    city: listing.city,
    state: listing.state,
    postal_code: listing.postalCode,
    address_valid: listing.addressValid,
    live_link: listing.liveLink,
    claimed: listing.claimed,
    has_site_credentials: listing.hasSiteCredentials,
  };
}

/** The fields whose change appends a `listing_status_history` row. */
const TRACKED = [
  'status',
  'sync_status',
  'name_valid',
  'phone_valid',
  'address_valid',
  'claimed',
] as const;

export interface ListingsWriteResult {
  stats: WriteStats;
  alerts: number;
}

/**
 * Writes the complete listings of one business (the stream succeeded).
 * `hadListingsSync`: whether the business already had a completed listings sync; on its
 * first one the stored state is the baseline and nothing is alerted.
 */
export async function writeListings(
  db: Db,
  ctx: BusinessWriteContext & { hadListingsSync: boolean },
  listings: readonly Listing[],
): Promise<ListingsWriteResult> {
  const { businessId, observedAt } = ctx;
  const stored = await db
    .selectFrom('listings')
    .select([
      'listing_id',
      'status',
      'sync_status',
      'name_valid',
      'phone_valid',
      'address_valid',
      'claimed',
      'status_changed_at',
    ])
    .where('business_id', '=', businessId)
    .execute();
  const previous = new Map(stored.map((row) => [row.listing_id, row]));

  const latest = new Map(listings.map((listing) => [listing.id, listing]));
  const rows: BulkRow<'listings'>[] = [];
  const history: BulkRow<'listing_status_history'>[] = [];
  const alerts: ListingInaccurateAlert[] = [];
  for (const listing of latest.values()) {
    const content = listingToRow(listing);
    const before = previous.get(listing.id);
    rows.push({
      business_id: businessId,
      ...content,
      content_hash: contentHash(content),
      first_seen_at: observedAt,
      last_seen_at: observedAt,
      status_changed_at:
        before && before.status === listing.status ? before.status_changed_at : observedAt,
      removed_at: null,
    });
    if (!before || TRACKED.some((field) => before[field] !== content[field])) {
      history.push({
        business_id: businessId,
        listing_id: listing.id,
        observed_at: observedAt,
        site_name: listing.siteName,
        status: listing.status,
        previous_status: before?.status ?? null,
        sync_status: listing.syncStatus,
        name_valid: listing.nameValid,
        phone_valid: listing.phoneValid,
        address_valid: listing.addressValid,
        claimed: listing.claimed,
        run_id: ctx.runId,
      });
    }
    const newlyInaccurate =
      listing.status === INACCURATE &&
      (before ? before.status !== INACCURATE : ctx.hadListingsSync);
    if (newlyInaccurate) {
      alerts.push({
        accountName: ctx.accountName,
        businessId,
        listingId: listing.id,
        siteName: listing.siteName,
        previousStatus: before?.status ?? null,
        previousStatusSince: before?.status_changed_at ?? null,
        status: listing.status,
        detectedAt: observedAt,
        runId: ctx.runId,
      });
    }
  }

  const stats: WriteStats = {};
  const upserted = await upsertRows(
    db,
    {
      table: 'listings',
      key: ['business_id', 'listing_id'],
      columns: [
        'business_id',
        'listing_id',
        'site_name',
        'status',
        'sync_status',
        'order_status',
        'name',
        'name_valid',
        'phone',
        'phone_valid',
        'street',
        'city',
        'state',
        'postal_code',
        'address_valid',
        'live_link',
        'claimed',
        'has_site_credentials',
        'content_hash',
        'first_seen_at',
        'last_seen_at',
        'status_changed_at',
        'removed_at',
      ],
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'removed_at'],
    },
    rows,
  );
  const removed = await sql`
    update listings set removed_at = ${observedAt}
    where business_id = ${businessId} and removed_at is null
      and listing_id <> all(${[...latest.keys()]}::bigint[])`.execute(db);
  addCounts(stats, 'listings', {
    inserted: upserted.inserted,
    updated: upserted.updated,
    unchanged: upserted.unchanged,
    deleted: Number(removed.numAffectedRows ?? 0),
  });

  const historyInserted = await insertRows(
    db,
    'listing_status_history',
    [
      'business_id',
      'listing_id',
      'observed_at',
      'site_name',
      'status',
      'previous_status',
      'sync_status',
      'name_valid',
      'phone_valid',
      'address_valid',
      'claimed',
      'run_id',
    ],
    history,
    ['business_id', 'listing_id', 'observed_at'],
  );
  addCounts(stats, 'listing_status_history', { inserted: historyInserted });

  const raised = await raiseListingAlerts(db, alerts);
  addCounts(stats, 'alerts', { inserted: raised });
  return { stats, alerts: raised };
}
