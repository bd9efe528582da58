/**
 * Views for BI (docs/warehouse.md, "Views"): rank history and its latest state, listing
 * accuracy now and per day, newly Inaccurate listings with what is wrong, review volume
 * per day and the response SLA. Plain views over the contract tables: nothing to
 * refresh, and a BI tool sees the same rows the sync just committed.
 *
 * Rank semantics: `rank_observations.rank` NULL means searched, not ranked; a day with
 * no row was not collected. The views keep the two apart: they never invent a row for a
 * missing day. Lower rank numbers are better, so a negative change is an improvement.
 *
 * Days are UTC calendar days, as `rank_observations.observed_on` is.
 *
 * Never edit this file once it has landed: add `0004_….ts` (or later) instead.
 */
import { type Kysely, sql } from 'kysely';

/** In dependency order: `down` drops them in reverse. */
const VIEWS = [
  'v_rank_daily',
  'v_rank_latest',
  'v_listing_accuracy',
  'v_listing_accuracy_daily',
  'v_newly_inaccurate',
  'v_review_daily',
  'v_review_response_sla',
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create view v_rank_daily as
    select
      o.business_id,
      o.keyword,
      o.site,
      o.observed_on,
      o.rank,
      o.rank is not null as ranked,
      lag(o.observed_on) over w as previous_observed_on,
      lag(o.rank) over w as previous_rank,
      o.rank - lag(o.rank) over w as rank_change,
      case
        when lag(o.observed_on) over w is null then 'first'
        when o.rank is null and lag(o.rank) over w is null then 'not ranked'
        when lag(o.rank) over w is null then 'entered'
        when o.rank is null then 'dropped'
        when o.rank < lag(o.rank) over w then 'up'
        when o.rank > lag(o.rank) over w then 'down'
        else 'same'
      end as movement
    from rank_observations o
    window w as (partition by o.business_id, o.keyword, o.site order by o.observed_on)
  `.execute(db);

  // The comparison points are the last observation on or before 7 (30) days before the
  // latest one: the rank as it stood then, even when that exact day was not collected.
  await sql`
    create view v_rank_latest as
    with latest as (
      select distinct on (business_id, keyword, site)
        business_id, keyword, site, observed_on, rank, previous_observed_on, previous_rank
      from v_rank_daily
      order by business_id, keyword, site, observed_on desc
    )
    select
      l.business_id,
      l.keyword,
      l.site,
      l.observed_on,
      l.rank,
      l.rank is not null as ranked,
      l.previous_observed_on,
      l.previous_rank,
      w7.observed_on as compared_7d_on,
      w7.rank as rank_7d_ago,
      l.rank - w7.rank as rank_change_7d,
      w30.observed_on as compared_30d_on,
      w30.rank as rank_30d_ago,
      l.rank - w30.rank as rank_change_30d,
      m.best_rank_30d,
      m.worst_rank_30d,
      m.observations_30d,
      m.unranked_days_30d,
      case when l.previous_observed_on is null then null
        else coalesce(l.rank <= 3, false) and not coalesce(l.previous_rank <= 3, false) end
        as entered_top3,
      case when l.previous_observed_on is null then null
        else not coalesce(l.rank <= 3, false) and coalesce(l.previous_rank <= 3, false) end
        as left_top3,
      case when l.previous_observed_on is null then null
        else coalesce(l.rank <= 10, false) and not coalesce(l.previous_rank <= 10, false) end
        as entered_top10,
      case when l.previous_observed_on is null then null
        else not coalesce(l.rank <= 10, false) and coalesce(l.previous_rank <= 10, false) end
        as left_top10
    from latest l
    left join lateral (
      select o.observed_on, o.rank from rank_observations o
      where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
        and o.observed_on <= l.observed_on - 7
      order by o.observed_on desc limit 1
    ) w7 on true
    left join lateral (
      select o.observed_on, o.rank from rank_observations o
      where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
        and o.observed_on <= l.observed_on - 30
      order by o.observed_on desc limit 1
    ) w30 on true
    cross join lateral (
      select
        min(o.rank) as best_rank_30d,
        max(o.rank) as worst_rank_30d,
        count(*)::int as observations_30d,
        (count(*) filter (where o.rank is null))::int as unranked_days_30d
      from rank_observations o
      where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
        and o.observed_on >= l.observed_on - 30
    ) m
  `.execute(db);

  // Accuracy score: Accurate ÷ (Accurate + Inaccurate). Not Present is excluded: a
  // directory without the business is a coverage gap, not wrong data, and counting it
  // would make adding directories look like a loss of accuracy. NULL with nothing to rate.
  await sql`
    create view v_listing_accuracy as
    select
      b.business_id,
      b.name as business_name,
      b.account_name,
      count(l.listing_id)::int as listings,
      (count(*) filter (where l.status = 'Accurate'))::int as accurate,
      (count(*) filter (where l.status = 'Inaccurate'))::int as inaccurate,
      (count(*) filter (where l.status = 'Not Present'))::int as not_present,
      round(
        (count(*) filter (where l.status = 'Accurate'))::numeric
          / nullif(count(*) filter (where l.status in ('Accurate', 'Inaccurate')), 0),
        4
      ) as accuracy_score
    from businesses b
    left join listings l on l.business_id = b.business_id and l.removed_at is null
    where b.archived_at is null
    group by b.business_id, b.name, b.account_name
  `.execute(db);

  // History rows are written on change only, so each day carries every listing's last
  // status forward, from the business's first history day to the last day its account
  // was synced (or the day it was archived). A listing counts until the day it was removed.
  await sql`
    create view v_listing_accuracy_daily as
    with bounds as (
      select
        h.business_id,
        min((h.observed_at at time zone 'UTC')::date) as first_day,
        least(
          greatest(
            max((h.observed_at at time zone 'UTC')::date),
            max((a.last_synced_at at time zone 'UTC')::date)
          ),
          max((b.archived_at at time zone 'UTC')::date)
        ) as last_day
      from listing_status_history h
      join businesses b on b.business_id = h.business_id
      left join accounts a on a.name = b.account_name
      group by h.business_id
    ),
    days as (
      select business_id, generate_series(first_day, last_day, interval '1 day')::date as day
      from bounds
    ),
    states as (
      select d.business_id, d.day, s.status
      from days d
      join listings l on l.business_id = d.business_id
        and (l.removed_at is null or (l.removed_at at time zone 'UTC')::date > d.day)
      cross join lateral (
        select h.status from listing_status_history h
        where h.business_id = l.business_id and h.listing_id = l.listing_id
          and h.observed_at < ((d.day + 1)::timestamp at time zone 'UTC')
        order by h.observed_at desc limit 1
      ) s
    )
    select
      business_id,
      day,
      count(*)::int as listings,
      (count(*) filter (where status = 'Accurate'))::int as accurate,
      (count(*) filter (where status = 'Inaccurate'))::int as inaccurate,
      (count(*) filter (where status = 'Not Present'))::int as not_present,
      round(
        (count(*) filter (where status = 'Accurate'))::numeric
          / nullif(count(*) filter (where status in ('Accurate', 'Inaccurate')), 0),
        4
      ) as accuracy_score
    from states
    group by business_id, day
  `.execute(db);

  // The listing columns are its current state: what is wrong now, and where to look.
  await sql`
    create view v_newly_inaccurate as
    select
      a.alert_id,
      a.detected_at,
      a.delivered_at,
      a.account_name,
      a.business_id,
      b.name as business_name,
      b.city as business_city,
      b.phone as business_phone,
      a.listing_id,
      a.site_name,
      a.previous_status,
      a.status as alerted_status,
      l.status as current_status,
      l.status = 'Inaccurate' and l.removed_at is null as still_inaccurate,
      l.name_valid,
      l.phone_valid,
      l.address_valid,
      nullif(concat_ws(', ',
        case when l.name_valid is false then 'name' end,
        case when l.phone_valid is false then 'phone' end,
        case when l.address_valid is false then 'address' end
      ), '') as wrong_fields,
      l.name as listing_name,
      l.phone as listing_phone,
      concat_ws(', ', l.street, l.city, l.state, l.postal_code) as listing_address,
      l.live_link,
      l.removed_at as listing_removed_at
    from alerts a
    left join businesses b on b.business_id = a.business_id
    left join listings l on l.business_id = a.business_id and l.listing_id = a.listing_id
    where a.kind = 'listing_inaccurate'
  `.execute(db);

  await sql`
    create view v_review_daily as
    with new_reviews as (
      select
        business_id,
        site_name,
        (reviewed_at at time zone 'UTC')::date as day,
        count(*)::int as new_reviews,
        count(rating)::int as rated_reviews,
        round(avg(rating), 2) as average_rating
      from reviews
      where category = 'review' and removed_at is null and reviewed_at is not null
      group by 1, 2, 3
    ),
    responses as (
      select
        r.business_id,
        r.site_name,
        (p.responded_at at time zone 'UTC')::date as day,
        count(*)::int as responses
      from review_responses p
      join reviews r on r.review_id = p.review_id
      where r.category = 'review' and r.removed_at is null and p.removed_at is null
        and p.responded_at is not null
      group by 1, 2, 3
    )
    select
      coalesce(n.business_id, p.business_id) as business_id,
      coalesce(n.site_name, p.site_name) as site_name,
      coalesce(n.day, p.day) as day,
      coalesce(n.new_reviews, 0) as new_reviews,
      coalesce(n.rated_reviews, 0) as rated_reviews,
      n.average_rating,
      coalesce(p.responses, 0) as responses
    from new_reviews n
    full join responses p
      on p.business_id = n.business_id and p.site_name = n.site_name and p.day = n.day
  `.execute(db);

  // Answered: a live response is stored, or the upstream counts one. Ages run to now().
  await sql`
    create view v_review_response_sla as
    with per_review as (
      select
        r.business_id,
        r.site_name,
        r.review_id,
        r.reviewed_at,
        r.can_respond,
        fr.responded_at as first_responded_at,
        fr.responded_at is not null or r.response_count > 0 as answered
      from reviews r
      join businesses b on b.business_id = r.business_id and b.archived_at is null
      left join lateral (
        select min(p.responded_at) as responded_at from review_responses p
        where p.review_id = r.review_id and p.removed_at is null
      ) fr on true
      where r.category = 'review' and r.removed_at is null
    )
    select
      business_id,
      site_name,
      count(*)::int as reviews,
      (count(*) filter (where answered))::int as answered,
      (count(*) filter (where can_respond and not answered))::int as unanswered_answerable,
      min(reviewed_at) filter (where can_respond and not answered) as oldest_unanswered_at,
      round(
        extract(epoch from now() - min(reviewed_at) filter (where can_respond and not answered))
          / 3600, 1
      ) as oldest_unanswered_age_hours,
      round(
        avg(extract(epoch from now() - reviewed_at)) filter (where can_respond and not answered)
          / 3600, 1
      ) as average_unanswered_age_hours,
      (count(*) filter (where first_responded_at is not null and reviewed_at is not null))::int
        as timed_responses,
      round(
        avg(extract(epoch from first_responded_at - reviewed_at)) / 3600, 1
      ) as average_hours_to_first_response,
      round(
        (percentile_cont(0.5) within group (
          order by extract(epoch from first_responded_at - reviewed_at)
        ))::numeric / 3600, 1
      ) as median_hours_to_first_response
    from per_review
    group by business_id, site_name
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const view of [...VIEWS].reverse()) {
    await sql`drop view if exists ${sql.table(view)}`.execute(db);
  }
}
