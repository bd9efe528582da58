/**
 * `v_location_scorecard` reads in proportion to its window, whatever the history's length
 * (docs/warehouse.md, "v_location_scorecard", and docs/benchmarks.md, "Warehouse at a
 * year"):
 *
 * - `review_backlog`: per business, the count of its live reviews still waiting for an
 *   answer (`reviews_waiting`, whatever their age). The reviews writer recomputes it in the
 *   business's transaction whenever it writes that business's reviews or responses
 *   (src/warehouse/tables/reviews.ts); filled here from the stored rows. Counting them in the view
 *   read every waiting review of every business on every query, a backlog that only grows
 *   where reviews go unanswered.
 * - The 90 days' reviews of a business are also bounded on their UTC week (a predicate the
 *   date bound implies, so the rows are the same): whichever of `reviews_business_reviewed_at_idx`
 *   and `reviews_business_week_idx` the planner picks, it reads the 90 days, not the
 *   business's whole review history.
 *
 * The view keeps its columns, types and rows. Never edit this file once it has landed: add
 * a later one instead.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';

/** The first position's clicks per 1,000 searches (migration 0019's curve; docs/warehouse.md). */
const FIRST_POSITION_CLICKS = 300;

/** A live review the API can answer, with no response, stored or upstream. */
const WAITING = sql.raw(`x.category = 'review' and x.removed_at is null and x.can_respond
  and x.response_count = 0
  and not exists (select 1 from review_responses p
    where p.review_id = x.review_id and p.removed_at is null)`);

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('review_backlog')
    .addColumn('business_id', 'bigint', (c) =>
      c.primaryKey().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('reviews_waiting', 'integer', (c) => c.notNull())
    .execute();
  // One row per business with a stored review (social items included: then it counts 0).
  await sql`
    insert into review_backlog (business_id, reviews_waiting)
    select x.business_id, (count(*) filter (where ${WAITING}))::int
    from reviews x
    group by x.business_id
    order by x.business_id`.execute(db);
  await sql`create or replace view v_location_scorecard as ${scorecard(
    sql`left join review_backlog w on w.business_id = b.business_id`,
    sql`coalesce(w.reviews_waiting, 0)`,
    sql`and (date_trunc('week', x.reviewed_at at time zone 'UTC')::date)
          >= (date_trunc('week', (now() - interval '90 days') at time zone 'UTC')::date)`,
  )}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Migration 0019's definition: the waiting reviews counted on every read.
  await sql`create or replace view v_location_scorecard as ${scorecard(
    sql`cross join lateral (
        select count(*)::int as reviews_waiting from reviews x
        where x.business_id = b.business_id and ${WAITING}
      ) w`,
    sql`w.reviews_waiting`,
    sql``,
  )}`.execute(db);
  await db.schema.dropTable('review_backlog').execute();
}

/**
 * The scorecard of docs/warehouse.md, "v_location_scorecard", with the reviews waiting
 * read from `waitingFrom` (a join that gives `w`) as `waiting`, and `recentBound` added to
 * the 90 days' reviews of a business.
 */
function scorecard(
  waitingFrom: RawBuilder<unknown>,
  waiting: RawBuilder<unknown>,
  recentBound: RawBuilder<unknown>,
): RawBuilder<unknown> {
  const perSite = sql.lit(FIRST_POSITION_CLICKS);
  return sql`
    with card as (
      select
        b.business_id,
        b.account_name,
        b.name,
        round(100 * l.accurate::numeric / nullif(l.accurate + l.inaccurate, 0), 1)
          as accuracy_pct,
        l.inaccurate as inaccurate_listings,
        r.avg_rating_90d,
        ${waiting} as reviews_waiting,
        r.median_hours_to_response_90d,
        vn.visibility_pct,
        vn.visibility_pct - vp.visibility_pct as visibility_change_30d
      from businesses b
      cross join lateral (
        select (count(*) filter (where x.status = 'Accurate'))::int as accurate,
          (count(*) filter (where x.status = 'Inaccurate'))::int as inaccurate
        from listings x where x.business_id = b.business_id and x.removed_at is null
      ) l
      cross join lateral (
        select round(avg(x.rating), 2) as avg_rating_90d,
          round(
            (percentile_cont(0.5) within group (
              order by case when fr.responded_at is not null
                then greatest(0, extract(epoch from fr.responded_at - x.reviewed_at)) end
            ))::numeric / 3600,
            1
          ) as median_hours_to_response_90d
        from reviews x
        left join lateral (
          select min(p.responded_at) as responded_at from review_responses p
          where p.review_id = x.review_id and p.removed_at is null
        ) fr on true
        where x.business_id = b.business_id and x.category = 'review' and x.removed_at is null
          and x.reviewed_at >= now() - interval '90 days'
          ${recentBound}
      ) r
      ${waitingFrom}
      left join lateral (
        select v.day from visibility_days v where v.business_id = b.business_id
        order by v.day desc limit 1
      ) latest on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${perSite}), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = latest.day
      ) vn on true
      left join lateral (
        select v.day from visibility_days v
        where v.business_id = b.business_id and v.day <= latest.day - 30
        order by v.day desc limit 1
      ) month_before on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${perSite}), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = month_before.day
      ) vp on true
      where b.archived_at is null
    ),
    scored as (
      select card.*,
        (card.avg_rating_90d - 1) * 25 as rating_points,
        greatest(0, 100 - 10 * card.reviews_waiting) as waiting_points,
        case when card.median_hours_to_response_90d is not null
          then greatest(0, 100 - card.median_hours_to_response_90d * 100 / 168) end
          as response_points
      from card
    )
    select
      business_id,
      account_name,
      name,
      accuracy_pct,
      inaccurate_listings,
      avg_rating_90d,
      reviews_waiting,
      median_hours_to_response_90d,
      visibility_pct,
      visibility_change_30d,
      round(
        (coalesce(35 * accuracy_pct, 0) + coalesce(25 * visibility_pct, 0)
          + coalesce(20 * rating_points, 0) + 10 * waiting_points
          + coalesce(10 * response_points, 0))
        / (case when accuracy_pct is null then 0 else 35 end
          + case when visibility_pct is null then 0 else 25 end
          + case when rating_points is null then 0 else 20 end
          + 10
          + case when response_points is null then 0 else 10 end),
        1
      ) as health_score
    from scored
  `;
}
