/**
 * The report's key figures (docs/running.md, "The report"): the listing figures in one
 * pass over `v_listing_accuracy`, the review figures in one pass over `v_review_daily`
 * (docs/warehouse.md, "v_listing_accuracy" and "v_review_daily"), and the accounts and
 * live keywords counted from their tables.
 */
import { sql } from 'kysely';
import type { Db } from '../../warehouse/database.ts';
import { type ReportWindow, reportScope, windowBounds } from './window.ts';

export interface KpiFigures {
  accounts: number;
  /** Live (not archived) businesses in scope: the rows of the scorecard. */
  businesses: number;
  listings: number;
  accurate: number;
  inaccurate: number;
  notPresent: number;
  /** Accurate ÷ (Accurate + Inaccurate), null with nothing to rate. */
  accuracyScore: number | null;
  keywordsTracked: number;
  reviewsInWindow: number;
  averageRatingInWindow: number | null;
}

/**
 * Each view is read once: a year of history makes a second scan cost as much as the
 * first. Undefined only if the database returns no row.
 */
export async function readKpiFigures(
  db: Db,
  window: ReportWindow,
): Promise<KpiFigures | undefined> {
  const scope = reportScope(window.businessId);
  const { windowStart, windowEnd } = windowBounds(window);
  const { rows } = await sql<KpiFigures>`
      with acc as (
        select count(*)::int as businesses,
          coalesce(sum(listings), 0)::int as listings,
          coalesce(sum(accurate), 0)::int as accurate,
          coalesce(sum(inaccurate), 0)::int as inaccurate,
          coalesce(sum(not_present), 0)::int as not_present,
          round(sum(accurate)::numeric / nullif(sum(accurate) + sum(inaccurate), 0), 4) as score
        from v_listing_accuracy a where ${scope('a.business_id')}
      ), rev as (
        select coalesce(sum(new_reviews), 0)::int as reviews,
          round(sum(average_rating * rated_reviews) / nullif(sum(rated_reviews), 0), 2) as rating
        from v_review_daily r
        where r.day between ${windowStart} and ${windowEnd} and ${scope('r.business_id')}
      )
      select
        (select count(*)::int from accounts) as accounts,
        acc.businesses, acc.listings, acc.accurate, acc.inaccurate,
        acc.not_present as "notPresent", acc.score as "accuracyScore",
        (select count(distinct (k.business_id, k.keyword))::int from keywords k
           join businesses b on b.business_id = k.business_id and b.archived_at is null
           where k.deleted_at is null and ${scope('k.business_id')}) as "keywordsTracked",
        rev.reviews as "reviewsInWindow", rev.rating as "averageRatingInWindow"
      from acc, rev
    `.execute(db);
  return rows[0];
}
