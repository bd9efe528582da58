/**
 * The calendar `rank_days` reaches the last day written, not the rest of its month
 * (docs/warehouse.md, "rank_days"; issue 53). Since 0030 the rankings writer added a whole
 * month's days when it started the month's rows, so a window that runs to the month's end
 * ("the last 30 days": `observed_on > current_date - 30`) read the current month's days
 * after today too, each of them met by every series' month row, for no row: on 2 December,
 * 29 of the window's 59 days. Now the writer adds the days of a month up to the day it
 * writes (src/warehouse/tables/rankings.ts, `calendarOf`), and this migration removes the days
 * after the last one any `rank_months` or `visibility_months` row holds.
 *
 * Every view over the calendar (`rank_history`, `rank_observations`, `v_rank_daily`,
 * `visibility_days`, `v_visibility_daily`) returns the same rows: a day no month row holds
 * returns none. `down` puts the removed months' days back (whole months, as 0030 wrote them).
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // The last day a month row holds: its month plus its array's length, less one (an array
  // ends at its last written element). Only the latest month can hold days after it.
  await sql`
    delete from rank_days d
    where d.month = (select max(month) from rank_days)
      and d.observed_on > coalesce(greatest(
        (select max(m.month + array_length(m.ranks, 1) - 1) from rank_months m
          where m.month = d.month),
        (select max(v.month + array_length(v.keywords_tracked, 1) - 1) from visibility_months v
          where v.month = d.month)), d.month - 1)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into rank_days (observed_on, month, day)
    select g::date, m.month, extract(day from g)::smallint
    from (select distinct month from rank_days) m,
      generate_series(m.month, m.month + interval '1 month' - interval '1 day', interval '1 day') g
    order by 1
    on conflict (observed_on) do nothing`.execute(db);
}
