/**
 * The simulated world the docs and report tests only read: the demo, shrunk, synced once
 * per test run and shared. The first worker to ask builds it (a lock file in the run's
 * temporary directory says which), into an in-memory PGlite it then dumps there; every
 * worker loads the dump once into a warehouse of its own that stays open for the worker's
 * life and takes no write (`default_transaction_read_only`: a test that writes to it
 * fails, rather than changing what the next one reads). The demo's own output comes with
 * it.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config/index.ts';
import { type DemoOptions, runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { pgliteKysely } from '../../src/warehouse/driver/pglite/kysely.ts';
import { pgliteParsers } from '../../src/warehouse/driver/type-parsers.ts';
import { createTestWarehouse, dropSchema, freshSchemaName, type TestBackend } from './database.ts';
import { dumpPgliteWarehouse } from './pglite-pool.ts';
import { runSharedDir } from './temporary-root.ts';

/** The shared world's shape: the demo's seed and two accounts, five businesses each. */
export const DEMO_WORLD = {
  days: 9,
  accounts: 2,
  businessesPerAccount: 5,
  /** Yesterday: the docs' examples ask for "the last 7 days" before now(). */
  endDate: new Date(Date.now() - 86_400_000).toISOString().slice(0, 10),
} as const;

export interface DemoWorld {
  /** Read-only: a write fails. */
  warehouse: Warehouse;
  /** What the demo printed. */
  lines: string[];
  startDate: string;
  endDate: string;
}

interface Built {
  lines: string[];
  startDate: string;
  endDate: string;
}

let loaded: Promise<DemoWorld> | undefined;

/** The run's shared demo world, built by whichever worker asks first. */
export function sharedDemoWorld(): Promise<DemoWorld> {
  loaded ??= load();
  return loaded;
}

async function load(): Promise<DemoWorld> {
  const dir = runSharedDir();
  mkdirSync(dir, { recursive: true });
  const dump = join(dir, 'demo-world.tar');
  const about = join(dir, 'demo-world.json');
  if (!existsSync(about)) {
    if (claim(join(dir, 'demo-world.lock'))) await build(dump, about);
    else await appears(dir, about);
  }
  const built = JSON.parse(readFileSync(about, 'utf8')) as Built;
  const pglite = await PGlite.create({
    loadDataDir: new Blob([readFileSync(dump)]),
    parsers: pgliteParsers,
  });
  const db = pgliteKysely(pglite);
  await sql`set default_transaction_read_only = on`.execute(db);
  return { warehouse: { db, kind: 'pglite', close: async () => {} }, ...built };
}

/** True for the one caller that created the lock file. */
function claim(lock: string): boolean {
  try {
    closeSync(openSync(lock, 'wx'));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

async function build(dump: string, about: string): Promise<void> {
  const warehouse = await createTestWarehouse('pglite');
  try {
    const lines: string[] = [];
    const result = await runDemo(loadConfig({}), silentLogger(), {
      ...DEMO_WORLD,
      warehouse,
      reportPath: join(runSharedDir(), 'demo-world.html'),
      write: (line) => lines.push(line),
    });
    writeWhole(dump, Buffer.from(await (await dumpPgliteWarehouse(warehouse)).arrayBuffer()));
    writeWhole(
      about,
      JSON.stringify({
        lines,
        startDate: result.startDate,
        endDate: result.endDate,
      } satisfies Built),
    );
  } finally {
    await warehouse.close();
  }
}

function writeWhole(path: string, data: string | Buffer): void {
  writeFileSync(`${path}.partial`, data);
  renameSync(`${path}.partial`, path);
}

/** Resolves once `path` exists: the builder renames it into place, whole. */
function appears(dir: string, path: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dir, () => {
      if (existsSync(path)) {
        watcher.close();
        resolve();
      }
    });
    if (existsSync(path)) {
      watcher.close();
      resolve();
    }
  });
}

/** A demo simulated into a warehouse of a test's own, and how to give it back. */
export interface SimulatedDemo {
  warehouse: Warehouse;
  /** Drops the demo's schema (PostgreSQL) or hands the warehouse back (PGlite). */
  close(): Promise<void>;
}

/**
 * The demo simulated as `npm start` does on each backend: on PostgreSQL into a fresh
 * schema of the test database (`DATABASE_URL=… npm start`), read back through a
 * connection of the test's own; on PGlite into a warehouse of the worker's pool.
 */
export async function simulatedDemo(
  backend: TestBackend,
  options: Omit<DemoOptions, 'warehouse' | 'schema' | 'databaseUrl' | 'write'>,
): Promise<SimulatedDemo> {
  if (backend === 'pglite') {
    const warehouse = await createTestWarehouse('pglite');
    await runDemo(loadConfig({}), silentLogger(), { ...options, warehouse, write: () => {} });
    return { warehouse, close: () => warehouse.close() };
  }
  const databaseUrl = process.env['TEST_DATABASE_URL']?.trim() ?? '';
  const schema = freshSchemaName();
  await runDemo(loadConfig({ DATABASE_URL: databaseUrl }), silentLogger(), {
    ...options,
    schema,
    write: () => {},
  });
  const warehouse = await openWarehouse({ databaseUrl, searchPath: schema });
  return {
    warehouse,
    close: async () => {
      await warehouse.close();
      await dropSchema(schema);
    },
  };
}
