/**
 * The views' filters reach the tables: a business or a day range asked of a view is an
 * index condition on the table that holds it, not a filter applied after the view has
 * read (and grouped or windowed) everything. Plans are read with sequential scans
 * discouraged, so that the small test tables do not make a full scan the cheaper choice:
 * a filter that cannot be pushed down still shows up above the aggregate.
 */
import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/warehouse/database.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends } from '../../helpers/database.ts';

async function plan(trx: Transaction<Database>, query: string): Promise<string> {
  await sql`set local enable_seqscan = off`.execute(trx);
  const { rows } = await sql<{
    'QUERY PLAN': string;
  }>`explain (costs off) ${sql.raw(query)}`.execute(trx);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe.each(testBackends)('view plans (%s)', (backend) => {
  let wh: Warehouse;
  const explain = (query: string) => wh.db.transaction().execute((trx) => plan(trx, query));

  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  afterAll(async () => {
    await wh.close();
  });

  it("v_rank_daily: a business reaches its series, and the window's days their month's rows", async () => {
    // Migration 0037: the month rows are looked up by the calendar's month (with the
    // business's series, by either index), never all of a series' months joined later.
    const text = await explain(`select * from v_rank_daily
      where business_id = 7 and observed_on > date '2026-01-01' - 90`);
    expect(text).toMatch(/Index Cond: \(observed_on > /);
    expect(text).toMatch(/Index Cond: \((\(series_id = s\.series_id\) AND \()?month = d\.month\)/);
    expect(text).toMatch(/Index Cond: \(business_id = 7\)/);
    expect(text).not.toMatch(
      /rank_history|Seq Scan on rank_months|Hash Cond: \(d\.month = m\.month\)/,
    );
  });

  it('v_rank_daily: a day alone reaches the calendar, and the month rows by their month', async () => {
    const text = await explain(`select site, count(*), avg(rank) from v_rank_daily
      where observed_on = date '2026-01-01' - 1 group by site`);
    expect(text).toMatch(/rank_months_month_idx/);
    expect(text).toMatch(/Index Cond: \(month = d\.month\)/);
    expect(text).not.toMatch(/Seq Scan on rank_months/);
  });

  it('v_rank_latest reads the read model, never the history', async () => {
    const text = await explain('select * from v_rank_latest where business_id = 7');
    expect(text).toMatch(/rank_latest/);
    expect(text).not.toMatch(/rank_history/);
  });

  it('v_listing_accuracy_daily reads the read model by business and day', async () => {
    const text = await explain(`select * from v_listing_accuracy_daily
      where business_id = 7 and day > date '2026-01-01' - 30`);
    expect(text).toMatch(/listing_accuracy_days_pkey/);
    expect(text).not.toMatch(/listing_status_history/);
  });

  it('v_review_daily: the business reaches both reviews and responses before grouping', async () => {
    const text = await explain('select * from v_review_daily where business_id = 7');
    // Every scan of reviews is by business; the filter never sits above the aggregate.
    expect(text).toMatch(/reviews_business_(reviewed_at|week)_idx/);
    expect(text).not.toMatch(/Full Join|Hash Full Join|Merge Full Join/);
    const aggregate = text.split('\n').findIndex((line) => /Aggregate/.test(line));
    const filterAbove = text
      .split('\n')
      .slice(0, Math.max(aggregate, 0))
      .some((line) => /Filter: .*business_id/.test(line));
    expect(aggregate).toBeGreaterThanOrEqual(0);
    expect(filterAbove).toBe(false);
  });

  it('v_visibility_daily reads its month rows by business and day, never rank history', async () => {
    // A day range reaches the calendar's key, and each day its month's rows by key.
    const one = await explain(`select * from v_visibility_daily
      where business_id = 7 and day > date '2026-01-01' - 30`);
    expect(one).toMatch(/visibility_months_pkey/);
    expect(one).toMatch(/Index Cond: \(.*business_id = 7/);
    expect(one).toMatch(/rank_days_pkey/);
    expect(one).toMatch(/Index Cond: \(observed_on > /);
    expect(one).not.toMatch(/rank_history|rank_months|Seq Scan on visibility_months/);
    const all = await explain(
      `select * from v_visibility_daily where day > date '2026-01-01' - 30`,
    );
    expect(all).toMatch(/visibility_months_month_idx|visibility_months_pkey/);
    expect(all).toMatch(/Index Cond: \(observed_on > /);
    expect(all).not.toMatch(/Seq Scan on visibility_months/);
  });

  it("v_visibility_daily: every business reads the window's months only, even when a hash join is cheaper", async () => {
    // A year of month rows made the planner cost one hash join over all of them below a
    // look-up per month (docs/benchmarks.md, "What each documented view reads"). With
    // nested loops discouraged, as those statistics did, the month rows are still looked
    // up by the calendar's month: the view leaves no other way to reach them.
    const text = await wh.db.transaction().execute(async (trx) => {
      await sql`set local enable_nestloop = off`.execute(trx);
      return plan(trx, `select * from v_visibility_daily where day > date '2026-01-01' - 30`);
    });
    expect(text).toMatch(/visibility_months_month_idx/);
    expect(text).toMatch(/Index Cond: \(month = d\.month\)/);
    expect(text).toMatch(/Index Cond: \(observed_on > /);
    expect(text).not.toMatch(/Hash Join|Merge Join|Seq Scan on visibility_months/);
    // The same with a business: its month rows by the primary key.
    const one = await wh.db.transaction().execute(async (trx) => {
      await sql`set local enable_nestloop = off`.execute(trx);
      return plan(
        trx,
        `select * from v_visibility_daily where business_id = 7 and day > date '2026-01-01' - 30`,
      );
    });
    expect(one).toMatch(/Index Cond: \(\(business_id = 7\) AND \(month = d\.month\)\)/);
    expect(one).not.toMatch(/Hash Join|Merge Join/);
  });

  it('v_listing_fixes reads the episodes of its window, never the status history', async () => {
    const text = await explain(`select * from v_listing_fixes
      where turned_inaccurate_on > date '2026-01-01' - 30`);
    expect(text).toMatch(/listing_fixes_turned_inaccurate_on_idx/);
    expect(text).not.toMatch(/listing_status_history/);
  });

  it('v_review_velocity_weekly: a week range is an index condition, with or without a business', async () => {
    const all = await explain(`select * from v_review_velocity_weekly
      where week >= date '2026-01-05' - 84`);
    expect(all).toMatch(/reviews_(business_)?week_idx/);
    expect(all).toMatch(/Index Cond: .*date_trunc/);
    const one = await explain(`select * from v_review_velocity_weekly
      where business_id = 7 and week >= date '2026-01-05' - 84`);
    expect(one).toMatch(/reviews_business_week_idx/);
    expect(one).toMatch(/Index Cond: \(\(business_id = 7\) AND .*date_trunc/);
  });

  it('v_location_scorecard reads read models and indexes by business, no history', async () => {
    const text = await explain('select * from v_location_scorecard where business_id = 7');
    expect(text).not.toMatch(/listing_status_history|rank_history|review_versions/);
    // Its visibility off the business's month rows by key, never the calendar or the day
    // view: the latest month (a backward scan, one month's rows before its limit), the day
    // 30 before (the latest month on or before it), and each day's sums by (business, month).
    expect(text).not.toMatch(/rank_days|visibility_days/);
    expect(text).toMatch(/Index Scan Backward using visibility_months_pkey/);
    expect(text).toMatch(/Index Cond: \(business_id = b\.business_id\)/);
    expect(text).toMatch(/Index Cond: \(\(business_id = b\.business_id\) AND \(month <= /);
    // Each day's sums: one month's rows, by the primary key or, on tables this small, the
    // month index (the business then a filter on that month's rows).
    expect(text).toMatch(
      /Index Cond: \((\(business_id = b\.business_id\) AND \()?month = m\.month\)/,
    );
    expect(text).toMatch(
      /Index Cond: \((\(business_id = b\.business_id\) AND \()?month = m_\d\.month\)/,
    );
    // The reviews waiting: one row of the read model (migration 0021), not the backlog.
    expect(text).toMatch(/review_backlog_pkey/);
    expect(text).not.toMatch(/reviews_waiting_idx/);
    // The 90 days' reviews by business, bounded by the window on either index (which
    // one wins depends on the statistics).
    expect(text).toMatch(/reviews_business_\w+_idx on reviews/);
    expect(text).toMatch(
      /Index Cond: \(\(business_id = b\.business_id\) AND \((reviewed_at >= |\(date_trunc)/,
    );
    expect(text).not.toMatch(/Seq Scan/);
  });
});
