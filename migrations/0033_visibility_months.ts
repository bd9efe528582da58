/**
 * Visibility packed by month (docs/warehouse.md, "visibility_days"): `visibility_months`
 * holds one row per business, UTC month and site, each figure of `visibility_days` as an
 * `integer[]` indexed by day of month (NULL: not collected; a zero is a zero). A night
 * rewrites only today's element of the business's current month rows, where
 * `visibility_days` added a heap row and two index entries per business, site and day.
 *
 * `visibility_days` becomes a view of the same name, columns, types and rows, its days
 * from 0030's calendar `rank_days` (visibility is summed from ranks, so every month it
 * holds is a month of ranks), so that a day or a range of days stays an index condition.
 * The views over it (`v_visibility_daily`, `v_location_scorecard`, and any a later
 * migration or an operator added) are dropped and created again from their own stored
 * definitions: their text is unchanged, their meaning too. The days move in batches of
 * businesses (`moveVisibilityDays`), each statement bounded; a month already moved is
 * skipped, so the move can run again. `down` moves the months back to one row per day.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/** Businesses per statement of the move (a year of a business and 3 sites: 1,095 day rows). */
export const MOVE_BATCH_BUSINESSES = 200;

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

/**
 * The days of `visibility_months`: the view that replaces the table `visibility_days`.
 * A day comes from the calendar `rank_days`, so a filter on `day` is a filter on a table's
 * key, carried to the month rows by `(business_id, month, site)` or `(month)`. The day's
 * elements are read in a subquery the planner keeps apart (`offset 0`), so that the month
 * rows are looked up by the month alone: the days of one month share one look-up (a
 * Memoize node), where a lookup keyed by the day too read a month's rows once per day.
 */
const VISIBILITY_DAYS_VIEW = sql`
  create view visibility_days as
  select m.business_id, d.observed_on as day, m.site, ${figures((c) => `x.${c}`)}
  from rank_days d
  join visibility_months m on m.month = d.month
  cross join lateral (select ${figures((c) => `m.${c}[d.day] as ${c}`)} offset 0) x
  where x.keywords_tracked is not null`;

/** 0031's cascade from `businesses`, over the table that holds visibility. */
function cascadeFunction(visibility: 'visibility_months' | 'visibility_days') {
  const deletes = ['business_versions', visibility, 'listing_fixes', 'review_backlog']
    .map((t) => `delete from ${t} c using gone where c.business_id = gone.business_id;`)
    .join('\n        ');
  return sql.raw(`create or replace function businesses_delete_versions() returns trigger
    language plpgsql as $$
      begin
        ${deletes}
        return null;
      end $$`);
}

interface DependentView {
  name: string;
  definition: string;
}

/**
 * The views that read `visibility_days`, directly or through another view, with their
 * stored definitions, those read by others first. Taken from the catalog rather than
 * written out here, so that each comes back as it was, whichever migration last defined it.
 */
async function dependentViews(db: Kysely<unknown>): Promise<DependentView[]> {
  const { rows } = await sql<DependentView>`
    with recursive dependent(oid, depth) as (
      select r.ev_class, 1
      from pg_depend d
      join pg_rewrite r on r.oid = d.objid
      where d.classid = 'pg_rewrite'::regclass and d.refobjid = 'visibility_days'::regclass
        and r.ev_class <> 'visibility_days'::regclass
      union all
      select r.ev_class, dependent.depth + 1
      from dependent
      join pg_depend d on d.refobjid = dependent.oid and d.classid = 'pg_rewrite'::regclass
      join pg_rewrite r on r.oid = d.objid
      where r.ev_class <> dependent.oid
    )
    select c.relname as name, pg_get_viewdef(c.oid) as definition
    from dependent
    join pg_class c on c.oid = dependent.oid
    group by c.oid, c.relname
    order by max(dependent.depth) desc, c.relname`.execute(db);
  return rows;
}

/** Replaces `visibility_days` (`replace` drops it and creates what stands in its place). */
async function replaceUnderViews(db: Kysely<unknown>, replace: () => Promise<void>): Promise<void> {
  const views = await dependentViews(db);
  for (const view of views) await sql`drop view ${sql.id(view.name)}`.execute(db);
  await replace();
  for (const view of [...views].reverse()) {
    await sql`create view ${sql.id(view.name)} as ${sql.raw(view.definition)}`.execute(db);
  }
}

/**
 * The `business_id` bounds of the batches: every `batch`-th business (then everything
 * after the last), so that a statement covers at most `batch` businesses however sparse
 * their ids are.
 */
async function batchBounds(db: Kysely<unknown>, from: string, batch: number): Promise<number[]> {
  const { rows } = await sql<{ id: string }>`
    select business_id::text as id from (
      select business_id, row_number() over (order by business_id) as n
      from (select distinct business_id from ${sql.table(from)}) b
    ) b where n % ${batch} = 0 order by business_id`.execute(db);
  return rows.map((r) => Number(r.id));
}

/**
 * Moves the day rows of `visibility_days` (the table, or `from`) into `visibility_months`,
 * `batch` businesses per statement. A business's month and site already moved are left as
 * they are (`on conflict do nothing`), so a second call moves only what the first did not.
 */
export async function moveVisibilityDays(
  db: Kysely<unknown>,
  from = 'visibility_days',
  batch = MOVE_BATCH_BUSINESSES,
): Promise<void> {
  const bounds = await batchBounds(db, from, batch);
  let after: number | null = null;
  for (const upTo of [...bounds, null]) {
    await sql`
      insert into visibility_months (business_id, month, site, ${figures((c) => c)})
      select b.business_id, b.month, b.site, ${figures((c) => `a.${c}`)}
      from (
        select v.business_id, date_trunc('month', v.day)::date as month, v.site,
          array_agg(extract(day from v.day)::int order by v.day) as days,
          ${figures((c) => `array_agg(v.${c} order by v.day) as ${c}`)}
        from ${sql.table(from)} v
        where ${after === null ? sql`true` : sql`v.business_id > ${after}`}
          and ${upTo === null ? sql`true` : sql`v.business_id <= ${upTo}`}
        group by 1, 2, 3
      ) b
      cross join lateral (
        select ${figures((c) => `array_agg(u.${c} order by g) as ${c}`)}
        from generate_series(1, b.days[array_upper(b.days, 1)]) g
        left join unnest(b.days, ${figures((c) => `b.${c}`)})
          as u(day, ${figures((c) => c)}) on u.day = g
      ) a
      order by b.business_id, b.month, b.site
      on conflict (business_id, month, site) do nothing`.execute(db);
    after = upTo;
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('visibility_months')
    .addColumn('business_id', 'bigint', (c) => c.notNull())
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('site', 'text', (c) => c.notNull())
    // Element d: day d of the month; NULL: not collected. The arrays end at the month's
    // last collected day, all six of the same length.
    .addColumn('keywords_tracked', sql`integer[]`, (c) => c.notNull())
    .addColumn('keywords_ranked', sql`integer[]`, (c) => c.notNull())
    .addColumn('position_sum', sql`integer[]`, (c) => c.notNull())
    .addColumn('top3', sql`integer[]`, (c) => c.notNull())
    .addColumn('top10', sql`integer[]`, (c) => c.notNull())
    .addColumn('clicks_per_1000', sql`integer[]`, (c) => c.notNull())
    .addPrimaryKeyConstraint('visibility_months_pkey', ['business_id', 'month', 'site'])
    .execute();
  // Only the current month's rows are rewritten (once a night each); room on their page
  // keeps that rewrite in place (a HOT update: no new index entry).
  await sql`alter table visibility_months set (fillfactor = 90)`.execute(db);
  // "Every business, the last N days": that month's rows.
  await sql`create index visibility_months_month_idx on visibility_months (month)`.execute(db);

  await moveVisibilityDays(db);
  // Every month moved has its days in the calendar (a month of ranks has them already).
  await sql`
    insert into rank_days (observed_on, month, day)
    select g::date, m.month, extract(day from g)::smallint
    from (select distinct month from visibility_months) m,
      generate_series(m.month, m.month + interval '1 month' - interval '1 day', interval '1 day') g
    order by 1
    on conflict (observed_on) do nothing`.execute(db);

  await replaceUnderViews(db, async () => {
    await sql`drop table visibility_days`.execute(db);
    await sql`${VISIBILITY_DAYS_VIEW}`.execute(db);
  });
  await sql`${cascadeFunction('visibility_months')}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // 0019's table (without its foreign key since 0031), filled from the view, then renamed.
  await db.schema
    .createTable('visibility_days_table')
    .addColumn('business_id', 'bigint', (c) => c.notNull())
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
  const bounds = await batchBounds(db, 'visibility_months', MOVE_BATCH_BUSINESSES);
  let after: number | null = null;
  for (const upTo of [...bounds, null]) {
    await sql`
      insert into visibility_days_table (business_id, day, site, ${figures((c) => c)})
      select business_id, day, site, ${figures((c) => c)}
      from visibility_days
      where ${after === null ? sql`true` : sql`business_id > ${after}`}
        and ${upTo === null ? sql`true` : sql`business_id <= ${upTo}`}
      order by day, business_id, site
      on conflict (business_id, day, site) do nothing`.execute(db);
    after = upTo;
  }
  await replaceUnderViews(db, async () => {
    await sql`drop view visibility_days`.execute(db);
    await sql`alter table visibility_days_table rename to visibility_days`.execute(db);
  });
  await sql`create index visibility_days_day_idx on visibility_days (day)`.execute(db);
  await sql`${cascadeFunction('visibility_days')}`.execute(db);
  await db.schema.dropTable('visibility_months').execute();
}
