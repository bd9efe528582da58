/**
 * `replay --in-place` never loses what it cannot rebuild (docs/replay.md, "Replay in
 * place"): history older than the raw zone stays as it was and the first night of the
 * window compares with the last night kept; the operator's objects and a reader's snapshot
 * survive; alerts keep their identity and delivery, and those no replay recomputes stay;
 * `--dry-run` commits nothing; a run is replayed with the bounds it recorded; reads of
 * businesses that never committed are not replayed as written.
 */
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  type ApiClient,
  archiveBusiness,
  createApiClient,
  listBusinesses,
} from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { deleteUnreadBodies } from '../../src/raw/prune.ts';
import { replayInPlace } from '../../src/replay/in-place.ts';
import { replay } from '../../src/replay/replay.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sharedBuild } from '../helpers/warehouse-copies.ts';
import { documentedContent } from '../raw/documented-content.ts';
import { nightOf, sync, testApiClient, type WorldShape } from '../sync/harness.ts';

/**
 * Two accounts of two businesses (it was three each): the tests compare the warehouse
 * before and after a replay, row for row, whatever its size. Two are the fewest that keep
 * each account a business after the first test archives one, and two nights of them still
 * raise an alert (the alerts test asserts one besides its own two).
 */
const WORLD: WorldShape = {
  seed: 31,
  accounts: 2,
  businessesPerAccount: 2,
  startDate: '2026-05-01',
};

// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
async function rows(db: Kysely<any>, query: string): Promise<string[]> {
  const { rows } = await sql<{ row: string }>`
    select row_to_json(t)::text as row from (${sql.raw(query)}) t order by 1`.execute(db);
  return rows.map((r) => r.row);
}

/** History and identities BI may hold, beyond the documented content. */
async function identities(db: Kysely<Database>): Promise<Record<string, string[]>> {
  return {
    alerts: await rows(
      db,
      'select alert_id, kind, dedupe_key, run_id, delivered_at, attempts, last_error from alerts',
    ),
    series: await rows(db, 'select series_id, business_id, keyword, site from rank_series'),
    runIds: await rows(db, 'select listing_id, observed_at, run_id from listing_status_history'),
  };
}

async function count(db: Kysely<Database>, table: string): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from ${sql.table(table)}`.execute(db);
  return rows[0]?.n ?? 0;
}

describe.each(testBackends)('replay --in-place keeps what it cannot rebuild (%s)', (backend) => {
  /** A sandbox and client of the test's own, closed when it finishes. */
  async function ownWorld(): Promise<{ sandbox: RunningSandbox; api: ApiClient }> {
    const sandbox = await startSandbox({ ...WORLD, port: 0 });
    const api = testApiClient();
    onTestFinished(async () => {
      await api.close();
      await sandbox.close();
    });
    return { sandbox, api };
  }

  async function nights(
    warehouse: TestWarehouse,
    { sandbox, api }: { sandbox: RunningSandbox; api: ApiClient },
    n: number,
  ): Promise<void> {
    for (let i = 0; i < n; i += 1) {
      if (i > 0) sandbox.advanceDays(1);
      const at = nightOf(sandbox);
      const result = await sync(warehouse, api, sandbox.credentials, {
        now: () => at,
      });
      expect(result.status).toBe('succeeded');
    }
  }

  /**
   * The first two nights of WORLD, synced once for the file: every test that starts from
   * them (all but the bounded one) replays a copy of its own. A sandbox read by a sync is
   * unchanged by it, so a test that carries on upstream starts a new one at the same day.
   */
  const twoNights = sharedBuild(
    backend,
    async (warehouse) => {
      const sandbox = await startSandbox({ ...WORLD, port: 0 });
      const api = testApiClient();
      try {
        await nights(warehouse, { sandbox, api }, 2);
      } finally {
        await api.close();
        await sandbox.close();
      }
    },
    { readers: false },
  );
  /** A copy of the two nights' warehouse, for the test running. */
  const afterTwoNights = async () => (await twoNights()).copy();

  const inPlace = (warehouse: TestWarehouse, extra: { dryRun?: boolean } = {}) =>
    replayInPlace({
      warehouse,
      ...(warehouse.databaseUrl ? { databaseUrl: warehouse.databaseUrl } : {}),
      logger: silentLogger(),
      ...extra,
    });

  /** What retention does to nights before `day`: their reads go, and the bodies nothing needs. */
  async function forgetBefore(warehouse: TestWarehouse, day: string): Promise<void> {
    const db = warehouse.db;
    await sql`delete from raw_read_sets where observed_at < ${new Date(`${day}T00:00:00Z`)}`.execute(
      db,
    );
    // Retention's own rule for bodies: a delta's base stays while a delta needs it.
    await deleteUnreadBodies(db);
  }

  it('keeps history older than the raw zone exactly, and the window continues it', {
    timeout: 180_000,
  }, async () => {
    const warehouse = await afterTwoNights();
    // Upstream where the two nights left it: their second day.
    const upstream = await ownWorld();
    upstream.sandbox.advanceDays(1);
    const credential = upstream.sandbox.credentials[1]!;
    const [gone] = (await listBusinesses(upstream.api, credential)).records;
    await archiveBusiness(upstream.api, credential, gone!.id);
    upstream.sandbox.advanceDays(1);
    await nights(warehouse, upstream, 3);
    await forgetBefore(warehouse, '2026-05-03');
    const db = warehouse.db;
    const before = await documentedContent(db);
    const idsBefore = await identities(db);
    expect(await count(db, 'rank_history')).toBeGreaterThan(0);

    const result = await inPlace(warehouse);
    expect(result.windowFrom?.toISOString()).toBe('2026-05-03T04:00:00.000Z');
    expect(result.keptWhole).toEqual([]);
    // Every row, older or rebuilt, reads as it did; ids and run ids too.
    const after = await documentedContent(db);
    for (const relation of Object.keys(before)) {
      expect(after[relation], relation).toEqual(before[relation]);
    }
    expect(await identities(db)).toEqual(idsBefore);
  });

  it('--dry-run says what would change and changes nothing; the run then repairs it', async () => {
    const warehouse = await afterTwoNights();
    const db = warehouse.db;
    // A hand-made loss the raw zone can rebuild: one status history row of the last night.
    const [row] = await db
      .selectFrom('listing_status_history')
      .selectAll()
      .orderBy('observed_at', 'desc')
      .limit(1)
      .execute();
    const expected = await documentedContent(db);
    await sql`delete from listing_status_history
      where business_id = ${row!.business_id} and listing_id = ${row!.listing_id}
        and observed_at = ${row!.observed_at}`.execute(db);
    const damaged = await documentedContent(db);

    const dry = await inPlace(warehouse, { dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.changes.find((c) => c.table === 'listing_status_history')).toEqual({
      table: 'listing_status_history',
      deleted: 0,
      inserted: 1,
      updated: 0,
    });
    expect(await documentedContent(db)).toEqual(damaged);

    const done = await inPlace(warehouse);
    expect(done.changes.find((c) => c.table === 'listing_status_history')?.inserted).toBe(1);
    expect(await documentedContent(db)).toEqual(expected);
  });

  it('keeps alerts: ids, delivery, and the kinds no replay recomputes', async () => {
    const warehouse = await afterTwoNights();
    const db = warehouse.db;
    const [run] = await db.selectFrom('sync_runs').select('run_id').limit(1).execute();
    // Raised by serve and the run itself, never by a replay of reads.
    await sql`insert into alerts (kind, dedupe_key, account_name, status, detected_at, run_id)
      values ('sync_failed', 'sync_failed:kept-by-test', 'account-1', 'failed',
              '2026-05-02T05:00:00Z', ${run!.run_id}),
             ('sync_stale', 'sync_stale:kept-by-test', 'account-1', 'stale',
              '2026-05-02T06:00:00Z', null)`.execute(db);
    await sql`update alerts set delivered_at = '2026-05-02T07:00:00Z', attempts = 2,
      delivered_sinks = '["slack"]' where dedupe_key = 'sync_failed:kept-by-test'`.execute(db);
    const before = await identities(db);
    expect(before['alerts']!.length).toBeGreaterThan(2);
    await inPlace(warehouse);
    expect(await identities(db)).toEqual(before);
  });

  it('leaves the operator’s views, comments and grants usable', async () => {
    const warehouse = await afterTwoNights();
    const db = warehouse.db;
    await sql`create view team_inaccurate as
      select business_id, count(*)::int as n from listings where status = 'Inaccurate'
      group by business_id`.execute(db);
    await sql`comment on table listings is 'the BI team reads this'`.execute(db);
    const role = `bi_${randomBytes(4).toString('hex')}`;
    await sql`create role ${sql.id(role)}`.execute(db);
    try {
      await sql`grant select on listings to ${sql.id(role)}`.execute(db);
      const viewBefore = await rows(db, 'select * from team_inaccurate');
      await inPlace(warehouse);
      expect(await rows(db, 'select * from team_inaccurate')).toEqual(viewBefore);
      const { rows: comment } = await sql<{ c: string }>`
        select obj_description('listings'::regclass, 'pg_class') as c`.execute(db);
      expect(comment[0]?.c).toBe('the BI team reads this');
      const { rows: granted } = await sql<{ ok: boolean }>`
        select has_table_privilege(${role}, 'listings', 'select') as ok`.execute(db);
      expect(granted[0]?.ok).toBe(true);
      // Nothing is left beside the live schema to drop.
      const { rows: schemas } = await sql<{ n: number }>`
        select count(*)::int as n from pg_namespace where nspname like '%\\_rebuild'
          or nspname like '%\\_before\\_replay'`.execute(db);
      expect(schemas[0]?.n).toBe(0);
    } finally {
      await sql`drop owned by ${sql.id(role)}`.execute(db);
      await sql`drop role ${sql.id(role)}`.execute(db);
    }
  });

  it('replays each run with the answer bounds it recorded', async () => {
    // A world of its own, from an empty warehouse.
    const { sandbox } = await ownWorld();
    const warehouse = await createTestWarehouse(backend);
    onTestFinished(() => warehouse.close());
    // The night ran with a listings bound of 5: every listings answer was over it.
    const bounded = createApiClient({
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
      bounds: { listingsPerAnswer: 5 },
      logger: silentLogger(),
    });
    try {
      const at = nightOf(sandbox);
      const result = await sync(warehouse, bounded, sandbox.credentials, {
        now: () => at,
      });
      expect(result.status).toBe('partial');
    } finally {
      await bounded.close();
    }
    const db = warehouse.db;
    expect(await count(db, 'listings')).toBe(0);
    const { rows: recorded } = await sql<{ n: number }>`
      select (settings->'bounds'->>'listingsPerAnswer')::int as n from sync_runs`.execute(db);
    expect(recorded[0]?.n).toBe(5);
    await replay({
      warehouse,
      ...(warehouse.databaseUrl ? { databaseUrl: warehouse.databaseUrl } : {}),
      into: 'bounded_replay',
      logger: silentLogger(),
    });
    const { rows: replayed } = await sql<{ n: number }>`
      select count(*)::int as n from bounded_replay.listings`.execute(db);
    expect(replayed[0]?.n).toBe(0);
    await sql`drop schema bounded_replay cascade`.execute(db);
  });

  it('a reader inside one transaction sees the old warehouse or the new, never an empty one', async (context) => {
    const warehouse = backend === 'pglite' ? undefined : await afterTwoNights();
    if (!warehouse?.databaseUrl) {
      context.skip('PGlite has one connection: no second reader can hold a snapshot');
      return;
    }
    const db = warehouse.db;
    const listings = await count(db, 'listings');
    // Force rows to be rewritten: the rebuild updates every listing's hash back.
    await sql`update listings set content_hash = 'stale'`.execute(db);
    const reader = new pg.Client({ connectionString: warehouse.databaseUrl });
    await reader.connect();
    try {
      await reader.query('begin isolation level repeatable read');
      const first = await reader.query('select count(*)::int as n from public.listings');
      expect(first.rows[0].n).toBe(listings);
      await inPlace(warehouse);
      const second = await reader.query(
        "select count(*)::int as n, count(*) filter (where content_hash = 'stale')::int as stale from public.listings",
      );
      expect(second.rows[0]).toEqual({ n: listings, stale: listings });
      await reader.query('commit');
      const fresh = await reader.query(
        "select count(*)::int as n, count(*) filter (where content_hash = 'stale')::int as stale from public.listings",
      );
      expect(fresh.rows[0]).toEqual({ n: listings, stale: 0 });
    } finally {
      await reader.end();
    }
  });
});
