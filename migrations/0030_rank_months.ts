/**
 * Rank history packed by month (docs/warehouse.md, "Rank history"): `rank_months` holds one
 * row per series and UTC month, its days' ranks in one `smallint[]` indexed by day of month
 * (NULL: not collected; -1: searched, not ranked), with the series' last observation before
 * the month. A night rewrites only the current month's row of each series it ranks, where
 * `rank_history` added a 40-byte heap row and a primary-key entry per observation.
 * `rank_days` is the calendar the views read days from (one row per day of each month
 * stored), so that a day or a range of days stays an index condition.
 *
 * `rank_history` becomes a view of the same name, columns, types and rows (the previous
 * observation computed within the month row, or carried in from the month before), so
 * `v_rank_daily` and `rank_observations` keep their definitions' meaning and every view
 * returns the same rows. The history moves in batches of series (`moveRankHistory`), each
 * statement bounded; a batch already moved is skipped, so the move can run again.
 * `down` moves the months back to one row per day the same way.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/** Series per statement of the move (a year of a series is 12 month rows, 365 day rows). */
export const MOVE_BATCH_SERIES = 2000;

/**
 * The ranks of `rank_months` per day: the view that replaces the table `rank_history`.
 * Each day comes from the calendar `rank_days`, so that a filter on `observed_on` is a
 * filter on a table's column: a day (or a range) reaches the calendar's key, and from it
 * the month rows by `rank_months_month_idx` or by `(series_id, month)`. The previous
 * observation is the row's last collected day before this one, else the one it carries in.
 */
const RANK_HISTORY_VIEW = sql`
  create view rank_history as
  select m.series_id, d.observed_on, nullif(m.ranks[d.day], -1::smallint) as rank,
    case when p.i is null then m.previous_rank
      else nullif(m.ranks[p.i], -1::smallint) end as previous_rank,
    (d.observed_on - case when p.i is null then m.previous_on
      else m.month + (p.i - 1) end)::smallint as days_since_previous
  from rank_days d
  join rank_months m on m.month = d.month
  cross join lateral (
    select max(u.i)::int as i
    from unnest(m.ranks[1:d.day - 1]) with ordinality as u(r, i)
    where u.r is not null
  ) p
  where m.ranks[d.day] is not null`;

/** 0005's `rank_observations`, read straight off the months (no previous observation needed). */
const RANK_OBSERVATIONS_VIEW = sql`
  create view rank_observations as
  select s.business_id, s.keyword, s.site, d.observed_on,
    nullif(m.ranks[d.day], -1::smallint)::int as rank
  from rank_days d
  join rank_months m on m.month = d.month
  join rank_series s on s.series_id = m.series_id
  where m.ranks[d.day] is not null`;

/** 0005's `rank_observations` over the table. */
const RANK_OBSERVATIONS_TABLE_VIEW = sql`
  create view rank_observations as
  select s.business_id, s.keyword, s.site, h.observed_on, h.rank::int as rank
  from rank_history h
  join rank_series s on s.series_id = h.series_id`;

/** 0005's `v_rank_daily`, unchanged: it reads `rank_history`, a table before 0030, a view after. */
const RANK_DAILY_VIEW = sql`
  create view v_rank_daily as
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
  join rank_series s on s.series_id = h.series_id`;

/** 0013's cascade from `rank_series`, over the table that holds the history. */
function cascadeFunction(history: 'rank_months' | 'rank_history') {
  return sql.raw(`create or replace function rank_series_delete_observations() returns trigger
    language plpgsql as $$
    begin
      delete from ${history} c using gone where c.series_id = gone.series_id;
      delete from rank_latest c using gone where c.series_id = gone.series_id;
      return null;
    end $$`);
}

/** The highest series id, the end of the batches. */
async function lastSeries(db: Kysely<unknown>): Promise<number> {
  const { rows } = await sql<{ n: number | null }>`
    select max(series_id) as n from rank_series`.execute(db);
  return rows[0]?.n ?? 0;
}

/**
 * Moves the day rows of `rank_history` (the table) into `rank_months`, `batch` series per
 * statement. A series' month already moved is left as it is (`on conflict do nothing`), so
 * a second call moves only what the first did not. The first day of each month carries
 * its stored previous observation into the month row.
 */
export async function moveRankHistory(
  db: Kysely<unknown>,
  from = 'rank_history',
  batch = MOVE_BATCH_SERIES,
): Promise<void> {
  const last = await lastSeries(db);
  for (let first = 0; first <= last; first += batch) {
    await sql`
      insert into rank_months (series_id, month, ranks, previous_on, previous_rank)
      select b.series_id, b.month,
        (select array_agg(u.r order by g)
          from generate_series(1, b.days[array_upper(b.days, 1)]) g
          left join unnest(b.days, b.ranks) as u(d, r) on u.d = g)::smallint[],
        f.observed_on - f.days_since_previous::int, f.previous_rank
      from (
        select h.series_id, date_trunc('month', h.observed_on)::date as month,
          array_agg(extract(day from h.observed_on)::int order by h.observed_on) as days,
          array_agg(coalesce(h.rank, -1) order by h.observed_on) as ranks,
          min(h.observed_on) as first_on
        from ${sql.table(from)} h
        where h.series_id >= ${first} and h.series_id < ${first + batch}
        group by 1, 2
      ) b
      join ${sql.table(from)} f on f.series_id = b.series_id and f.observed_on = b.first_on
      order by b.series_id, b.month
      on conflict (series_id, month) do nothing`.execute(db);
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rank_months')
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('month', 'date', (c) => c.notNull())
    // Index d: day d of the month. NULL: not collected; -1: searched, not ranked.
    .addColumn('ranks', sql`smallint[]`, (c) => c.notNull())
    // The series' last observation before the month; NULL: none (previous_rank NULL too).
    .addColumn('previous_on', 'date')
    .addColumn('previous_rank', 'smallint')
    .addPrimaryKeyConstraint('rank_months_pkey', ['series_id', 'month'])
    .execute();
  // Only the current month's rows are rewritten (once a night each); room on their page
  // keeps that rewrite in place (a HOT update: no new primary-key entry).
  await sql`alter table rank_months set (fillfactor = 90)`.execute(db);
  // "Every series on one day" (all sites' ranks yesterday): the month's rows.
  await sql`create index rank_months_month_idx on rank_months (month)`.execute(db);
  // The calendar the views read days from: every day of every month a row exists for
  // (the rankings writer adds a month's days when it may start the month's rows).
  await db.schema
    .createTable('rank_days')
    .addColumn('observed_on', 'date', (c) => c.primaryKey())
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('day', 'smallint', (c) => c.notNull())
    .execute();

  await moveRankHistory(db);
  await sql`
    insert into rank_days (observed_on, month, day)
    select g::date, m.month, extract(day from g)::smallint
    from (select distinct month from rank_months) m,
      generate_series(m.month, m.month + interval '1 month' - interval '1 day', interval '1 day') g
    order by 1
    on conflict (observed_on) do nothing`.execute(db);

  await sql`drop view v_rank_daily`.execute(db);
  await sql`drop view rank_observations`.execute(db);
  await sql`drop table rank_history`.execute(db);
  await sql`${RANK_HISTORY_VIEW}`.execute(db);
  await sql`${RANK_OBSERVATIONS_VIEW}`.execute(db);
  await sql`${RANK_DAILY_VIEW}`.execute(db);
  await sql`${cascadeFunction('rank_months')}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // 0005's table (without its foreign key since 0013), filled from the view, then renamed.
  await db.schema
    .createTable('rank_history_days')
    .addColumn('series_id', 'integer', (c) => c.notNull())
    .addColumn('observed_on', 'date', (c) => c.notNull())
    .addColumn('rank', 'smallint')
    .addColumn('previous_rank', 'smallint')
    .addColumn('days_since_previous', 'smallint')
    .addPrimaryKeyConstraint('rank_history_pkey', ['series_id', 'observed_on'])
    .execute();
  await sql`alter index rank_history_pkey set (fillfactor = 100)`.execute(db);
  const last = await lastSeries(db);
  for (let first = 0; first <= last; first += MOVE_BATCH_SERIES) {
    await sql`
      insert into rank_history_days (series_id, observed_on, rank, previous_rank,
        days_since_previous)
      select series_id, observed_on, rank, previous_rank, days_since_previous
      from rank_history
      where series_id >= ${first} and series_id < ${first + MOVE_BATCH_SERIES}
      order by observed_on, series_id
      on conflict (series_id, observed_on) do nothing`.execute(db);
  }
  await sql`drop view v_rank_daily`.execute(db);
  await sql`drop view rank_observations`.execute(db);
  await sql`drop view rank_history`.execute(db);
  await sql`alter table rank_history_days rename to rank_history`.execute(db);
  await sql`create index rank_history_observed_on_brin on rank_history
    using brin (observed_on) with (pages_per_range = 16)`.execute(db);
  await sql`${RANK_OBSERVATIONS_TABLE_VIEW}`.execute(db);
  await sql`${RANK_DAILY_VIEW}`.execute(db);
  await sql`${cascadeFunction('rank_history')}`.execute(db);
  await db.schema.dropTable('rank_months').execute();
  await db.schema.dropTable('rank_days').execute();
}
