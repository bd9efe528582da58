/**
 * `listing_accuracy_days`, the read model behind `v_listing_accuracy_daily`
 * (docs/warehouse.md, "Read models"): per business and UTC day, its live listings by status
 * at the end of that day. Written by the listings writer in the business's transaction.
 *
 * Statuses change only when a sync writes them, so the days between two syncs of a
 * business repeat the earlier one: they are filled in when the later sync writes, from the
 * last stored day (one step back in the primary key). A business whose listings are all
 * gone keeps a row of zeros, so that a later sync does not carry old counts over the days
 * it had none; the view leaves those rows out. A business that never had a listing has no row.
 */
import { sql } from 'kysely';
import { utcDay } from '../calendar-day.ts';
import type { Db } from './database.ts';

/** The statuses `v_listing_accuracy_daily` counts. */
export interface AccuracyCounts {
  listings: number;
  accurate: number;
  inaccurate: number;
  notPresent: number;
}

/** Counts the live listings of a business by status. */
export function countStatuses(statuses: Iterable<string>): AccuracyCounts {
  const counts: AccuracyCounts = { listings: 0, accurate: 0, inaccurate: 0, notPresent: 0 };
  for (const status of statuses) {
    counts.listings += 1;
    if (status === 'Accurate') counts.accurate += 1;
    else if (status === 'Inaccurate') counts.inaccurate += 1;
    else if (status === 'Not Present') counts.notPresent += 1;
  }
  return counts;
}

/**
 * Stores the business's counts for the day of `observedAt`, and the days since its last
 * stored day. One statement; rewrites nothing that is already as stored. Returns the
 * number of rows written.
 */
export async function writeListingAccuracyDay(
  db: Db,
  businessId: number,
  observedAt: Date,
  counts: AccuracyCounts,
): Promise<number> {
  const day = utcDay(observedAt);
  const result = await sql`
    with last_day as (
      select day, listings, accurate, inaccurate, not_present from listing_accuracy_days
      where business_id = ${businessId} and day < ${day}::date
      order by day desc limit 1
    ),
    days as (
      select gap::date as day, listings, accurate, inaccurate, not_present
      from last_day
      cross join generate_series(last_day.day + 1, ${day}::date - 1, interval '1 day') as gap
      union all
      select ${day}::date, ${counts.listings}::int, ${counts.accurate}::int,
        ${counts.inaccurate}::int, ${counts.notPresent}::int
      where ${counts.listings}::int > 0
        or exists (select 1 from listing_accuracy_days where business_id = ${businessId})
    )
    insert into listing_accuracy_days (business_id, day, listings, accurate, inaccurate,
      not_present)
    select ${businessId}::bigint, day, listings, accurate, inaccurate, not_present from days
    on conflict (business_id, day) do update set
      listings = excluded.listings, accurate = excluded.accurate,
      inaccurate = excluded.inaccurate, not_present = excluded.not_present
    where (listing_accuracy_days.listings, listing_accuracy_days.accurate,
        listing_accuracy_days.inaccurate, listing_accuracy_days.not_present)
      is distinct from (excluded.listings, excluded.accurate, excluded.inaccurate,
        excluded.not_present)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
