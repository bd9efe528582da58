/**
 * What agencies report, computed in the warehouse (docs/warehouse.md, "Local-SEO views"):
 * visibility per business, site and day; each listing's Inaccurate episodes and their
 * fixes; the accuracy of each listing field per business and day; review velocity per
 * week; and one scorecard row per live business.
 *
 * Read models, so that each view reads what its window holds whatever the history's
 * length (written by the sync in the business's transaction: src/warehouse/tables/visibility.ts,
 * src/warehouse/tables/listing-fixes.ts, src/warehouse/tables/listing-accuracy.ts):
 * - `visibility_days`: per business, site and UTC day, the day's ranks summed (series
 *   observed, ranked, positions, top 3, top 10, click-through points), so a day costs one
 *   row per site instead of one per keyword and site, and the scorecard finds a business's
 *   latest day and the day 30 before it by key.
 * - `listing_fixes`: one row per Inaccurate episode of a listing (when it turned
 *   Inaccurate, when it was fixed, the fix before it), where the view would otherwise walk
 *   every listing's status history.
 * - `listing_accuracy_days` gains per-field counts (listings whose name, phone, address
 *   flag is set, and true). Days stored before this migration keep NULL there: their
 *   flags were not counted then.
 *
 * Review velocity and the scorecard read `reviews` by week and by business through the
 * indexes added here. Never edit this file once it has landed: add a later one instead.
 */
import { type Kysely, sql } from 'kysely';

/**
 * The click-through curve of `visibility_pct` as it stood when this migration filled
 * `visibility_days`: clicks per 1,000 searches at positions 1 to 20, none past 20
 * (src/warehouse/tables/visibility.ts holds the one the sync uses; docs/warehouse.md documents it).
 */
const CLICKS_PER_1000 = [
  300, 150, 100, 70, 50, 40, 30, 25, 20, 18, 15, 13, 11, 10, 9, 8, 7, 6, 5, 4,
];

const CURVE = sql.raw(`'{${CLICKS_PER_1000.join(',')}}'::int[]`);

/** One UTC week, Monday first: the expression the velocity view groups by and its indexes hold. */
const REVIEW_WEEK = sql.raw(`(date_trunc('week', reviewed_at at time zone 'UTC')::date)`);

const VIEWS = [
  'v_visibility_daily',
  'v_listing_fixes',
  'v_listing_field_accuracy_daily',
  'v_review_velocity_weekly',
  'v_location_scorecard',
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('visibility_days')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('day', 'date', (c) => c.notNull())
    .addColumn('site', 'text', (c) => c.notNull())
    .addColumn('keywords_tracked', 'integer', (c) => c.notNull())
    .addColumn('keywords_ranked', 'integer', (c) => c.notNull())
    .addColumn('position_sum', 'integer', (c) => c.notNull())
    .addColumn('top3', 'integer', (c) => c.notNull())
    .addColumn('top10', 'integer', (c) => c.notNull())
    .addColumn('clicks_per_1000', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('visibility_days_pkey', ['business_id', 'day', 'site'])
    .execute();
  // "Every business, the last N days": the day leads.
  await db.schema
    .createIndex('visibility_days_day_idx')
    .on('visibility_days')
    .column('day')
    .execute();

  await db.schema
    .createTable('listing_fixes')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('listing_id', 'bigint', (c) => c.notNull())
    .addColumn('site_name', 'text', (c) => c.notNull())
    .addColumn('turned_inaccurate_at', 'timestamptz', (c) => c.notNull())
    .addColumn('turned_inaccurate_on', 'date', (c) => c.notNull())
    .addColumn('first_seen', 'boolean', (c) => c.notNull())
    .addColumn('fixed_at', 'timestamptz')
    .addColumn('fixed_on', 'date')
    .addColumn('previous_fixed_at', 'timestamptz')
    .addPrimaryKeyConstraint('listing_fixes_pkey', [
      'business_id',
      'listing_id',
      'turned_inaccurate_at',
    ])
    .execute();
  await db.schema
    .createIndex('listing_fixes_turned_inaccurate_on_idx')
    .on('listing_fixes')
    .column('turned_inaccurate_on')
    .execute();
  // Episodes still open, whenever they began: few, and what the scorecard and BI ask for.
  await db.schema
    .createIndex('listing_fixes_open_idx')
    .on('listing_fixes')
    .column('business_id')
    .where(sql.ref('fixed_at'), 'is', null)
    .execute();

  await db.schema
    .alterTable('listing_accuracy_days')
    .addColumn('names_checked', 'integer')
    .addColumn('names_valid', 'integer')
    .addColumn('phones_checked', 'integer')
    .addColumn('phones_valid', 'integer')
    .addColumn('addresses_checked', 'integer')
    .addColumn('addresses_valid', 'integer')
    .execute();

  // Reviews by UTC week, for every business and for one; the reviews still waiting for an
  // answer, which the scorecard counts without reading a business's whole review history.
  await sql`create index reviews_week_idx on reviews (${REVIEW_WEEK})
    where category = 'review' and removed_at is null`.execute(db);
  await sql`create index reviews_business_week_idx on reviews (business_id, ${REVIEW_WEEK})
    where category = 'review' and removed_at is null`.execute(db);
  await sql`create index reviews_waiting_idx on reviews (business_id)
    where category = 'review' and removed_at is null and can_respond and response_count = 0`.execute(
    db,
  );

  // The history this warehouse already holds, with the definitions the sync keeps.
  await sql`
    insert into visibility_days (business_id, day, site, keywords_tracked, keywords_ranked,
      position_sum, top3, top10, clicks_per_1000)
    select s.business_id, h.observed_on, s.site, count(*), count(h.rank),
      sum(coalesce(h.rank, 101)), count(*) filter (where h.rank <= 3),
      count(*) filter (where h.rank <= 10),
      coalesce(sum((${CURVE})[h.rank]), 0)
    from rank_history h
    join rank_series s on s.series_id = h.series_id
    group by s.business_id, h.observed_on, s.site
    order by h.observed_on, s.business_id, s.site`.execute(db);
  // An episode starts at a history row that reads Inaccurate after one that did not (or at
  // the listing's first row), and ends at the next row that does not read Inaccurate.
  await sql`
    insert into listing_fixes (business_id, listing_id, site_name, turned_inaccurate_at,
      turned_inaccurate_on, first_seen, fixed_at, fixed_on, previous_fixed_at)
    select business_id, listing_id, site_name, observed_at,
      (observed_at at time zone 'UTC')::date, first_seen, fixed_at,
      (fixed_at at time zone 'UTC')::date,
      lag(fixed_at) over (partition by business_id, listing_id order by observed_at)
    from (
      select business_id, listing_id, site_name, observed_at, status, first_seen,
        lead(observed_at) over (partition by business_id, listing_id order by observed_at)
          as fixed_at
      from (
        select business_id, listing_id, site_name, observed_at, status,
          lag(status) over w is null as first_seen,
          (status = 'Inaccurate') is distinct from (lag(status) over w = 'Inaccurate')
            as turns
        from listing_status_history
        window w as (partition by business_id, listing_id order by observed_at)
      ) h
      where turns
    ) c
    where status = 'Inaccurate'`.execute(db);

  await createViews(db);
}

async function createViews(db: Kysely<unknown>): Promise<void> {
  // Per site: 100 × the clicks the day's ranks earn ÷ the clicks had every keyword been
  // first (300 per 1,000 searches each).
  await sql`
    create view v_visibility_daily as
    select
      business_id,
      site,
      day,
      keywords_tracked,
      keywords_ranked,
      round(position_sum::numeric / keywords_tracked, 2) as avg_position,
      round(top3::numeric / keywords_tracked, 4) as top3_share,
      round(top10::numeric / keywords_tracked, 4) as top10_share,
      round(100 * clicks_per_1000::numeric / (keywords_tracked * ${sql.lit(CLICKS_PER_1000[0])}), 2)
        as visibility_pct
    from visibility_days
  `.execute(db);

  await sql`
    create view v_listing_fixes as
    select
      business_id,
      listing_id,
      site_name,
      turned_inaccurate_on,
      fixed_on,
      fixed_on - turned_inaccurate_on as days_to_fix,
      coalesce(turned_inaccurate_at - previous_fixed_at <= interval '30 days', false)
        as broken_again,
      turned_inaccurate_at,
      fixed_at,
      previous_fixed_at,
      first_seen as inaccurate_when_first_seen
    from listing_fixes
  `.execute(db);

  // Each flag's share of the listings that carry it (Not Present listings carry none).
  await sql`
    create view v_listing_field_accuracy_daily as
    select
      business_id,
      day,
      names_checked,
      round(names_valid::numeric / nullif(names_checked, 0), 4) as name_valid,
      phones_checked,
      round(phones_valid::numeric / nullif(phones_checked, 0), 4) as phone_valid,
      addresses_checked,
      round(addresses_valid::numeric / nullif(addresses_checked, 0), 4) as address_valid
    from listing_accuracy_days
    where listings > 0 and names_checked is not null
  `.execute(db);

  // A response dated by day only can read earlier than a review timed that same day:
  // such a response counts as immediate (0 hours), not negative. (greatest() skips a
  // NULL, so an unanswered review is kept out of the median by the case, not by it.)
  await sql`
    create view v_review_velocity_weekly as
    select
      r.business_id,
      r.site_name,
      ${REVIEW_WEEK} as week,
      count(*)::int as new_reviews,
      round(avg(r.rating), 2) as avg_rating,
      round(
        (count(*) filter (where fr.responded_at is not null or r.response_count > 0))::numeric
          / count(*),
        4
      ) as responded_share,
      round(
        (percentile_cont(0.5) within group (
          order by case when fr.responded_at is not null
            then greatest(0, extract(epoch from fr.responded_at - r.reviewed_at)) end
        ))::numeric / 3600,
        1
      ) as median_hours_to_response
    from reviews r
    left join lateral (
      select min(p.responded_at) as responded_at from review_responses p
      where p.review_id = r.review_id and p.removed_at is null
    ) fr on true
    where r.category = 'review' and r.removed_at is null and r.reviewed_at is not null
    group by r.business_id, r.site_name, ${REVIEW_WEEK}
  `.execute(db);

  await sql`
    create view v_location_scorecard as
    with card as (
      select
        b.business_id,
        b.account_name,
        b.name,
        round(100 * l.accurate::numeric / nullif(l.accurate + l.inaccurate, 0), 1)
          as accuracy_pct,
        l.inaccurate as inaccurate_listings,
        r.avg_rating_90d,
        w.reviews_waiting,
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
      ) r
      cross join lateral (
        select count(*)::int as reviews_waiting from reviews x
        where x.business_id = b.business_id and x.category = 'review'
          and x.removed_at is null and x.can_respond and x.response_count = 0
          and not exists (select 1 from review_responses p
            where p.review_id = x.review_id and p.removed_at is null)
      ) w
      left join lateral (
        select v.day from visibility_days v where v.business_id = b.business_id
        order by v.day desc limit 1
      ) latest on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${sql.lit(CLICKS_PER_1000[0])}), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = latest.day
      ) vn on true
      left join lateral (
        select v.day from visibility_days v
        where v.business_id = b.business_id and v.day <= latest.day - 30
        order by v.day desc limit 1
      ) month_before on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * ${sql.lit(CLICKS_PER_1000[0])}), 2) as visibility_pct
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
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const view of [...VIEWS].reverse()) {
    await sql`drop view if exists ${sql.table(view)}`.execute(db);
  }
  await sql`drop index if exists reviews_waiting_idx`.execute(db);
  await sql`drop index if exists reviews_business_week_idx`.execute(db);
  await sql`drop index if exists reviews_week_idx`.execute(db);
  await db.schema
    .alterTable('listing_accuracy_days')
    .dropColumn('names_checked')
    .dropColumn('names_valid')
    .dropColumn('phones_checked')
    .dropColumn('phones_valid')
    .dropColumn('addresses_checked')
    .dropColumn('addresses_valid')
    .execute();
  await db.schema.dropTable('listing_fixes').execute();
  await db.schema.dropTable('visibility_days').execute();
}
