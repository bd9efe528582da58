/**
 * The report's listing figures: accuracy per day from `v_listing_accuracy_daily`, and the
 * listings that turned Inaccurate in the window from `v_newly_inaccurate` (docs/warehouse.md,
 * "v_listing_accuracy_daily" and "v_newly_inaccurate"; docs/running.md, "The report").
 */
import { sql } from 'kysely';
import type { Db } from '../../warehouse/database.ts';
import { type ReportWindow, reportScope, sumDailyView, windowBounds } from './window.ts';

export interface AccuracyDay {
  day: string;
  accurate: number;
  inaccurate: number;
  notPresent: number;
  accuracyScore: number | null;
}

/** Listings by accuracy status, per day of the window, in day order. */
export function readAccuracyDays(db: Db, window: ReportWindow): Promise<AccuracyDay[]> {
  return sumDailyView<AccuracyDay>(
    db,
    window,
    'v_listing_accuracy_daily',
    sql`sum(accurate)::int as accurate, sum(inaccurate)::int as inaccurate,
        sum(not_present)::int as "notPresent",
        round(sum(accurate)::numeric / nullif(sum(accurate) + sum(inaccurate), 0), 4) as "accuracyScore"`,
  );
}

export interface NewlyInaccurateRow {
  detectedAt: Date;
  businessId: number;
  businessName: string | null;
  siteName: string | null;
  previousStatus: string | null;
  currentStatus: string | null;
  wrongFields: string | null;
  liveLink: string | null;
}

/** The `listing_inaccurate` alerts of live businesses detected in the window (a UTC day). */
function turnedInWindow(window: ReportWindow) {
  const scope = reportScope(window.businessId);
  const { windowStart, windowEnd } = windowBounds(window);
  return sql`
    from v_newly_inaccurate n
    join businesses b on b.business_id = n.business_id and b.archived_at is null
    where (n.detected_at at time zone 'UTC')::date between ${windowStart} and ${windowEnd}
      and ${scope('n.business_id')}`;
}

/**
 * One row per listing that turned Inaccurate in the window, its latest turn (a listing
 * that turned twice is one listing), latest first; `limit` rows at most.
 */
export async function readNewlyInaccurate(
  db: Db,
  window: ReportWindow,
  limit: number,
): Promise<(NewlyInaccurateRow & { alert_id: string })[]> {
  const { rows } = await sql<NewlyInaccurateRow & { alert_id: string }>`
      select * from (
        select distinct on (n.business_id, n.listing_id)
          n.detected_at as "detectedAt", n.business_id as "businessId",
          n.business_name as "businessName", n.site_name as "siteName",
          n.previous_status as "previousStatus", n.current_status as "currentStatus",
          n.wrong_fields as "wrongFields", n.live_link as "liveLink", n.alert_id
        ${turnedInWindow(window)}
        order by n.business_id, n.listing_id, n.detected_at desc, n.alert_id desc
      ) latest
      order by "detectedAt" desc, alert_id desc
      limit ${limit}`.execute(db);
  return rows;
}

/**
 * The listings that turned Inaccurate in the window, their turns, and those of them
 * Inaccurate now as `v_listing_accuracy` counts it: a live listing of a live business.
 */
export async function readTurnedInaccurateCounts(
  db: Db,
  window: ReportWindow,
): Promise<{ listings: number; turns: number; stillInaccurate: number } | undefined> {
  const { rows } = await sql<{ listings: number; turns: number; stillInaccurate: number }>`
      select count(distinct (n.business_id, n.listing_id))::int as listings,
        count(*)::int as turns,
        count(distinct (n.business_id, n.listing_id))
          filter (where n.still_inaccurate and n.listing_removed_at is null)::int as "stillInaccurate"
      ${turnedInWindow(window)}`.execute(db);
  return rows[0];
}
