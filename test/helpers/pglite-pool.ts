/**
 * The worker's PGlite warehouses: opened once per worker process and handed to one test
 * at a time, reset in between, instead of a new PGlite per test.
 *
 * Starting a PGlite from the migrated dump costs about 0.5 s of CPU (the WebAssembly
 * module's start, then the dump unpacked file by file into its in-memory file system);
 * resetting one a test has used costs about 20–50 ms. A reset rolls back what the test left
 * open, discards the session's state (settings, advisory locks, prepared statements,
 * temporary tables), empties every table that holds a row (`TRUNCATE … RESTART IDENTITY`),
 * restarts every sequence and forgets the planner statistics and sizes a test's ANALYZE
 * gathered; so the next test sees exactly the migrated template. A test that changed the schema
 * itself (a migration run down, a replay that swapped tables in, an index of its own) is
 * seen by a fingerprint of the catalog taken when the instance was opened: that
 * instance is closed and a fresh one opened from the dump, never reused.
 *
 * Several may be out at once (a test that replays one warehouse into another): the pool
 * grows to what the busiest test held, and keeps them for the next.
 */
import { PGlite } from '@electric-sql/pglite';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/warehouse/database.ts';
import { pgliteKysely } from '../../src/warehouse/driver/pglite/kysely.ts';
import { pgliteParsers } from '../../src/warehouse/driver/type-parsers.ts';
import type { TestWarehouse } from './database.ts';
import { pgliteTemplate } from './warehouse-template.ts';

interface Pooled {
  pglite: PGlite;
  db: Kysely<Database>;
  /** The catalog as the template left it (see `catalogFingerprint`). */
  fingerprint: string;
  /** The planner's sizes of the relations as the template left them (see `plannerSizes`). */
  sizes: string;
  busy: boolean;
}

const pool: Pooled[] = [];

/**
 * Every user-made object a test could create, change or drop, by identity: relations
 * (oid, name, kind, column count, schema), their columns' types, schemas, constraints,
 * functions, triggers, rules (views), roles and extensions. Temporary schemas are left
 * out: one appears the first time a session makes a temporary table, and `DISCARD ALL`
 * empties it.
 */
const CATALOG_FINGERPRINT = sql<{ fingerprint: string }>`
  select md5(string_agg(item, ',' order by item)) as fingerprint from (
    select concat_ws(':', 'c', c.oid, c.relname, c.relkind::text, c.relnatts, c.relnamespace) as item
      from pg_class c
     where c.relnamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
       and c.relpersistence <> 't'
    union all select concat_ws(':', 'n', oid, nspname) from pg_namespace
     where nspname not like 'pg_temp%' and nspname not like 'pg_toast_temp%'
    union all select concat_ws(':', 'a', a.attrelid, a.attnum, a.atttypid, a.attnotnull, a.attisdropped)
      from pg_attribute a join pg_class c on c.oid = a.attrelid
     where c.relnamespace = 'public'::regnamespace and a.attnum > 0
    union all select concat_ws(':', 'k', oid) from pg_constraint
    union all select concat_ws(':', 'p', oid) from pg_proc
     where pronamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    union all select concat_ws(':', 't', oid) from pg_trigger
    union all select concat_ws(':', 'r', oid) from pg_rewrite
    union all select concat_ws(':', 'o', oid) from pg_authid
    union all select concat_ws(':', 'e', oid) from pg_extension
  ) catalog`;

async function catalogFingerprint(db: Kysely<Database>): Promise<string> {
  const { rows } = await CATALOG_FINGERPRINT.execute(db);
  return rows[0]?.fingerprint ?? '';
}

/**
 * The sizes the planner reads off `pg_class` for every relation of `public` (`reltuples`,
 * `relpages`, `relallvisible`), as JSON. An ANALYZE or VACUUM sets them, and a TRUNCATE
 * does not put them back: a test's `analyze` of empty tables would tell the next test's
 * planner that they hold no rows (an index chosen otherwise than on the template).
 */
async function plannerSizes(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ sizes: string }>`
    select coalesce(json_agg(json_build_object('oid', oid, 'reltuples', reltuples,
             'relpages', relpages, 'relallvisible', relallvisible)), '[]')::text as sizes
      from pg_class where relnamespace = 'public'::regnamespace`.execute(db);
  return rows[0]?.sizes ?? '[]';
}

/** The tables of `public` that hold at least one row (the migrations' own log aside). */
async function tablesWithRows(db: Kysely<Database>): Promise<string[]> {
  const { rows: tables } = await sql<{ name: string }>`
    select relname as name from pg_class
     where relkind in ('r', 'p') and relnamespace = 'public'::regnamespace
       and relname not like 'kysely\\_migration%'`.execute(db);
  if (tables.length === 0) return [];
  const probes = tables.map(
    ({ name }) => sql`select ${name}::text as name where exists (select 1 from ${sql.table(name)})`,
  );
  const { rows } = await sql<{ name: string }>`${sql.join(probes, sql` union all `)}`.execute(db);
  return rows.map((row) => row.name);
}

/** The PGlite behind each warehouse of the pool, for `clonePgliteWarehouse`. */
const pglites = new WeakMap<Kysely<Database>, PGlite>();

async function open(dump?: Blob): Promise<Pooled> {
  const pglite = await PGlite.create({
    loadDataDir: dump ?? (await pgliteTemplate()),
    parsers: pgliteParsers,
  });
  const db = pgliteKysely(pglite);
  pglites.set(db, pglite);
  return {
    pglite,
    db,
    fingerprint: await catalogFingerprint(db),
    sizes: await plannerSizes(db),
    busy: true,
  };
}

async function discard(entry: Pooled): Promise<void> {
  pool.splice(pool.indexOf(entry), 1);
  await entry.db.destroy().catch(() => {});
  if (!entry.pglite.closed) await entry.pglite.close().catch(() => {});
}

/**
 * Puts `entry` back as the template left it, or answers false when that is not possible
 * (its catalog changed, or a statement failed): the caller then opens another.
 */
async function reset(entry: Pooled): Promise<boolean> {
  try {
    // Fails inside a transaction block: a test that left one open costs its instance.
    await entry.pglite.exec('discard all');
    // The prepared statements went with the session's state: a new Kysely (its driver
    // names statements afresh; pglite/kysely.ts). The old one is dropped, not destroyed:
    // destroying it would close the PGlite.
    pglites.delete(entry.db);
    entry.db = pgliteKysely(entry.pglite);
    pglites.set(entry.db, entry.pglite);
    if ((await catalogFingerprint(entry.db)) !== entry.fingerprint) return false;
    const tables = await tablesWithRows(entry.db);
    if (tables.length > 0) {
      await sql`truncate ${sql.join(tables.map((t) => sql.table(t)))} restart identity cascade`.execute(
        entry.db,
      );
    }
    await sql`select setval(s.seqrelid, s.seqstart, false) from pg_sequence s
               join pg_class c on c.oid = s.seqrelid
              where c.relnamespace = 'public'::regnamespace`.execute(entry.db);
    await sql`delete from pg_statistic s using pg_class c
               where c.oid = s.starelid and c.relnamespace = 'public'::regnamespace`.execute(
      entry.db,
    );
    await sql`update pg_class c
                 set reltuples = v.reltuples, relpages = v.relpages, relallvisible = v.relallvisible
                from json_to_recordset(${entry.sizes}::json)
                  as v(oid oid, reltuples real, relpages int, relallvisible int)
               where c.oid = v.oid
                 and (c.reltuples, c.relpages, c.relallvisible)
                     is distinct from (v.reltuples, v.relpages, v.relallvisible)`.execute(entry.db);
    return true;
  } catch {
    return false;
  }
}

/** The data directory of `warehouse` (one of the pool's) as it is now, dumped. */
export async function dumpPgliteWarehouse(warehouse: TestWarehouse): Promise<Blob> {
  const source = pglites.get(warehouse.db);
  if (!source) throw new Error('not a warehouse of the PGlite pool');
  return source.dumpDataDir('none');
}

/**
 * A copy of `warehouse` (one of the pool's) as it is now, for a test that carries on from
 * one state in two ways: a new instance from its dump. Its `close()` hands it to the pool
 * like any other, with the template's fingerprint: a copy of a changed catalog is
 * discarded at its next reset.
 */
export async function clonePgliteWarehouse(warehouse: TestWarehouse): Promise<TestWarehouse> {
  const entry = await open(await dumpPgliteWarehouse(warehouse));
  entry.fingerprint = templateFingerprint ?? entry.fingerprint;
  entry.sizes = templateSizes ?? entry.sizes;
  pool.push(entry);
  return lend(entry);
}

/**
 * A migrated, empty PGlite warehouse for one test, from the worker's pool. Its `close()`
 * hands it back; the next test to take it finds it reset.
 */
export async function acquirePgliteWarehouse(): Promise<TestWarehouse> {
  let entry: Pooled | undefined;
  for (const candidate of pool.filter((e) => !e.busy)) {
    candidate.busy = true;
    if (await reset(candidate)) {
      entry = candidate;
      break;
    }
    await discard(candidate);
  }
  if (!entry) {
    entry = await open();
    templateFingerprint ??= entry.fingerprint;
    templateSizes ??= entry.sizes;
    pool.push(entry);
  }
  return lend(entry);
}

/** The catalog of a fresh instance of the template, once one was opened. */
let templateFingerprint: string | undefined;
/** Its planner's sizes, likewise. */
let templateSizes: string | undefined;

function lend(entry: Pooled): TestWarehouse {
  let closed = false;
  return {
    db: entry.db,
    kind: 'pglite',
    close: async () => {
      if (closed) return;
      closed = true;
      entry.busy = false;
    },
  };
}
