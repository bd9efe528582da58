/**
 * Each series' current month row in a table of its own (docs/warehouse.md, "rank_months";
 * issue 53): `rank_months` becomes a view over `rank_months_past` (the table it was,
 * renamed) and `rank_months_current`, with the same columns and rows.
 *
 * A night rewrites only the current month's row of each series, and that row grows by one
 * element a night. In one table, about one rewrite in five no longer fit its page and
 * moved (a new entry in each index, and room left that only a VACUUM finds again): at a
 * year of nightly syncs, `rank_months` took 7.0 bytes per observation where its closed
 * months need about 5.5, and 19.2 when nights came back to back without a vacuum. Its
 * pages could not keep room for that rewrite either, since a closed month's page would then
 * stay half empty for good (docs/benchmarks.md, "a year's bytes"). Now:
 *
 * - `rank_months_current` holds, for each series, the row of its latest month (the month
 *   of `rank_latest.observed_on`); its pages keep half free (`fillfactor = 50`), room for
 *   a business's rows to be rewritten in place (HOT) through the month. A series' first
 *   day of a later month copies the row to `rank_months_past` and rewrites it in place as
 *   the new month's (src/warehouse/tables/rankings.ts), so the table neither grows nor
 *   leaves holes that only a VACUUM would find again.
 * - `rank_months_past` holds every earlier month, packed (`fillfactor = 100`), appended
 *   once a month and rewritten after that only by a run dated back into its month.
 *
 * Every view over `rank_months` (`rank_history`, `rank_observations`, and any of an
 * operator's own) is made again over the view, from its own definition. So is
 * `v_rank_daily` (`RANK_DAILY` below: its month look-up's `group by` named the table's
 * primary key, which a view has not, and it reads a day's previous observation once). The trigger that
 * deletes a deleted series' rows deletes them from both tables. Grants and comments an operator set
 * on `rank_months` move to the view (src/warehouse/driver/migrate.ts). `down` puts the
 * current rows back into the one table.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

const COLUMNS = sql.raw('series_id, month, ranks, previous_on, previous_rank');

/**
 * Every view that reads `from` (directly) is defined again with `to` in its place: its own
 * definition as PostgreSQL prints it, the relation's name replaced where it stands alone.
 * `v_rank_daily` is left to the caller, which defines it, and so is `to` itself.
 */
async function repointViews(db: Kysely<unknown>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ name: string; definition: string }>`
    select distinct quote_ident(v.relname) as name, pg_get_viewdef(v.oid) as definition
    from pg_depend d
    join pg_rewrite r on r.oid = d.objid
    join pg_class v on v.oid = r.ev_class
    where d.classid = 'pg_rewrite'::regclass and d.refobjid = ${from}::regclass
      and v.oid <> ${from}::regclass and v.relnamespace = current_schema()::regnamespace
      and v.relname not in ('v_rank_daily', ${to})`.execute(db);
  for (const { name, definition } of rows) {
    const pointed = definition.replace(new RegExp(`\\b${from}\\b`, 'g'), to).replace(/;\s*$/, '');
    try {
      await sql.raw(`create or replace view ${name} as ${pointed}`).execute(db);
    } catch (error) {
      // A view of an operator's own that cannot stand over a view (a `group by` that leans
      // on the table's primary key, a materialized view): nothing is migrated.
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(
        `The view ${name} reads rank_months, which this migration makes a view over two tables; defined again over it, ${name} fails (${reason}). Nothing was changed: drop ${name}, run the migration, and create ${name} again over rank_months (a group by over it names every column it returns).`,
        { cause: error },
      );
    }
  }
}

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

/**
 * `v_rank_daily`'s month look-up over `months`. Its `group by` keeps it a subquery of its
 * own (one per month, memoized) rather than a join the planner would key by the day. Over a
 * table its primary key is enough (the other columns depend on it); over the view, which
 * has no key, it names every column it returns.
 */
function monthLookup(months: 'rank_months' | 'rank_months_past') {
  const groupBy =
    months === 'rank_months'
      ? sql`m.series_id, m.month, m.ranks, m.previous_on, m.previous_rank, s.series_id`
      : sql`m.series_id, m.month, s.series_id`;
  return sql`
  cross join lateral (
    select s.business_id, s.keyword, s.site, m.ranks, m.previous_on, m.previous_rank
    from ${sql.table(months)} m
    join rank_series s on s.series_id = m.series_id
    where m.month = d.month
    group by ${groupBy}
  ) m`;
}

/** The index of the month row's last collected day before the row's day, or NULL. */
const PREVIOUS_DAY = sql`case when d.day > 1 and m.ranks[d.day - 1] is not null then d.day - 1
      else rank_months_day_before(m.ranks, d.day) end`;

/**
 * `v_rank_daily` over the view. The day's element and the index of the observation before
 * it are read once per series and day, in one subquery kept out of the month look-up by
 * `offset 0` (as 0039's test was): 0039 computed that index in the select list, where
 * PostgreSQL expands it into every column that reads it (about sixteen array subscripts a
 * row), and its test subquery was memoized on the day and the month's array, a cache that
 * never hits. The subquery names `d.observed_on`, so no cache is kept for it. One
 * business's 90-day trend at a year of 20 businesses: 18–19 ms before, 7.7–8.1 ms after;
 * every business's last 30 days unchanged (22–24 ms; docs/benchmarks.md).
 */
const RANK_DAILY = sql`
  create or replace view v_rank_daily as
  select m.business_id, m.keyword, m.site, d.observed_on, ${RANK_DAILY_COLUMNS}
  from rank_days d
  ${monthLookup('rank_months')}
  cross join lateral (select m.ranks[d.day], ${PREVIOUS_DAY}, d.observed_on offset 0) c(packed, i, on_day)
  cross join lateral (
    select nullif(c.packed, -1::smallint),
      case when c.i is null then m.previous_on else d.month + (c.i - 1) end,
      case when c.i is null then m.previous_rank else nullif(m.ranks[c.i], -1::smallint) end
  ) h(rank, previous_on, previous_rank)
  where c.packed is not null`;

/** `v_rank_daily` as 0039 wrote it, over the one table (what `down` puts back). */
const RANK_DAILY_0039 = sql`
  create or replace view v_rank_daily as
  select m.business_id, m.keyword, m.site, d.observed_on, ${RANK_DAILY_COLUMNS}
  from rank_days d
  ${monthLookup('rank_months_past')}
  cross join lateral (select m.ranks[d.day] offset 0) c(packed)
  cross join lateral (select ${PREVIOUS_DAY}) p(i)
  cross join lateral (
    select nullif(c.packed, -1::smallint),
      case when p.i is null then m.previous_on else d.month + (p.i - 1) end,
      case when p.i is null then m.previous_rank
        else nullif(m.ranks[p.i], -1::smallint) end
  ) h(rank, previous_on, previous_rank)
  where c.packed is not null`;

/** The trigger function of 0013 and 0030: a deleted series takes its rows with it. */
function cascadeFunction(deletes: readonly string[]) {
  const statements = deletes
    .map((t) => `delete from ${t} c using gone where c.series_id = gone.series_id;`)
    .join('\n      ');
  return sql.raw(`create or replace function rank_series_delete_observations() returns trigger
    language plpgsql as $$
    begin
      ${statements}
      return null;
    end $$`);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table rank_months rename to rank_months_past`.execute(db);
  await sql`alter table rank_months_past set (fillfactor = 100)`.execute(db);
  await sql`
    create table rank_months_current (
      series_id integer not null,
      month date not null,
      ranks smallint[] not null,
      previous_on date,
      previous_rank smallint,
      constraint rank_months_current_pkey primary key (series_id, month)
    ) with (fillfactor = 50)`.execute(db);
  await sql`create index rank_months_current_month_idx on rank_months_current (month)`.execute(db);
  await sql`
    with latest as (
      delete from rank_months_past p
      using (select series_id, max(month) as month from rank_months_past group by series_id) x
      where p.series_id = x.series_id and p.month = x.month
      returning p.*
    )
    insert into rank_months_current (${COLUMNS})
    select ${COLUMNS} from latest order by series_id`.execute(db);
  await sql`
    create view rank_months as
    select ${COLUMNS} from rank_months_past
    union all
    select ${COLUMNS} from rank_months_current`.execute(db);
  await RANK_DAILY.execute(db);
  await repointViews(db, 'rank_months_past', 'rank_months');
  await cascadeFunction(['rank_months_past', 'rank_months_current', 'rank_latest']).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await RANK_DAILY_0039.execute(db);
  await repointViews(db, 'rank_months', 'rank_months_past');
  await sql`drop view rank_months`.execute(db);
  await sql`
    insert into rank_months_past (${COLUMNS})
    select ${COLUMNS} from rank_months_current order by series_id`.execute(db);
  await sql`drop table rank_months_current`.execute(db);
  await sql`alter table rank_months_past set (fillfactor = 90)`.execute(db);
  await sql`alter table rank_months_past rename to rank_months`.execute(db);
  await cascadeFunction(['rank_months', 'rank_latest']).execute(db);
}
