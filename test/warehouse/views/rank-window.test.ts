/**
 * `v_rank_daily` reads its window, not the history (migration 0037; docs/warehouse.md,
 * "v_rank_daily"; docs/benchmarks.md, "The rank views' window, and a year's bytes"): on
 * three years of month rows, one business's 90-day trend reads at most 3 × (its series ×
 * 90) rows through its plan, and every business's last 30 days at most 3 × (every series
 * × 30). "Read": every scan's rows, those its filters and rechecks removed, function scans
 * and per-row subqueries over a Result included (0030's definition unnested a month's
 * array for each row it returned; 0039 tests a day's element in such a subquery), times
 * their loops, from EXPLAIN (ANALYZE, FORMAT JSON). The history is inserted with SQL (day
 * rows by generate_series, packed by 0030's own move), not synced night by night.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveRankHistory } from '../../../migrations/0030_rank_months.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, testBackends } from '../../helpers/database.ts';

const BUSINESSES = 6;
const SERIES_PER_BUSINESS = 9; // 3 keywords × 3 sites
const FIRST_DAY = '2023-01-01';
/** Three years: the window's end is the last day of a month, so the calendar ends there too. */
const LAST_DAY = '2025-12-31';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

const SCANS = new Set([
  'Seq Scan',
  'Index Scan',
  'Index Only Scan',
  'Bitmap Heap Scan',
  'Function Scan',
]);

/** Rows every scan of the plan produced or discarded, over all its loops, by relation. */
function rowsRead(node: PlanNode, into = new Map<string, number>()): Map<string, number> {
  // Since 0039 a day's test is a subquery over a Result, not a function scan: counted too.
  const rowTest =
    node['Node Type'] === 'Subquery Scan' && node.Plans?.[0]?.['Node Type'] === 'Result';
  if (SCANS.has(node['Node Type']) || rowTest) {
    const rows =
      ((node['Actual Rows'] ?? 0) +
        (node['Rows Removed by Filter'] ?? 0) +
        (node['Rows Removed by Index Recheck'] ?? 0)) *
      (node['Actual Loops'] ?? 1);
    const name = node['Relation Name'] ?? node['Node Type'];
    into.set(name, (into.get(name) ?? 0) + rows);
  }
  for (const child of node.Plans ?? []) rowsRead(child, into);
  return into;
}

const total = (read: Map<string, number>) => [...read.values()].reduce((a, b) => a + b, 0);
/** Month rows read: the two tables under `rank_months` since migration 0040. */
const monthRows = (read: Map<string, number>) =>
  (read.get('rank_months_past') ?? 0) + (read.get('rank_months_current') ?? 0);

describe.each(testBackends)('v_rank_daily reads its window (%s)', (backend) => {
  let wh: Warehouse;

  async function explain(query: string): Promise<{ rows: number; read: Map<string, number> }> {
    const { rows } = await sql<{ 'QUERY PLAN': unknown }>`
      explain (analyze, format json) ${sql.raw(query)}`.execute(wh.db);
    const value = rows[0]?.['QUERY PLAN'];
    const plan = (
      (typeof value === 'string' ? JSON.parse(value) : value) as { Plan: PlanNode }[]
    )[0];
    if (!plan) throw new Error('no plan');
    return { rows: plan.Plan['Actual Rows'] ?? 0, read: rowsRead(plan.Plan) };
  }

  beforeAll(async () => {
    // Packed as migration 0030 packs them, then split as 0040 splits them (each series'
    // latest month apart from the past ones).
    wh = await createTestWarehouse(backend, { migrate: false });
    await migrateTo(wh.db, '0039_rank_daily_collected_test');
    // Day rows as 0005 stored them: most days collected, one in 11 not, one in 5 not ranked.
    await sql`
      insert into rank_series (business_id, keyword, site)
      select b, 'keyword ' || k, site
      from generate_series(1, ${BUSINESSES}) b, generate_series(1, 3) k,
        unnest(array['Google', 'Bing', 'Yelp']) site
      order by 1, 2, 3`.execute(wh.db);
    await sql`
      create temporary table day_rows as
      select series_id, observed_on, rank,
        lag(rank) over w as previous_rank,
        (observed_on - lag(observed_on) over w)::smallint as days_since_previous
      from (
        select s.series_id, g::date as observed_on,
          case when (s.series_id * 7 + n) % 5 = 0 then null
            else 1 + (s.series_id * 13 + n * 7) % 40 end::smallint as rank
        from rank_series s,
          generate_series(${FIRST_DAY}::date, ${LAST_DAY}::date, interval '1 day')
            with ordinality as t(g, n)
        where (s.series_id + n) % 11 <> 0
      ) d
      window w as (partition by series_id order by observed_on)`.execute(wh.db);
    await moveRankHistory(wh.db as never, 'day_rows');
    await sql`
      insert into rank_days (observed_on, month, day)
      select g::date, m.month, extract(day from g)::smallint
      from (select distinct month from rank_months) m,
        generate_series(m.month, m.month + interval '1 month' - interval '1 day', interval '1 day') g
      order by 1`.execute(wh.db);
    await migrateToLatest(wh.db);
    await sql`analyze`.execute(wh.db);
  });
  afterAll(async () => {
    await wh.close();
  });

  it("one business's 90-day trend reads at most 3 × its series × 90 rows, at three years", async () => {
    const query = `select * from v_rank_daily
      where business_id = 2 and observed_on >= date '${LAST_DAY}' - 90`;
    const { rows: expected } = await sql<{ n: number }>`
      select count(*)::int as n from day_rows h join rank_series s using (series_id)
      where s.business_id = 2 and h.observed_on >= ${LAST_DAY}::date - 90`.execute(wh.db);
    const { rows, read } = await explain(query);
    expect(rows).toBe(expected[0]?.n);
    expect(rows).toBeGreaterThan(SERIES_PER_BUSINESS * 70);
    expect(total(read), JSON.stringify([...read])).toBeLessThanOrEqual(
      3 * SERIES_PER_BUSINESS * 90,
    );
    // Its month rows: those of the window's four months, not the 36 of each series. The
    // current table holds one row a series (since 0040), which a month's look-up may read
    // whole when it is small.
    const series = SERIES_PER_BUSINESS * BUSINESSES;
    expect(read.get('rank_months_past') ?? 0).toBeGreaterThan(0);
    expect(read.get('rank_months_past') ?? 0).toBeLessThanOrEqual(series * 4);
    expect(read.get('rank_months_current') ?? 0).toBeGreaterThan(0);
    expect(read.get('rank_months_current') ?? 0).toBeLessThanOrEqual(series * 4);
  });

  it("every business's last 30 days reads in proportion to the window, at three years", async () => {
    const query = `select business_id, site, count(*), avg(rank) from v_rank_daily
      where observed_on > date '${LAST_DAY}' - 30 group by business_id, site`;
    const { rows, read } = await explain(query);
    expect(rows).toBe(BUSINESSES * 3);
    const series = BUSINESSES * SERIES_PER_BUSINESS;
    expect(total(read), JSON.stringify([...read])).toBeLessThanOrEqual(3 * series * 30);
    // One month's rows (December's 30 days), not every month of the three years.
    expect(monthRows(read)).toBeGreaterThan(0);
    expect(monthRows(read)).toBeLessThanOrEqual(series * 2);
    expect(read.get('rank_months_current') ?? 0).toBeGreaterThan(0);
  });
});
