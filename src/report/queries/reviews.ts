/**
 * The report's review figures: reviews per day from `v_review_daily`, the response SLA per
 * business and site from `v_review_response_sla` (docs/warehouse.md, "v_review_daily" and
 * "v_review_response_sla"), and the reviews waiting for an answer from `reviews` and
 * `review_responses`, the rows of docs/warehouse.md's "Reviews waiting for an answer"
 * (docs/running.md, "The report").
 */
import { sql } from 'kysely';
import type { Db } from '../../warehouse/database.ts';
import {
  type ReportScope,
  type ReportWindow,
  reportScope,
  sumDailyView,
  windowBounds,
} from './window.ts';

export interface ReviewDay {
  day: string;
  newReviews: number;
  averageRating: number | null;
  responses: number;
}

/** New reviews, their average rating and the responses, per day of the window, in day order. */
export function readReviewDays(db: Db, window: ReportWindow): Promise<ReviewDay[]> {
  return sumDailyView<ReviewDay>(
    db,
    window,
    'v_review_daily',
    sql`sum(new_reviews)::int as "newReviews",
        round(sum(average_rating * rated_reviews) / nullif(sum(rated_reviews), 0), 2) as "averageRating",
        sum(responses)::int as responses`,
  );
}

export interface SlaRow {
  businessId: number;
  businessName: string | null;
  siteName: string;
  unansweredAnswerable: number;
  oldestUnansweredAgeHours: number | null;
  medianHoursToFirstResponse: number | null;
}

/**
 * The businesses and sites with reviews waiting for a response, the most waiting first;
 * `limit` rows at most.
 */
export async function readResponseSla(
  db: Db,
  window: ReportWindow,
  limit: number,
): Promise<SlaRow[]> {
  const scope = reportScope(window.businessId);
  const { windowEnd } = windowBounds(window);
  const { rows } = await sql<SlaRow>`
      select s.business_id as "businessId", b.name as "businessName", s.site_name as "siteName",
        s.unanswered_answerable as "unansweredAnswerable",
        -- Age at the end of the window, not at the wall clock: the window ends on the
        -- latest day with data, and a sandbox's (or an old warehouse's) reviews are dated
        -- by its own clock. The view's own column measures against now().
        round((extract(epoch from (${windowEnd} + 1)::timestamp at time zone 'UTC'
          - s.oldest_unanswered_at) / 3600)::numeric, 1) as "oldestUnansweredAgeHours",
        s.median_hours_to_first_response as "medianHoursToFirstResponse"
      from v_review_response_sla s join businesses b on b.business_id = s.business_id
      where s.unanswered_answerable > 0 and ${scope('s.business_id')}
      order by s.unanswered_answerable desc, s.oldest_unanswered_at asc nulls last,
        s.business_id, s.site_name
      limit ${limit}`.execute(db);
  return rows;
}

/**
 * A review nobody has answered (no response stored, none counted upstream), the same rows
 * as the query "Reviews waiting for an answer" in docs/warehouse.md.
 */
export interface AwaitingReviewRow {
  reviewId: string;
  businessId: number;
  businessName: string;
  siteName: string;
  rating: number | null;
  reviewedAt: Date | null;
  /** Hours from `reviewedAt` to the end of the report's window. */
  waitingHours: number | null;
  /** The first 80 characters of the text, whitespace collapsed. */
  excerpt: string;
  permalink: string | null;
  /** Whether operation 9 (`api reviews respond`) can answer it. */
  canRespond: boolean;
}

/**
 * Reviews without a response: none stored and none counted upstream. The same rows as
 * docs/warehouse.md's "Reviews waiting for an answer"; those with `can_respond` are the
 * reviews waiting for a response, counted in the key figures and per business.
 */
function unansweredReviews(scope: ReportScope) {
  return sql`
    from reviews r
    join businesses b on b.business_id = r.business_id and b.archived_at is null
    where r.category = 'review' and r.removed_at is null and r.response_count = 0
      and not exists (select 1 from review_responses p
                      where p.review_id = r.review_id and p.removed_at is null)
      and ${scope('r.business_id')}`;
}

/** Unanswered reviews, longest waiting and then lowest rated first; `limit` rows at most. */
export async function readAwaitingReviews(
  db: Db,
  window: ReportWindow,
  limit: number,
): Promise<AwaitingReviewRow[]> {
  const { windowEnd } = windowBounds(window);
  const { rows } = await sql<AwaitingReviewRow>`
      select r.review_id as "reviewId", r.business_id as "businessId", b.name as "businessName",
        r.site_name as "siteName", r.rating::float8 as rating, r.reviewed_at as "reviewedAt",
        round((extract(epoch from (${windowEnd} + 1)::timestamp at time zone 'UTC'
          - r.reviewed_at) / 3600)::numeric, 1)::float8 as "waitingHours",
        left(regexp_replace(r.content, '\\s+', ' ', 'g'), 80) as excerpt,
        r.permalink, r.can_respond as "canRespond"
      ${unansweredReviews(reportScope(window.businessId))}
      order by (r.reviewed_at at time zone 'UTC')::date asc nulls last, r.rating asc nulls last,
        r.reviewed_at, r.review_id
      limit ${limit}`.execute(db);
  return rows;
}

/** All unanswered reviews in scope, and those of them the API can answer (`can_respond`). */
export async function readAwaitingCounts(
  db: Db,
  window: ReportWindow,
): Promise<{ total: number; answerable: number } | undefined> {
  const { rows } = await sql<{ total: number; answerable: number }>`
      select count(*)::int as total, (count(*) filter (where r.can_respond))::int as answerable
      ${unansweredReviews(reportScope(window.businessId))}`.execute(db);
  return rows[0];
}
