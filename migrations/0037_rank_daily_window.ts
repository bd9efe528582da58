/**
 * `v_rank_daily` reads its window again (docs/warehouse.md, "v_rank_daily"; issue 53): the
 * same columns, types and rows, read in proportion to the days asked for, whatever the
 * length of the history.
 *
 * Through 0030's `rank_history` view, one business's 90-day trend read every month row of
 * each of its series (the planner joined them to the calendar by a hash on the month, 13
 * rows a series at a year, more every month), and unnested a month's array for every row
 * it returned to find the previous observation. Now:
 *
 * - Each day of the calendar `rank_days` (a day or a range of days: its key) reaches its
 *   month's rows in a LATERAL subquery keyed by the calendar's month alone, one the planner
 *   cannot flatten (it groups by the primary keys, so every row is its own group) and into
 *   which a filter on `business_id`, `keyword` or `site` still goes: the month rows read
 *   are those of the window's months, by `(series_id, month)` or `(month)`, and the days of
 *   one month share one look-up (a Memoize node keyed by the month).
 * - The day's own test (collected that day) is a filter on a one-row function scan of its
 *   own, so that it is evaluated above that look-up: written as a condition of the join it
 *   would be pushed into the look-up, keyed then by the day too, and read once per day.
 * - The previous observation is read off the month row by subscript: the day before when it
 *   was collected (a night's series, nearly always), else the month's last collected day
 *   before this one (`rank_months_day_before`, a loop over at most 30 elements, no rows),
 *   else what the row carries in from the month before.
 *
 * `create or replace view` with the columns it had, so grants, comments and views over it
 * stay; `down` puts 0030's definition (over `rank_history`) back and drops the function.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/**
 * The month's last collected day before `day` (an index of `ranks`), NULL when there is
 * none: then the previous observation is the one the month row carries in.
 */
const DAY_BEFORE_FUNCTION = sql`
  create function rank_months_day_before(ranks smallint[], day int) returns int
    language plpgsql immutable strict parallel safe as $$
    begin
      for i in reverse day - 1 .. 1 loop
        if ranks[i] is not null then return i; end if;
      end loop;
      return null;
    end $$`;

/** The columns of 0005's `v_rank_daily`, from `h` (rank, previous_on, previous_rank). */
const RANK_DAILY_COLUMNS = sql`
    h.rank::int as rank,
    h.rank is not null as ranked,
    h.previous_on as previous_observed_on,
    h.previous_rank::int as previous_rank,
    h.rank::int - h.previous_rank as rank_change,
    case
      when h.previous_on is null then 'first'
      when h.rank is null and h.previous_rank is null then 'not ranked'
      when h.previous_rank is null then 'entered'
      when h.rank is null then 'dropped'
      when h.rank < h.previous_rank then 'up'
      when h.rank > h.previous_rank then 'down'
      else 'same'
    end as movement`;

/** `v_rank_daily` by the calendar's month (see above). */
const RANK_DAILY_BY_MONTH = sql`
  create or replace view v_rank_daily as
  select m.business_id, m.keyword, m.site, d.observed_on, ${RANK_DAILY_COLUMNS}
  from rank_days d
  cross join lateral (
    select s.business_id, s.keyword, s.site, m.ranks, m.previous_on, m.previous_rank
    from rank_months m
    join rank_series s on s.series_id = m.series_id
    where m.month = d.month
    group by m.series_id, m.month, s.series_id
  ) m
  cross join lateral unnest(array[m.ranks[d.day]]) c(packed)
  cross join lateral (
    select case when d.day > 1 and m.ranks[d.day - 1] is not null then d.day - 1
      else rank_months_day_before(m.ranks, d.day) end
  ) p(i)
  cross join lateral (
    select nullif(c.packed, -1::smallint),
      case when p.i is null then m.previous_on else d.month + (p.i - 1) end,
      case when p.i is null then m.previous_rank
        else nullif(m.ranks[p.i], -1::smallint) end
  ) h(rank, previous_on, previous_rank)
  where c.packed is not null`;

/** 0005's `v_rank_daily` over `rank_history`, as 0030 left it (what `down` puts back). */
const RANK_DAILY_0030 = sql`
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
  join rank_series s on s.series_id = h.series_id`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`${DAY_BEFORE_FUNCTION}`.execute(db);
  await sql`${RANK_DAILY_BY_MONTH}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`${RANK_DAILY_0030}`.execute(db);
  await sql`drop function rank_months_day_before(smallint[], int)`.execute(db);
}
