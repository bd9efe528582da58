/**
 * `v_rank_daily` tests a day's element in a one-row subquery instead of a function scan
 * (docs/warehouse.md, "v_rank_daily"; issue 53): the same columns, types and rows.
 *
 * 0037 kept the day's test (collected that day) out of the month look-up by reading the
 * element through `unnest(array[m.ranks[d.day]])`, a function scan per series and day:
 * written as a plain condition it would become a filter of the look-up itself, keyed then
 * by the day too, and read once per day instead of once per month. A subquery without a
 * table that carries `offset 0` keeps it out the same way (the planner neither flattens it
 * nor pushes a condition into it) and costs a Result node instead of building an array and
 * unnesting it: on a year of 10 businesses × 90 series, every business's last 30 days took
 * 28–42 ms, now 16–19 ms, the flat layout 11–13 ms (docs/benchmarks.md).
 *
 * `create or replace view` with the columns it had; `down` puts 0037's definition back.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

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

/** `v_rank_daily` as 0037 wrote it, with the day's element read by `element`. */
function rankDaily(element: ReturnType<typeof sql>) {
  return sql`
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
  cross join lateral ${element} c(packed)
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
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await rankDaily(sql`(select m.ranks[d.day] offset 0)`).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await rankDaily(sql`unnest(array[m.ranks[d.day]])`).execute(db);
}
