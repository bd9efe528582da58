/**
 * The worker's PGlite pool hands a warehouse on as the template left it (test/helpers/
 * pglite-pool.ts), the planner's view of it included: a test's ANALYZE of empty tables
 * left `pg_class.reltuples` at 0 for the next test, whose planner then chose another
 * index than on a fresh warehouse (test/warehouse/views/plans.test.ts failed after
 * test/warehouse/views/rank-window.test.ts in one worker). PGlite only: on PostgreSQL each
 * test has a database of its own.
 */
import { type Kysely, sql } from 'kysely';
import { expect, it } from 'vitest';
import type { Database } from '../../src/warehouse/database.ts';
import { createTestWarehouse } from '../helpers/database.ts';

const QUERY = sql`select * from v_listing_accuracy_daily
  where business_id = 7 and day > date '2026-01-01' - 30`;

async function planOf(db: Kysely<Database>): Promise<string> {
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    const { rows } = await sql<{ 'QUERY PLAN': string }>`explain (costs off) ${QUERY}`.execute(trx);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

const sizes = async (db: Kysely<Database>) =>
  (
    await sql<{ relname: string; reltuples: number; relpages: number }>`
      select relname, reltuples, relpages from pg_class
       where relname like 'listing_accuracy_days%' order by relname`.execute(db)
  ).rows;

it('a warehouse handed on after a test’s ANALYZE plans as the template does', async () => {
  const first = await createTestWarehouse('pglite');
  const template = { plan: await planOf(first.db), sizes: await sizes(first.db) };
  await sql`analyze`.execute(first.db);
  await first.close();

  const next = await createTestWarehouse('pglite');
  try {
    expect(await sizes(next.db)).toEqual(template.sizes);
    expect(await planOf(next.db)).toBe(template.plan);
    expect(template.plan).toMatch(/listing_accuracy_days_pkey/);
  } finally {
    await next.close();
  }
});
