/**
 * A demo stopped part-way through a day (Ctrl-C) and started again syncs that day again:
 * the warehouse ends with the rows of a demo that was never stopped, not with the day's
 * first few businesses only (docs/running.md). On PGlite, and on PostgreSQL when
 * TEST_DATABASE_URL is set (each demo in a schema of its own).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { type DemoOptions, runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import {
  createTestWarehouse,
  dropSchema,
  freshSchemaName,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

const END = '2026-03-10';
/** The day the first demo is stopped on: its third of four. */
const STOPPED_DAY = '2026-03-09';
const url = process.env['TEST_DATABASE_URL']?.trim();

/**
 * Every row of the tables a sync writes, keyed by what it is rather than by identities
 * and run ids the two demos assign in a different order. Left out: `sync_runs` (the
 * stopped demo has one run more, `interrupted`), the raw zone and `business_answers`
 * (the times of the reads themselves), and `accounts.base_url` (each sandbox has its
 * own port).
 */
const TABLES: Record<string, ReturnType<typeof sql>> = {
  accounts: sql`select name, user_email, last_synced_at, removals_held from accounts`,
  businesses: sql`select * from businesses`,
  business_versions: sql`select business_id, observed_at, content_hash, profile from business_versions`,
  listings: sql`select * from listings`,
  listing_status_history: sql`select business_id, listing_id, observed_at, site_name, status,
    previous_status, sync_status, name_valid, phone_valid, address_valid, claimed
    from listing_status_history`,
  listing_accuracy_days: sql`select * from listing_accuracy_days`,
  reviews: sql`select * from reviews`,
  review_versions: sql`select review_id, observed_at, content_hash, rating, title, content,
    likes_count, likes_change, response_count from review_versions`,
  keywords: sql`select * from keywords`,
  rank_observations: sql`select business_id, keyword, site, observed_on::text, rank
    from rank_observations`,
  rank_latest: sql`select s.business_id, s.keyword, s.site, l.observed_on::text, l.rank,
    l.previous_observed_on::text, l.previous_rank, l.rank_7d_ago, l.rank_30d_ago,
    l.best_rank_30d, l.worst_rank_30d, l.observations_30d, l.unranked_days_30d
    from rank_latest l join rank_series s using (series_id)`,
  alerts: sql`select kind, dedupe_key, account_name, business_id, listing_id, site_name,
    previous_status, status, detected_at, keyword, review_id from alerts`,
};

type Where = Pick<DemoOptions, 'warehouse' | 'databaseUrl' | 'schema'>;

/** The tables' rows, each row as sorted JSON, read with a connection of the test's own. */
async function tableRows(where: Where): Promise<Record<string, string[]>> {
  const wh =
    where.warehouse ??
    (await openWarehouse({
      databaseUrl: where.databaseUrl as string,
      searchPath: where.schema as string,
    }));
  try {
    const out: Record<string, string[]> = {};
    for (const [table, query] of Object.entries(TABLES)) {
      const rows = (await query.execute(wh.db)).rows as Record<string, unknown>[];
      out[table] = rows.map((row) => JSON.stringify(row)).sort();
    }
    return out;
  } finally {
    if (!where.warehouse) await wh.close();
  }
}

async function rankRowsOn(where: Where, day: string): Promise<number> {
  const rows = (await tableRows(where))['rank_observations'] ?? [];
  return rows.filter((row) => (JSON.parse(row) as { observed_on: string }).observed_on === day)
    .length;
}

describe.each(testBackends)('a demo stopped part-way through a day (%s)', (backend) => {
  let dir = '';
  const schemas: string[] = [];
  const warehouses: TestWarehouse[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'listings-demo-resume-'));
  });
  afterEach(async () => {
    for (const schema of schemas.splice(0)) await dropSchema(schema);
    for (const warehouse of warehouses.splice(0)) await warehouse.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A warehouse of its own for one demo: an in-memory PGlite, or a fresh schema. */
  async function warehouseFor(): Promise<Where> {
    if (backend === 'pglite') {
      const warehouse = await createTestWarehouse('pglite');
      warehouses.push(warehouse);
      return { warehouse };
    }
    const schema = freshSchemaName();
    schemas.push(schema);
    return { databaseUrl: url as string, schema };
  }

  // One business at a time per account: a stop after the day's first business leaves the
  // others of that day unwritten, whatever the machine's speed.
  const config = loadConfig({ SYNC_ACCOUNT_CONCURRENCY: '1' });

  async function demo(where: Where, extra: Partial<DemoOptions> = {}) {
    const lines: string[] = [];
    const result = await runDemo(config, silentLogger(), {
      days: 3,
      accounts: 2,
      businessesPerAccount: 3,
      reportPath: join(dir, 'report.html'),
      endDate: END,
      ...where,
      ...extra,
      write: (line) => lines.push(line),
    });
    return { lines, result };
  }

  it('syncs the stopped day again on the next start, and ends with the rows of a demo never stopped', async () => {
    const resumed = await warehouseFor();
    const stop = new AbortController();
    const stopped = await demo(resumed, {
      signal: stop.signal,
      onSyncProgress: (day, progress) => {
        if (day === STOPPED_DAY && progress.businessesDone >= 1) stop.abort();
      },
    });
    expect(stopped.result.syncs.map((s) => s.status)).toEqual([
      'succeeded',
      'succeeded',
      'interrupted',
    ]);

    const continuous = await warehouseFor();
    await demo(continuous);
    const full = await rankRowsOn(continuous, STOPPED_DAY);
    // The hole the stop left: part of the day's rank rows, not all.
    const partial = await rankRowsOn(resumed, STOPPED_DAY);
    expect(full).toBeGreaterThan(0);
    expect(partial).toBeLessThan(full);

    const again = await demo(resumed);
    expect(again.result.syncs.map((s) => s.status)).toEqual(['succeeded', 'succeeded']);
    expect(await rankRowsOn(resumed, STOPPED_DAY)).toBe(full);
    const after = await tableRows(resumed);
    const expected = await tableRows(continuous);
    for (const table of Object.keys(TABLES)) {
      expect(after[table], table).toEqual(expected[table]);
    }
    // And it says where it carried on from.
    expect(again.lines).toContain(
      'Resuming after 2026-03-08, the last day synced in full: simulating 2 more day(s) to 2026-03-10.',
    );
    // Two schemas on PostgreSQL, three demos and their reports, on a busy 2-core machine.
  }, 240_000);
});
