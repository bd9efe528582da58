import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import { migrateToLatest, pendingMigrations } from '../../src/warehouse/driver/migrate.ts';
import { pgliteKysely } from '../../src/warehouse/driver/pglite/kysely.ts';
import { CONTRACT_TABLES } from '../helpers/contract-tables.ts';
import {
  createSchema,
  createTestWarehouse,
  dropSchema,
  freshSchemaName,
  skipOnPglite,
  testBackends,
} from '../helpers/database.ts';
import { pgliteTemplate } from '../helpers/warehouse-template.ts';

/** Every migration in the folder, in order: what a fresh warehouse must apply. */
const ALL_MIGRATIONS = readdirSync(join(import.meta.dirname, '../../migrations'))
  .filter((file) => /^\d{4}_.+\.ts$/.test(file))
  .map((file) => file.replace(/\.ts$/, ''))
  .sort();

async function tablesIn(db: Parameters<typeof migrateToLatest>[0]): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = current_schema() order by table_name`.execute(db);
  return rows.map((r) => r.table_name);
}

describe.each(testBackends)('migrations (%s)', (backend) => {
  it('apply every contract table, then find nothing to do', async () => {
    const wh = await createTestWarehouse(backend, { migrate: false });
    try {
      expect(ALL_MIGRATIONS.slice(0, 2)).toEqual(['0001_initial', '0002_alert_sinks']);
      expect(await pendingMigrations(wh.db)).toEqual(ALL_MIGRATIONS);
      expect(await migrateToLatest(wh.db)).toEqual({ applied: ALL_MIGRATIONS });
      const tables = await tablesIn(wh.db);
      for (const table of CONTRACT_TABLES) expect(tables).toContain(table);
      expect(await pendingMigrations(wh.db)).toEqual([]);
      expect(await migrateToLatest(wh.db)).toEqual({ applied: [] });
    } finally {
      await wh.close();
    }
  });

  it('answer an up-to-date warehouse from the bookkeeping alone, and anything else as the migrator does', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      // Up to date: the answer comes from reading kysely_migration, without the migrator,
      // which would first make its lock table again (a change on every start).
      await sql`drop table kysely_migration_lock`.execute(wh.db);
      expect(await pendingMigrations(wh.db)).toEqual([]);
      expect(await migrateToLatest(wh.db)).toEqual({ applied: [] });
      expect(await tablesIn(wh.db)).not.toContain('kysely_migration_lock');

      // One migration not applied: named, then applied, by the migrator (lock table back).
      const last = ALL_MIGRATIONS.at(-1) as string;
      await sql`delete from kysely_migration where name = ${last}`.execute(wh.db);
      const { down } = (await import(`../../migrations/${last}.ts`)) as {
        down: (db: unknown) => Promise<void>;
      };
      await down(wh.db);
      expect(await pendingMigrations(wh.db)).toEqual([last]);
      expect(await migrateToLatest(wh.db)).toEqual({ applied: [last] });
      expect(await tablesIn(wh.db)).toContain('kysely_migration_lock');

      // As many applied as the folder holds, but one this code does not have (a newer
      // release's): not taken for up to date; the migrator refuses, naming it.
      await sql`update kysely_migration set name = '9999_from_a_newer_release'
        where name = ${last}`.execute(wh.db);
      await expect(migrateToLatest(wh.db)).rejects.toThrow(/9999_from_a_newer_release/);
      await sql`update kysely_migration set name = ${last}
        where name = '9999_from_a_newer_release'`.execute(wh.db);

      // Every one applied, but the last before all the others (as Kysely orders them, by
      // the time each was applied): the migrator refuses, as it always did.
      await sql`update kysely_migration set timestamp = '2000-01-01T00:00:00.000Z'
        where name = ${last}`.execute(wh.db);
      await expect(migrateToLatest(wh.db)).rejects.toThrow(/corrupted migrations/);
    } finally {
      await wh.close();
    }
  });

  it('say that the search path names no schema, before anything else', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      await wh.db.connection().execute(async (db) => {
        await sql`set search_path to no_such_schema_here`.execute(db);
        try {
          await expect(pendingMigrations(db)).rejects.toThrow(/has no current schema/);
          await expect(migrateToLatest(db)).rejects.toThrow(/has no current schema/);
        } finally {
          await sql`reset search_path`.execute(db);
        }
      });
    } finally {
      await wh.close();
    }
  });

  it('create the BI indexes', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      const { rows } = await sql<{ indexname: string; indexdef: string }>`
        select indexname, indexdef from pg_indexes where schemaname = current_schema()`.execute(
        wh.db,
      );
      const byName = new Map(rows.map((r) => [r.indexname, r.indexdef]));
      expect(byName.get('rank_months_pkey')).toMatch(/\(series_id, month\)/);
      expect(byName.get('listings_status_idx')).toMatch(/\(status, business_id\)/);
      expect(byName.get('alerts_dedupe_key_key')).toMatch(/UNIQUE/);
    } finally {
      await wh.close();
    }
  });

  it('read ids, numerics, dates and timestamps as the same JS values', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      const { rows } = await sql<Record<string, unknown>>`
        select 9007199254740991::bigint as id, 4.5::numeric as rating,
          '2025-03-01'::date as day, '2025-03-01T03:00:00Z'::timestamptz as at,
          array[1, 2]::bigint[] as ids, '{"a": [1]}'::jsonb as doc`.execute(wh.db);
      expect(rows[0]).toEqual({
        id: 9007199254740991,
        rating: 4.5,
        day: '2025-03-01',
        at: new Date('2025-03-01T03:00:00Z'),
        ids: [1, 2],
        doc: { a: [1] },
      });
    } finally {
      await wh.close();
    }
  });

  it('do not race when two migrators start at once', async (context) => {
    skipOnPglite(context, backend, 'two connections on one data directory');
    const schema = freshSchemaName();
    await createSchema(schema);
    const url = process.env['TEST_DATABASE_URL'];
    const a = await openWarehouse({ databaseUrl: url, searchPath: schema });
    const b = await openWarehouse({ databaseUrl: url, searchPath: schema });
    try {
      const results = await Promise.all([migrateToLatest(a.db), migrateToLatest(b.db)]);
      expect(results.flatMap((r) => r.applied).sort()).toEqual(ALL_MIGRATIONS);
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from kysely_migration`.execute(a.db);
      expect(rows[0]?.n).toBe(ALL_MIGRATIONS.length);
    } finally {
      await a.close();
      await b.close();
      await dropSchema(schema);
    }
  });

  it.runIf(backend === 'pglite')('keep a data directory across reopenings', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'warehouse-'));
    try {
      const first = await openWarehouse({ pgliteDataDir: join(dir, 'db') });
      await migrateToLatest(first.db);
      await first.close();
      const second = await openWarehouse({ pgliteDataDir: join(dir, 'db') });
      expect(await pendingMigrations(second.db)).toEqual([]);
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('openWarehouse', () => {
  it('explains an unreachable database without its password', async () => {
    await expect(
      openWarehouse({ databaseUrl: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' }),
    ).rejects.toThrow(/cannot be reached/);
    await expect(
      openWarehouse({ databaseUrl: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' }),
    ).rejects.not.toThrow(/s3cret/);
  });

  it('a transaction on an embedded database closed under it fails, and nothing is left unheard', async () => {
    // serve's intake can begin a transaction as the PGlite closes (test/serve/webhooks.test.ts).
    const pglite = await PGlite.create({ loadDataDir: await pgliteTemplate() });
    const db = pgliteKysely(pglite);
    await sql`select 1`.execute(db);
    await pglite.close();
    const unheard: unknown[] = [];
    const listener = (reason: unknown) => unheard.push(reason);
    process.on('unhandledRejection', listener);
    try {
      // Kysely's own PGlite driver waits here for ever, its rejection unhandled.
      await expect(db.transaction().execute((trx) => sql`select 1`.execute(trx))).rejects.toThrow(
        /PGlite is closed/,
      );
      // An unhandled rejection is reported on the turn after it happens.
      await new Promise<void>((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', listener);
      await db.destroy();
    }
    expect(unheard).toEqual([]);
  });

  it('refuses a search path that is not plain schema names', async () => {
    await expect(openWarehouse({ memory: true, searchPath: 'x; drop table y' })).rejects.toThrow(
      /search path/,
    );
  });
});
