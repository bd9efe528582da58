/**
 * Rank history built for years of nights, and read models so that the BI views read what
 * they show instead of every row ever stored (docs/warehouse.md, "Rank history" and
 * "Read models").
 *
 * - `rank_series`: one row per business, keyword and site (with the upstream keyword id
 *   where the keyword resolves). The text keys are stored once here, not on every day.
 * - `rank_history`: one 40-byte heap row per series and UTC day: series id, day, `smallint`
 *   rank (NULL: searched, not ranked; no row: not collected), and the previous observation's
 *   rank and distance in days. Those two fit in the row's alignment padding (a tuple holds a
 *   multiple of 8 bytes: 24 of header, 14 of data), so `v_rank_daily` needs no window
 *   function, and a filter on the day reaches the table. No timestamp and no run id: the
 *   day and `sync_runs` say both. Its primary key `(series_id, observed_on)` is the only
 *   index: every documented query reaches the history through a series and a day range.
 * - `rank_latest`: per series, its latest observation with the previous, 7-day and 30-day
 *   comparisons and the 30-day best, worst and unranked counts (what `v_rank_latest`
 *   returned by sorting the whole history).
 * - `listing_accuracy_days`: per business and day, its live listings by status (what
 *   `v_listing_accuracy_daily` rebuilt from `listing_status_history` on every read).
 *
 * The sync writes the read models in the same per-business transaction as the history
 * (src/warehouse/tables/rankings.ts, src/warehouse/tables/listing-accuracy.ts). This migration fills them
 * from the history it converts, with the definitions of the views it replaces, so every
 * view returns the same rows before and after it.
 *
 * `rank_observations` becomes a view of the same name and meaning (business_id, keyword,
 * site, observed_on, rank). Its `observed_at` and `run_id` columns are gone: `down`
 * restores the table with `observed_at` at the start of the day and no `run_id`.
 *
 * Never edit this file once it has landed: add `0006_….ts` (or later) instead.
 */
import { type Kysely, sql } from 'kysely';
import { up as createBiViewsOf0003, down as dropBiViewsOf0003 } from './0003_bi_views.ts';

/** smallint: what `rank_history.rank` can hold. */
const SMALLINT_MAX = 32767;

export async function up(db: Kysely<unknown>): Promise<void> {
  // A rank the new column cannot hold would fail the copy half-way: refuse with the rule.
  const { rows: outOfRange } = await sql<{ n: number }>`
    select count(*)::int as n from rank_observations
    where rank not between ${-SMALLINT_MAX - 1} and ${SMALLINT_MAX}`.execute(db);
  if ((outOfRange[0]?.n ?? 0) > 0) {
    throw new Error(
      `rank_observations.rank: ${outOfRange[0]?.n} rows hold a rank outside -32768..32767, which rank_history.rank (smallint) cannot store. Fix or delete those rows, then migrate again.`,
    );
  }

  await db.schema
    .createTable('rank_series')
    .addColumn('series_id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('keyword', 'text', (c) => c.notNull())
    .addColumn('site', 'text', (c) => c.notNull())
    // No foreign key: a keyword deleted upstream keeps its rank history.
    .addColumn('keyword_id', 'bigint')
    .addUniqueConstraint('rank_series_business_keyword_site_key', [
      'business_id',
      'keyword',
      'site',
    ])
    .execute();

  await db.schema
    .createTable('rank_history')
    .addColumn('series_id', 'integer', (c) =>
      c.notNull().references('rank_series.series_id').onDelete('cascade'),
    )
    .addColumn('observed_on', 'date', (c) => c.notNull())
    .addColumn('rank', 'smallint')
    .addColumn('previous_rank', 'smallint')
    .addColumn('days_since_previous', 'smallint')
    .addPrimaryKeyConstraint('rank_history_pkey', ['series_id', 'observed_on'])
    .execute();
  // A series' days only grow at its end: a full leaf page is never written again, so it
  // may be packed full (the default leaves 10 % free for inserts that never come).
  await sql`alter index rank_history_pkey set (fillfactor = 100)`.execute(db);
  // "Every series on one day" (all sites' ranks yesterday): nights append in day order, so
  // a block-range index finds a day's pages at a few bytes per thousand rows, where a
  // B-tree on the day would cost as much as the primary key.
  await sql`create index rank_history_observed_on_brin on rank_history
    using brin (observed_on) with (pages_per_range = 16)`.execute(db);

  await db.schema
    .createTable('rank_latest')
    .addColumn('series_id', 'integer', (c) =>
      c.primaryKey().references('rank_series.series_id').onDelete('cascade'),
    )
    .addColumn('observed_on', 'date', (c) => c.notNull())
    .addColumn('rank', 'smallint')
    .addColumn('previous_observed_on', 'date')
    .addColumn('previous_rank', 'smallint')
    .addColumn('compared_7d_on', 'date')
    .addColumn('rank_7d_ago', 'smallint')
    .addColumn('compared_30d_on', 'date')
    .addColumn('rank_30d_ago', 'smallint')
    .addColumn('best_rank_30d', 'smallint')
    .addColumn('worst_rank_30d', 'smallint')
    .addColumn('observations_30d', 'smallint', (c) => c.notNull())
    .addColumn('unranked_days_30d', 'smallint', (c) => c.notNull())
    // The 31 days ending on observed_on, so that the next night computes the columns above
    // from this row alone: bit i of window_collected set when day observed_on - i was
    // collected, window_ranks[i + 1] its rank; before_window_* the latest observation
    // older than the window (the 7- and 30-day comparison when the window has none).
    .addColumn('window_collected', 'integer', (c) => c.notNull())
    .addColumn('window_ranks', sql`smallint[]`, (c) => c.notNull())
    .addColumn('before_window_on', 'date')
    .addColumn('before_window_rank', 'smallint')
    .execute();
  // Every series' row is rewritten every night: half-empty pages let each update stay on
  // its page (a HOT update: no new index entry, the old version pruned in place), so the
  // table stays twice its live size instead of growing between vacuums.
  await sql`alter table rank_latest set (fillfactor = 50)`.execute(db);

  await db.schema
    .createTable('listing_accuracy_days')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('day', 'date', (c) => c.notNull())
    .addColumn('listings', 'integer', (c) => c.notNull())
    .addColumn('accurate', 'integer', (c) => c.notNull())
    .addColumn('inaccurate', 'integer', (c) => c.notNull())
    .addColumn('not_present', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('listing_accuracy_days_pkey', ['business_id', 'day'])
    .execute();
  // "Every business, the last N days": one row per business and day, so the day leads.
  await db.schema
    .createIndex('listing_accuracy_days_day_idx')
    .on('listing_accuracy_days')
    .column('day')
    .execute();

  // The history, series first (in key order), then every day of every series.
  await sql`
    insert into rank_series (business_id, keyword, site, keyword_id)
    select o.business_id, o.keyword, o.site,
      (select min(k.keyword_id) from keywords k
        where k.business_id = o.business_id and k.keyword = o.keyword and k.deleted_at is null)
    from (select distinct business_id, keyword, site from rank_observations) o
    order by o.business_id, o.keyword, o.site`.execute(db);
  await sql`
    insert into rank_history (series_id, observed_on, rank, previous_rank, days_since_previous)
    select s.series_id, o.observed_on, o.rank,
      lag(o.rank) over w, o.observed_on - lag(o.observed_on) over w
    from rank_observations o
    join rank_series s on s.business_id = o.business_id and s.keyword = o.keyword
      and s.site = o.site
    window w as (partition by s.series_id order by o.observed_on)
    order by o.observed_on, s.series_id`.execute(db);

  // The same definitions as the writer's recomputation (src/warehouse/tables/rankings.ts).
  await sql`
    insert into rank_latest (series_id, observed_on, rank, previous_observed_on, previous_rank,
      compared_7d_on, rank_7d_ago, compared_30d_on, rank_30d_ago, best_rank_30d,
      worst_rank_30d, observations_30d, unranked_days_30d, window_collected, window_ranks,
      before_window_on, before_window_rank)
    select s.series_id, l.observed_on, l.rank, l.observed_on - l.days_since_previous,
      l.previous_rank, w7.observed_on, w7.rank, w30.observed_on, w30.rank, m.best, m.worst,
      m.observations, m.unranked, m.collected, wr.ranks, bw.observed_on, bw.rank
    from rank_series s
    cross join lateral (
      select h.observed_on, h.rank, h.previous_rank, h.days_since_previous::int
      from rank_history h where h.series_id = s.series_id
      order by h.observed_on desc limit 1
    ) l
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = s.series_id and h.observed_on <= l.observed_on - 7
      order by h.observed_on desc limit 1
    ) w7 on true
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = s.series_id and h.observed_on <= l.observed_on - 30
      order by h.observed_on desc limit 1
    ) w30 on true
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = s.series_id and h.observed_on < l.observed_on - 30
      order by h.observed_on desc limit 1
    ) bw on true
    cross join lateral (
      select min(h.rank) as best, max(h.rank) as worst, count(*) as observations,
        count(*) filter (where h.rank is null) as unranked,
        sum(1 << (l.observed_on - h.observed_on))::int as collected
      from rank_history h
      where h.series_id = s.series_id and h.observed_on >= l.observed_on - 30
    ) m
    cross join lateral (
      select array_agg(h.rank order by i) as ranks
      from generate_series(0, 30) i
      left join rank_history h on h.series_id = s.series_id and h.observed_on = l.observed_on - i
    ) wr`.execute(db);

  // The old view computes each day; the read model keeps what it computed.
  await sql`
    insert into listing_accuracy_days (business_id, day, listings, accurate, inaccurate, not_present)
    select business_id, day, listings, accurate, inaccurate, not_present
    from v_listing_accuracy_daily
    order by day, business_id`.execute(db);

  await createViews(db);
  await sql`drop table rank_observations`.execute(db);
  await sql`
    create view rank_observations as
    select s.business_id, s.keyword, s.site, h.observed_on, h.rank::int as rank
    from rank_history h
    join rank_series s on s.series_id = h.series_id`.execute(db);
}

/**
 * The views of 0003, reading the new tables: same names, columns and column types, so
 * `create or replace` keeps every object that depends on them.
 */
async function createViews(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace view v_rank_daily as
    select
      s.business_id,
      s.keyword,
      s.site,
      h.observed_on,
      h.rank::int as rank,
      h.rank is not null as ranked,
      h.observed_on - h.days_since_previous::int as previous_observed_on,
      h.previous_rank::int as previous_rank,
      h.rank::int - h.previous_rank as rank_change,
      case
        when h.days_since_previous is null then 'first'
        when h.rank is null and h.previous_rank is null then 'not ranked'
        when h.previous_rank is null then 'entered'
        when h.rank is null then 'dropped'
        when h.rank < h.previous_rank then 'up'
        when h.rank > h.previous_rank then 'down'
        else 'same'
      end as movement
    from rank_history h
    join rank_series s on s.series_id = h.series_id
  `.execute(db);

  await sql`
    create or replace view v_rank_latest as
    select
      s.business_id,
      s.keyword,
      s.site,
      l.observed_on,
      l.rank::int as rank,
      l.rank is not null as ranked,
      l.previous_observed_on,
      l.previous_rank::int as previous_rank,
      l.compared_7d_on,
      l.rank_7d_ago::int as rank_7d_ago,
      l.rank::int - l.rank_7d_ago as rank_change_7d,
      l.compared_30d_on,
      l.rank_30d_ago::int as rank_30d_ago,
      l.rank::int - l.rank_30d_ago as rank_change_30d,
      l.best_rank_30d::int as best_rank_30d,
      l.worst_rank_30d::int as worst_rank_30d,
      l.observations_30d::int as observations_30d,
      l.unranked_days_30d::int as unranked_days_30d,
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
    from rank_latest l
    join rank_series s on s.series_id = l.series_id
  `.execute(db);

  // A business whose listings were all removed keeps zero rows (so that the writer does
  // not carry old counts across the gap); the view shows no day without a listing, as before.
  await sql`
    create or replace view v_listing_accuracy_daily as
    select
      business_id,
      day,
      listings,
      accurate,
      inaccurate,
      not_present,
      round(accurate::numeric / nullif(accurate + inaccurate, 0), 4) as accuracy_score
    from listing_accuracy_days
    where listings > 0
  `.execute(db);

  // One aggregate over both kinds of event: a filter on business_id, site_name or day is a
  // filter on a grouping column, which PostgreSQL pushes into both branches of the union.
  await sql`
    create or replace view v_review_daily as
    select
      business_id,
      site_name,
      day,
      (count(*) filter (where is_review))::int as new_reviews,
      (count(rating) filter (where is_review))::int as rated_reviews,
      round(avg(rating) filter (where is_review), 2) as average_rating,
      (count(*) filter (where not is_review))::int as responses
    from (
      select r.business_id, r.site_name, (r.reviewed_at at time zone 'UTC')::date as day,
        true as is_review, r.rating
      from reviews r
      where r.category = 'review' and r.removed_at is null and r.reviewed_at is not null
      union all
      select r.business_id, r.site_name, (p.responded_at at time zone 'UTC')::date as day,
        false as is_review, null::numeric as rating
      from review_responses p
      join reviews r on r.review_id = p.review_id
      where r.category = 'review' and r.removed_at is null and p.removed_at is null
        and p.responded_at is not null
    ) events
    group by business_id, site_name, day
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The views of 0003 read `rank_observations` as a table: drop them, restore it, recreate.
  await dropBiViewsOf0003(db);
  await sql`drop view rank_observations`.execute(db);
  await db.schema
    .createTable('rank_observations')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('keyword', 'text', (c) => c.notNull())
    .addColumn('site', 'text', (c) => c.notNull())
    .addColumn('observed_on', 'date', (c) => c.notNull())
    .addColumn('rank', 'integer')
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('rank_observations_pkey', [
      'business_id',
      'keyword',
      'site',
      'observed_on',
    ])
    .execute();
  await db.schema
    .createIndex('rank_observations_observed_on_idx')
    .on('rank_observations')
    .columns(['observed_on', 'site'])
    .execute();
  // Every observation comes back; the time of day and the run that wrote it were not kept.
  await sql`
    insert into rank_observations (business_id, keyword, site, observed_on, rank, observed_at)
    select s.business_id, s.keyword, s.site, h.observed_on, h.rank,
      h.observed_on::timestamp at time zone 'UTC'
    from rank_history h
    join rank_series s on s.series_id = h.series_id`.execute(db);
  await db.schema.dropTable('listing_accuracy_days').execute();
  await db.schema.dropTable('rank_latest').execute();
  await db.schema.dropTable('rank_history').execute();
  await db.schema.dropTable('rank_series').execute();
  await createBiViewsOf0003(db);
}
