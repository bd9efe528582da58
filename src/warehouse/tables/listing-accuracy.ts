/**
 * `listing_accuracy_days`, the read model behind `v_listing_accuracy_daily` and
 * `v_listing_field_accuracy_daily` (docs/warehouse.md, "Read models"): per business and UTC
 * day, its live listings by status and by field flag at the end of that day. Written by the listings writer in the business's transaction.
 *
 * Statuses change only when a sync writes them, so the days between two syncs of a
 * business repeat the earlier one: they are filled in when the later sync writes, from the
 * last stored day (one step back in the primary key). A business whose listings are all
 * gone keeps a row of zeros, so that a later sync does not carry old counts over the days
 * it had none; the view leaves those rows out. A business that never had a listing has no row.
 */
import { sql } from 'kysely';
import { utcDay } from '../../calendar-day.ts';
import type { Db } from '../database.ts';

/**
 * What `v_listing_accuracy_daily` and `v_listing_field_accuracy_daily` count: the live
 * listings by status, and per field the listings whose flag is set (`checked`) and true.
 */
export interface AccuracyCounts {
  listings: number;
  accurate: number;
  inaccurate: number;
  notPresent: number;
  namesChecked: number;
  namesValid: number;
  phonesChecked: number;
  phonesValid: number;
  addressesChecked: number;
  addressesValid: number;
}

/** A live listing as far as the counts go. */
export interface CountedListing {
  status: string;
  nameValid: boolean | null;
  phoneValid: boolean | null;
  addressValid: boolean | null;
}

/** Counts the live listings of a business by status and by field flag. */
export function countStatuses(listings: Iterable<CountedListing>): AccuracyCounts {
  const counts: AccuracyCounts = {
    listings: 0,
    accurate: 0,
    inaccurate: 0,
    notPresent: 0,
    namesChecked: 0,
    namesValid: 0,
    phonesChecked: 0,
    phonesValid: 0,
    addressesChecked: 0,
    addressesValid: 0,
  };
  for (const listing of listings) {
    counts.listings += 1;
    if (listing.status === 'Accurate') counts.accurate += 1;
    else if (listing.status === 'Inaccurate') counts.inaccurate += 1;
    else if (listing.status === 'Not Present') counts.notPresent += 1;
    if (listing.nameValid !== null) {
      counts.namesChecked += 1;
      if (listing.nameValid) counts.namesValid += 1;
    }
    if (listing.phoneValid !== null) {
      counts.phonesChecked += 1;
      if (listing.phoneValid) counts.phonesValid += 1;
    }
    if (listing.addressValid !== null) {
      counts.addressesChecked += 1;
      if (listing.addressValid) counts.addressesValid += 1;
    }
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
      select day, listings, accurate, inaccurate, not_present, names_checked, names_valid,
        phones_checked, phones_valid, addresses_checked, addresses_valid
      from listing_accuracy_days
      where business_id = ${businessId} and day < ${day}::date
      order by day desc limit 1
    ),
    days as (
      select gap::date as day, listings, accurate, inaccurate, not_present, names_checked,
        names_valid, phones_checked, phones_valid, addresses_checked, addresses_valid
      from last_day
      cross join generate_series(last_day.day + 1, ${day}::date - 1, interval '1 day') as gap
      union all
      select ${day}::date, ${counts.listings}::int, ${counts.accurate}::int,
        ${counts.inaccurate}::int, ${counts.notPresent}::int, ${counts.namesChecked}::int,
        ${counts.namesValid}::int, ${counts.phonesChecked}::int, ${counts.phonesValid}::int,
        ${counts.addressesChecked}::int, ${counts.addressesValid}::int
      where ${counts.listings}::int > 0
        or exists (select 1 from listing_accuracy_days where business_id = ${businessId})
    )
    insert into listing_accuracy_days (business_id, day, listings, accurate, inaccurate,
      not_present, names_checked, names_valid, phones_checked, phones_valid, addresses_checked,
      addresses_valid)
    select ${businessId}::bigint, day, listings, accurate, inaccurate, not_present,
      names_checked, names_valid, phones_checked, phones_valid, addresses_checked,
      addresses_valid
    from days
    on conflict (business_id, day) do update set
      listings = excluded.listings, accurate = excluded.accurate,
      inaccurate = excluded.inaccurate, not_present = excluded.not_present,
      names_checked = excluded.names_checked, names_valid = excluded.names_valid,
      phones_checked = excluded.phones_checked, phones_valid = excluded.phones_valid,
      addresses_checked = excluded.addresses_checked, addresses_valid = excluded.addresses_valid
    where (listing_accuracy_days.listings, listing_accuracy_days.accurate,
        listing_accuracy_days.inaccurate, listing_accuracy_days.not_present,
        listing_accuracy_days.names_checked, listing_accuracy_days.names_valid,
        listing_accuracy_days.phones_checked, listing_accuracy_days.phones_valid,
        listing_accuracy_days.addresses_checked, listing_accuracy_days.addresses_valid)
      is distinct from (excluded.listings, excluded.accurate, excluded.inaccurate,
        excluded.not_present, excluded.names_checked, excluded.names_valid,
        excluded.phones_checked, excluded.phones_valid, excluded.addresses_checked,
        excluded.addresses_valid)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
