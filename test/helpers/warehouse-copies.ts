/**
 * A warehouse a test file builds once (a first sync, a few nights) and then hands out:
 * read-only to the tests that only read it, and as a copy of its own to each test that
 * writes, so that no test pays for the build again and none sees another's writes
 * (docs/development.md, "A new test file": a test that writes works on a copy).
 *
 * PGlite: the build runs in a warehouse of the worker's pool, which the readers then share
 * with `default_transaction_read_only` on (a write fails instead of changing what the next
 * test reads). A copy is another warehouse of the pool with the build's rows put in, table
 * by table (a sync's world in 0.1–0.3 s of CPU, where a new instance from the build's dump,
 * clonePgliteWarehouse, costs about 1 s: more than a first sync of a dozen businesses); a
 * build that changed the catalog is copied by clonePgliteWarehouse. The copy's rows are
 * the build's, not its physical row versions, and its planner starts without statistics.
 *
 * PostgreSQL: the build runs in a database of its own, made as createTestWarehouse makes
 * its clones (postgresWarehouseFrom: a crashed run's are dropped with theirs), whose
 * connections are closed once it is built so that it can be a template: the readers share
 * one copy of it, read-only (`alter database … set default_transaction_read_only`), and
 * each copy is a `CREATE DATABASE … TEMPLATE` of it, dropped on close.
 *
 *   const night = sharedBuild(backend, (warehouse) => sync(warehouse, api, credentials));
 *   it('reads', async () => { const { reader, built } = await night(); … });
 *   it('writes', async () => { const warehouse = await (await night()).copy(); … });
 */
import { type Kysely, sql } from 'kysely';
import { afterAll, onTestFinished } from 'vitest';
import type { Database } from '../../src/warehouse/database.ts';
import {
  createTestWarehouse,
  postgresWarehouseFrom,
  requireDatabaseUrl,
  type TestBackend,
  type TestWarehouse,
} from './database.ts';
import { clonePgliteWarehouse } from './pglite-pool.ts';
import { ensurePostgresTemplate } from './warehouse-template.ts';

export interface BuiltWarehouse<T> {
  /** What the build returned (a sync's result, say). */
  readonly built: T;
  /**
   * The built warehouse, for tests that only read it: a write fails. Its close() does
   * nothing. A build made with `readers: false` has none (reading it throws).
   */
  readonly reader: TestWarehouse;
  /**
   * A copy of the built warehouse for a test that writes, closed (a PostgreSQL one dropped)
   * when the test calling it finishes.
   */
  copy(): Promise<TestWarehouse>;
  close(): Promise<void>;
}

export interface BuildOptions {
  /**
   * False when no test reads the build itself, only copies: PGlite then hands the build's
   * instance back to the pool at once (the copies take it), rather than holding one more.
   */
  readers?: boolean;
}

/** Builds a warehouse with `build` on `backend`, to be read and copied (see above). */
export async function buildWarehouse<T>(
  backend: TestBackend,
  build: (warehouse: TestWarehouse) => Promise<T>,
  options: BuildOptions = {},
): Promise<BuiltWarehouse<T>> {
  return backend === 'pglite' ? buildPglite(build, options) : buildPostgres(build, options);
}

/**
 * A build made the first time a test of the describe block asks for it (so a test run
 * alone builds only what it reads) and closed after the block's last test. Call inside
 * the describe block.
 */
export function sharedBuild<T>(
  backend: TestBackend,
  build: (warehouse: TestWarehouse) => Promise<T>,
  options: BuildOptions = {},
): () => Promise<BuiltWarehouse<T>> {
  let made: Promise<BuiltWarehouse<T>> | undefined;
  afterAll(async () => {
    const building = made;
    made = undefined;
    await (await building?.catch(() => undefined))?.close();
  });
  return () => {
    made ??= buildWarehouse(backend, build, options);
    return made;
  };
}

/**
 * A copy of `warehouse` (one of the PGlite pool's) as it is now, for a test that carries on
 * from one state: its rows put into another warehouse of the pool, as `copy()` does above
 * (clonePgliteWarehouse when its catalog is not the template's). The caller closes it.
 */
export async function copyPgliteWarehouse(warehouse: TestWarehouse): Promise<TestWarehouse> {
  return copyPglite(await pgliteRows(warehouse.db), warehouse);
}

function closedWithTest(warehouse: TestWarehouse): TestWarehouse {
  try {
    onTestFinished(() => warehouse.close());
  } catch {
    // Outside a test (a hook): the caller closes it.
  }
  return warehouse;
}

/** A PGlite warehouse's rows, as copyPglite puts them into another. */
interface PgliteRows {
  /** The catalog they fit (see catalogShape). */
  shape: string;
  tables: { name: string; columns: string[]; rows: string }[];
  sequences: { name: string; at: string; called: boolean }[];
}

async function buildPglite<T>(
  build: (warehouse: TestWarehouse) => Promise<T>,
  options: BuildOptions,
): Promise<BuiltWarehouse<T>> {
  const source = await createTestWarehouse('pglite');
  const readers = options.readers ?? true;
  let built: T;
  let rows: PgliteRows;
  try {
    built = await build({ ...source, close: async () => {} });
    rows = await pgliteRows(source.db);
    // Session-wide: the pool's reset (DISCARD ALL) clears it when the build is closed.
    if (readers) await sql`set default_transaction_read_only = on`.execute(source.db);
  } catch (error) {
    await source.close();
    throw error;
  }
  if (!readers) await source.close();
  const snapshot = rows;
  return {
    built,
    get reader(): TestWarehouse {
      if (!readers) throw new Error('built with `readers: false`: copy() it instead');
      return { ...source, close: async () => {} };
    },
    copy: async () => closedWithTest(await copyPglite(snapshot, readers ? source : undefined)),
    close: () => source.close(),
  };
}

/** The columns of every relation of `public`, and its sequences: what rows fit into. */
async function catalogShape(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ shape: string }>`
    select md5(string_agg(concat_ws(':', c.relname, c.relkind::text, a.attnum, a.attname,
             a.atttypid, a.attgenerated, a.attidentity), ',' order by c.relname, a.attnum)) as shape
      from pg_class c left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0
       and not a.attisdropped
     where c.relnamespace = 'public'::regnamespace`.execute(db);
  return rows[0]?.shape ?? '';
}

/**
 * Every row of every table of `public` but the migrator's own (the same in every
 * warehouse of the pool), as JSON, and every sequence's position.
 */
async function pgliteRows(db: Kysely<Database>): Promise<PgliteRows> {
  const { rows: tables } = await sql<{ name: string; columns: string[] }>`
    select c.relname as name, array_agg(a.attname::text order by a.attnum) as columns
      from pg_class c join pg_attribute a on a.attrelid = c.oid
     where c.relnamespace = 'public'::regnamespace and c.relkind = 'r'
       and c.relname not like 'kysely\\_migration%'
       and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
     group by c.relname order by c.relname`.execute(db);
  const snapshot: PgliteRows = { shape: await catalogShape(db), tables: [], sequences: [] };
  for (const { name, columns } of tables) {
    const { rows } = await sql<{ rows: string | null }>`
      select json_agg(t)::text as rows from ${sql.table(name)} t`.execute(db);
    const data = rows[0]?.rows;
    if (data) snapshot.tables.push({ name, columns, rows: data });
  }
  const { rows: sequences } = await sql<{ name: string }>`
    select relname as name from pg_class
     where relnamespace = 'public'::regnamespace and relkind = 'S'`.execute(db);
  for (const { name } of sequences) {
    const { rows } = await sql<{ at: string; called: boolean }>`
      select last_value::text as at, is_called as called from ${sql.table(name)}`.execute(db);
    if (rows[0]) snapshot.sequences.push({ name, ...rows[0] });
  }
  return snapshot;
}

/**
 * A warehouse of the pool holding the snapshot's rows, inserted as they were (identities
 * included) with triggers and foreign keys off while they go in (`session_replication_role`,
 * as a restore does), and its sequences where the snapshot's were. When the snapshot's
 * catalog is not the template's (the build changed it), a new instance from the dump of
 * `source` (clonePgliteWarehouse), which the build must then have kept.
 */
async function copyPglite(snapshot: PgliteRows, source?: TestWarehouse): Promise<TestWarehouse> {
  const target = await createTestWarehouse('pglite');
  try {
    if ((await catalogShape(target.db)) !== snapshot.shape) {
      await target.close();
      if (!source) throw new Error('the build changed the catalog: build it with readers');
      return await clonePgliteWarehouse(source);
    }
    await target.db.connection().execute(async (db) => {
      await sql`set session_replication_role = replica`.execute(db);
      try {
        for (const { name, columns, rows } of snapshot.tables) {
          const list = sql.join(columns.map((column) => sql.id(column)));
          await sql`insert into ${sql.table(name)} (${list}) overriding system value
            select ${list} from json_populate_recordset(null::${sql.table(name)}, ${rows}::json)`.execute(
            db,
          );
        }
        for (const { name, at, called } of snapshot.sequences) {
          await sql`select setval(${name}::regclass, ${at}::bigint, ${called})`.execute(db);
        }
      } finally {
        await sql`set session_replication_role = origin`.execute(db);
      }
    });
    return target;
  } catch (error) {
    await target.close();
    throw error;
  }
}

async function buildPostgres<T>(
  build: (warehouse: TestWarehouse) => Promise<T>,
  options: BuildOptions,
): Promise<BuiltWarehouse<T>> {
  const source = await postgresWarehouseFrom(await ensurePostgresTemplate(requireDatabaseUrl()));
  let built: T;
  let reader: TestWarehouse | undefined;
  try {
    const { database: _, disconnect: __, ...warehouse } = source;
    built = await build({ ...warehouse, close: async () => {} });
    // Nobody may be connected to a database while it is copied.
    await source.disconnect();
    if (options.readers ?? true)
      reader = await postgresWarehouseFrom(source.database, { readOnly: true });
  } catch (error) {
    await source.close();
    throw error;
  }
  const shared = reader;
  return {
    built,
    get reader(): TestWarehouse {
      if (!shared) throw new Error('built with `readers: false`: copy() it instead');
      return { ...shared, close: async () => {} };
    },
    copy: async () => closedWithTest(await postgresWarehouseFrom(source.database)),
    close: async () => {
      try {
        await shared?.close();
      } finally {
        await source.close();
      }
    },
  };
}
