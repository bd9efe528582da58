/**
 * The visibility read models' look-ups at a year (docs/warehouse.md, "visibility_days";
 * docs/benchmarks.md, "What each documented view reads"): the same views, the same columns
 * and rows, read in proportion to their window.
 *
 * - `visibility_days` (the view 0033 made of `visibility_months`): each day reaches its
 *   month's rows in a LATERAL subquery keyed by `d.month`, one the planner cannot flatten
 *   (it groups by the primary key, so every row is its own group) but into which a filter
 *   on `business_id` or `site` still goes (a filter on grouping columns): the month rows are
 *   always looked up by `(month)` or `(business_id, month, site)`, for the window's days
 *   only, whatever the statistics. Joined flat, as 0033 left it, the planner costed a hash
 *   join over every month row below those look-ups once `visibility_months` held a year.
 * - `v_location_scorecard` reads its visibility off `visibility_months` by
 *   `(business_id, month)`: the business's latest day and the day 30 before from its month
 *   rows, where 0021's text scanned the calendar back from its end for each business.
 *
 * Both are `create or replace view` with the columns they had, so the grants, comments and
 * views over them stay; `down` puts 0033's `visibility_days` and 0021's scorecard back.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';

/** The figures of a day, in `visibility_days`' column order. */
const FIGURES = [
  'keywords_tracked',
  'keywords_ranked',
  'position_sum',
  'top3',
  'top10',
  'clicks_per_1000',
] as const;

const figures = (f: (column: string) => string) => sql.raw(FIGURES.map(f).join(', '));

/** `visibility_days` through a LATERAL keyed by the calendar's month (see above). */
const VISIBILITY_DAYS_BY_MONTH = sql`
  create or replace view visibility_days as
  select m.business_id, d.observed_on as day, m.site, ${figures((c) => `x.${c}`)}
  from rank_days d
  cross join lateral (
    select m.business_id, m.site, ${figures((c) => `m.${c}`)}
    from visibility_months m
    where m.month = d.month
    group by m.business_id, m.month, m.site
  ) m
  cross join lateral (select ${figures((c) => `m.${c}[d.day] as ${c}`)} offset 0) x
  where x.keywords_tracked is not null`;

/** `visibility_days` as 0033 made it (what `down` puts back). */
const VISIBILITY_DAYS_0033 = sql`
  create or replace view visibility_days as
  select m.business_id, d.observed_on as day, m.site, ${figures((c) => `x.${c}`)}
  from rank_days d
  join visibility_months m on m.month = d.month
  cross join lateral (select ${figures((c) => `m.${c}[d.day] as ${c}`)} offset 0) x
  where x.keywords_tracked is not null`;

/** The first position's clicks per 1,000 searches (migration 0019's curve; docs/warehouse.md). */
const FIRST_POSITION_CLICKS = 300;

/**
 * Migration 0021's scorecard (docs/warehouse.md, "v_location_scorecard"), its visibility
 * (`latest`, `vn`, `month_before`, `vp`: the business's latest day, its visibility then, the
 * latest day 30 or more before it and its visibility then) joined by `visibility`.
 */
function scorecard(visibility: RawBuilder<unknown>): RawBuilder<unknown> {
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
        coalesce(w.reviews_waiting, 0) as reviews_waiting,
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
          and (date_trunc('week', x.reviewed_at at time zone 'UTC')::date)
            >= (date_trunc('week', (now() - interval '90 days') at time zone 'UTC')::date)
      ) r
      left join review_backlog w on w.business_id = b.business_id
      ${visibility}
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

/** The figure's element of a day (`on`, a date) within the month row `m` of month `month`. */
const element = (figure: string, month: string, on: string) =>
  sql.raw(`m.${figure}[${on} - ${month} + 1]`);

/** The visibility of a day (`of`: latest or month_before) summed over the business's sites. */
const visibilityOf = (of: string) => sql`
        select round(100 * sum(${element('clicks_per_1000', `${of}.month`, `${of}.day`)})::numeric
            / (sum(${element('keywords_tracked', `${of}.month`, `${of}.day`)}) * ${sql.lit(FIRST_POSITION_CLICKS)}), 2)
            as visibility_pct
        from visibility_months m
        where m.business_id = b.business_id and m.month = ${sql.raw(of)}.month`;

/**
 * The scorecard's visibility read off the business's month rows by `(business_id, month)`:
 * the latest month's rows (its arrays end at the month's last collected day), then that
 * day's elements; the latest month on or before the day 30 before with a collected day by
 * then, then that day's elements. The same days and sums as through `visibility_days`,
 * where the latest day scanned the calendar back from its end for each business.
 */
const SCORECARD_VISIBILITY_MONTHS = sql`left join lateral (
        select m.month, m.month + (max(cardinality(m.keywords_tracked)) - 1) as day
        from visibility_months m
        where m.business_id = b.business_id
        group by m.month
        order by m.month desc
        limit 1
      ) latest on true
      left join lateral (${visibilityOf('latest')}
      ) vn on true
      left join lateral (
        select m.month, m.month + (max(p.i) - 1) as day
        from visibility_months m
        cross join lateral (
          select max(u.i)::int as i
          from unnest(m.keywords_tracked[1:latest.day - 30 - m.month + 1])
            with ordinality as u(t, i)
          where u.t is not null
        ) p
        where m.business_id = b.business_id and m.month <= latest.day - 30 and p.i is not null
        group by m.month
        order by m.month desc
        limit 1
      ) month_before on true
      left join lateral (${visibilityOf('month_before')}
      ) vp on true`;

/** 0021's visibility of the scorecard, over `visibility_days` (what `down` puts back). */
const SCORECARD_VISIBILITY_DAYS = sql`left join lateral (
        select v.day from visibility_days v where v.business_id = b.business_id
        order by v.day desc limit 1
      ) latest on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${sql.lit(FIRST_POSITION_CLICKS)}), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = latest.day
      ) vn on true
      left join lateral (
        select v.day from visibility_days v
        where v.business_id = b.business_id and v.day <= latest.day - 30
        order by v.day desc limit 1
      ) month_before on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${sql.lit(FIRST_POSITION_CLICKS)}), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = month_before.day
      ) vp on true`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`${VISIBILITY_DAYS_BY_MONTH}`.execute(db);
  await sql`create or replace view v_location_scorecard as ${scorecard(SCORECARD_VISIBILITY_MONTHS)}`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`create or replace view v_location_scorecard as ${scorecard(SCORECARD_VISIBILITY_DAYS)}`.execute(
    db,
  );
  await sql`${VISIBILITY_DAYS_0033}`.execute(db);
}
