/**
 * `replay --in-place` (docs/replay.md, "Replay in place"): the live warehouse rebuilt
 * from its raw zone in one transaction, under the sync lock. After it, every documented
 * table and view reads as before, the run history and raw zone are the same rows, alert
 * identity and delivery are kept, and nothing is left beside the live schema, so that it
 * can run again.
 */
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { archiveBusiness, listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { ReplayLockedError, replayInPlace, scratchSchema } from '../../src/replay/in-place.ts';
import { NIGHTLY_LOCK_KEY } from '../../src/sync/run.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/runs/sync-lock.ts';
import { testBackends } from '../helpers/database.ts';
import { documentedContent } from '../raw/documented-content.ts';
import { nightOf, sync, type WorldShape, worldPerTest } from '../sync/harness.ts';

const WORLD: WorldShape = {
  seed: 29,
  accounts: 2,
  businessesPerAccount: 3,
  startDate: '2026-04-01',
};

// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
async function rows(db: Kysely<any>, query: string): Promise<string[]> {
  const { rows } = await sql<{ row: string }>`
    select row_to_json(t)::text as row from (${sql.raw(query)}) t order by 1`.execute(db);
  return rows.map((r) => r.row);
}

/** What `documentedContent` leaves out and in-place keeps: runs, run ids, raw zone, delivery. */
// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
async function keptAsTheyWere(db: Kysely<any>): Promise<Record<string, string[]>> {
  return {
    sync_runs: await rows(db, 'select * from sync_runs'),
    raw_reads: await rows(db, 'select * from raw_reads'),
    raw_bodies: await rows(db, 'select body_hash, encoding, size, md5(bytes) from raw_bodies'),
    business_versions: await rows(
      db,
      'select business_id, observed_at, content_hash, run_id from business_versions',
    ),
    listing_status_history: await rows(
      db,
      'select listing_id, observed_at, status, run_id from listing_status_history',
    ),
    alerts: await rows(
      db,
      'select alert_id, dedupe_key, run_id, delivered_at, attempts from alerts',
    ),
  };
}

describe.each(testBackends)('replay --in-place (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  async function night(): Promise<void> {
    const at = nightOf(world.sandbox);
    expect(
      (await sync(world.warehouse, world.api, world.sandbox.credentials, { now: () => at })).status,
    ).toBe('succeeded');
  }

  it('rebuilds the live warehouse: every documented view, run and read as before, in one transaction', async () => {
    await night();
    world.sandbox.advanceDays(1);
    await night();
    const credential = world.sandbox.credentials[1]!;
    const [gone] = (await listBusinesses(world.api, credential)).records;
    await archiveBusiness(world.api, credential, gone!.id);
    world.sandbox.advanceDays(1);
    await night();

    const live = await currentSchemaOf(world.warehouse.db);
    const before = await documentedContent(world.warehouse.db);
    expect(before['alerts']!.length).toBeGreaterThan(1);
    expect(before['businesses']!.some((row) => JSON.parse(row).archived_at !== null)).toBe(true);
    // One alert was delivered before, the others are pending: each keeps its state.
    const [delivered] = await world.warehouse.db
      .selectFrom('alerts')
      .select('dedupe_key')
      .orderBy('dedupe_key')
      .limit(1)
      .execute();
    await sql`update alerts set delivered_at = '2026-04-03T05:00:00Z', attempts = 1
      where dedupe_key = ${delivered!.dedupe_key}`.execute(world.warehouse.db);
    // An alert the rebuild will not raise again, and one it raises that the schema lacks.
    const [missing] = await world.warehouse.db
      .selectFrom('alerts')
      .select('dedupe_key')
      .orderBy('dedupe_key', 'desc')
      .limit(1)
      .execute();
    await sql`delete from alerts where dedupe_key = ${missing!.dedupe_key}`.execute(
      world.warehouse.db,
    );
    const beforeRows = await keptAsTheyWere(world.warehouse.db);

    const result = await replayInPlace({
      warehouse: world.warehouse,
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      logger: silentLogger(),
    });
    expect(result.runs).toBe(3);
    expect(result.schema).toBe(live);
    expect(result.keptWhole).toEqual([]);

    // The same schema name now holds the rebuilt tables: equal to what BI read before.
    expect(await currentSchemaOf(world.warehouse.db)).toBe(live);
    // The alert deleted above is raised again (closed undelivered: no sink hears old news),
    // so every relation equals the live nights' own, before that deletion.
    const after = await documentedContent(world.warehouse.db);
    for (const relation of Object.keys(before)) {
      expect(after[relation], relation).toEqual(before[relation]);
    }
    const afterRows = await keptAsTheyWere(world.warehouse.db);
    for (const key of ['sync_runs', 'raw_reads', 'raw_bodies', 'business_versions'] as const) {
      expect(afterRows[key], key).toEqual(beforeRows[key]);
    }
    // Every alert the warehouse had keeps its id and delivery; the re-raised one is added.
    expect(afterRows['alerts']!.filter((row) => !row.includes(missing!.dedupe_key))).toEqual(
      beforeRows['alerts'],
    );
    expect(afterRows['listing_status_history']).toEqual(beforeRows['listing_status_history']);
    const alerts = await world.warehouse.db
      .selectFrom('alerts')
      .select(['dedupe_key', 'delivered_at', 'attempts', 'last_error'])
      .execute();
    const byKey = new Map(alerts.map((a) => [a.dedupe_key, a]));
    expect(new Date(byKey.get(delivered!.dedupe_key)!.delivered_at as Date).toISOString()).toBe(
      '2026-04-03T05:00:00.000Z',
    );
    // The note docs/replay.md ("Replay in place") gives, word for word.
    expect(byKey.get(missing!.dedupe_key)!.last_error).toBe(
      'recomputed by replay --in-place for a past night; not delivered',
    );
    expect(byKey.get(missing!.dedupe_key)!.delivered_at).not.toBeNull();
    const pending = alerts.filter((a) => a.delivered_at === null).length;
    expect(pending).toBe(before['alerts']!.length - 2);
    // No replay run is left behind, nor any schema beside the live one.
    const { rows: triggers } = await sql<{ trigger: string }>`
      select distinct trigger from sync_runs`.execute(world.warehouse.db);
    expect(triggers.map((t) => t.trigger)).not.toContain('replay');
    const { rows: leftover } = await sql<{ nspname: string }>`
      select nspname from pg_namespace where nspname like ${`${live}\\_%`}`.execute(
      world.warehouse.db,
    );
    expect(leftover).toEqual([]);
    expect(scratchSchema(live)).toBe(`${live}_rebuild`);

    // A sync after it writes the rebuilt warehouse, under the same lock key.
    world.sandbox.advanceDays(1);
    await night();
    const runs = await world.warehouse.db.selectFrom('sync_runs').select('run_id').execute();
    expect(runs.length).toBe(4);

    // It runs again (on PGlite too: nothing is left to drop), and changes nothing now.
    const documentedNow = await documentedContent(world.warehouse.db);
    const again = await replayInPlace({
      warehouse: world.warehouse,
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      logger: silentLogger(),
    });
    expect(again.runs).toBe(4);
    expect(await documentedContent(world.warehouse.db)).toEqual(documentedNow);
  });

  it('refuses while a sync holds the lock, and leaves nothing behind', async () => {
    await night();
    const before = await documentedContent(world.warehouse.db);
    const live = await currentSchemaOf(world.warehouse.db);
    // A shard of a night holds the nightly key shared: that is a sync running too.
    const lock = await tryAcquireSyncLock(world.warehouse, {
      shared: [NIGHTLY_LOCK_KEY],
      exclusive: [`${NIGHTLY_LOCK_KEY}:shard:1/2`],
    });
    expect(lock).not.toBeNull();
    try {
      const error = await replayInPlace({
        warehouse: world.warehouse,
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
        logger: silentLogger(),
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReplayLockedError);
      expect((error as Error).message).toBe(
        `A sync is running against schema "${live}" (it holds the sync lock); replay --in-place ` +
          'would miss what it writes, so it did not start. Wait for the sync to finish and run again.',
      );
    } finally {
      await lock!.release();
    }
    const { rows: schemas } = await sql<{ nspname: string }>`
      select nspname from pg_namespace where nspname like ${`${live}_%`}`.execute(
      world.warehouse.db,
    );
    expect(schemas).toEqual([]);
    expect(await documentedContent(world.warehouse.db)).toEqual(before);
  });
});

async function currentSchemaOf(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(db);
  return rows[0]!.s;
}
