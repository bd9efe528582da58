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
 * definitions: their text is unchanged, their meaning too. Then `v_location_scorecard`
 * reads its visibility off `visibility_months` by `(business_id, month)` (the same rows:
 * its latest day and the day 30 before from the month rows, not by scanning the calendar
 * back from its end for each business); `down` puts 0021's text back. The days move in
 * batches of businesses (`moveVisibilityDays`), each statement bounded; a month already
 * moved is skipped, so the move can run again. `down` moves the months back to one row per
 * day.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';

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
 * key. Each day reaches its month's rows in a LATERAL subquery keyed by `d.month`, one the
 * planner cannot flatten (it groups by the primary key, so every row is its own group) but
 * into which a filter on `business_id` or `site` still goes (a filter on grouping columns):
 * the month rows are always looked up by `(month)` or `(business_id, month, site)`, for the
 * window's days only, whatever the statistics. Joined flat, the planner costed a hash join
 * over every month row below those look-ups once `visibility_months` held a year
 * (docs/benchmarks.md, "What each documented view reads"). The day's elements are read in a
 * subquery kept apart (`offset 0`), so the days of one month share one look-up (a Memoize
 * node keyed by the month).
 */
const VISIBILITY_DAYS_VIEW = sql`
  create view visibility_days as
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

/** What an operator may have set on a relation that a drop would lose: grants, a comment. */
interface Kept {
  grants: { privilege: string; grantee: string; grantable: boolean }[];
  comment: string | null;
}

async function keptOf(db: Kysely<unknown>, relation: string): Promise<Kept> {
  const { rows: grants } = await sql<Kept['grants'][number]>`
    select a.privilege_type as privilege,
      case when a.grantee = 0 then 'public' else quote_ident(r.rolname) end as grantee,
      a.is_grantable as grantable
    from pg_class c
    cross join lateral aclexplode(c.relacl) a
    left join pg_roles r on r.oid = a.grantee
    where c.oid = ${relation}::regclass and a.grantee <> c.relowner
      and a.privilege_type in ('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
        'REFERENCES', 'TRIGGER')`.execute(db);
  const { rows } = await sql<{ comment: string | null }>`
    select obj_description(${relation}::regclass, 'pg_class') as comment`.execute(db);
  return { grants, comment: rows[0]?.comment ?? null };
}

async function restore(db: Kysely<unknown>, relation: string, kept: Kept): Promise<void> {
  for (const g of kept.grants) {
    await sql`grant ${sql.raw(g.privilege)} on ${sql.table(relation)} to ${sql.raw(g.grantee)}
      ${sql.raw(g.grantable ? 'with grant option' : '')}`.execute(db);
  }
  if (kept.comment !== null) {
    const { rows } = await sql<{ kind: string }>`
      select relkind as kind from pg_class where oid = ${relation}::regclass`.execute(db);
    const kind = sql.raw(rows[0]?.kind === 'v' ? 'view' : 'table');
    await sql`comment on ${kind} ${sql.table(relation)} is ${sql.lit(kept.comment)}`.execute(db);
  }
}

/**
 * Replaces `visibility_days` (`replace` drops it and creates what stands in its place),
 * and the views over it. Each keeps the grants and comment it had, so a BI role that read
 * them still does.
 */
async function replaceUnderViews(db: Kysely<unknown>, replace: () => Promise<void>): Promise<void> {
  const views = await dependentViews(db);
  const kept = new Map<string, Kept>();
  for (const name of ['visibility_days', ...views.map((v) => v.name)]) {
    kept.set(name, await keptOf(db, name));
  }
  for (const view of views) await sql`drop view ${sql.id(view.name)}`.execute(db);
  await replace();
  for (const view of [...views].reverse()) {
    await sql`create view ${sql.id(view.name)} as ${sql.raw(view.definition)}`.execute(db);
  }
  for (const [name, k] of kept) await restore(db, name, k);
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
  await sql`create or replace view v_location_scorecard as ${scorecard(SCORECARD_VISIBILITY_MONTHS)}`.execute(
    db,
  );
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
  // 0021's scorecard, over `visibility_days` again: then moved with the views over it.
  await sql`create or replace view v_location_scorecard as ${scorecard(SCORECARD_VISIBILITY_DAYS)}`.execute(
    db,
  );
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
