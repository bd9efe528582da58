/**
 * Databases for tests: every suite runs on PGlite (in memory), and on PostgreSQL too
 * when TEST_DATABASE_URL is set. Each warehouse starts as a copy of one migrated
 * template (see warehouse-template.ts): PGlite loads a dumped data directory, PostgreSQL
 * gets a database of its own, cloned from a template database and dropped on close.
 *
 *   describe.each(testBackends)('listings (%s)', (backend) => { … createTestWarehouse(backend) … })
 */
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { inject } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../../src/warehouse/driver/migrate.ts';
import { CONTRACT_TABLES } from './contract-tables.ts';
import { acquirePgliteWarehouse } from './pglite-pool.ts';
import {
  adminQuery,
  copyPgliteTemplate,
  databaseUrlFor,
  ensurePostgresTemplate,
  pgliteEmptyTemplate,
} from './warehouse-template.ts';

export type TestBackend = 'pglite' | 'postgres';

/** Read here rather than through config.ts: a test-only variable. */
const testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim() || undefined;

export const testBackends: TestBackend[] = testDatabaseUrl ? ['pglite', 'postgres'] : ['pglite'];

/**
 * `databaseUrl` and `searchPath` say where a PostgreSQL test warehouse lives, for a child
 * process or a second connection: its own database, tables in `public`.
 */
export type TestWarehouse = Warehouse & { searchPath?: string; databaseUrl?: string };

declare module 'vitest' {
  interface ProvidedContext {
    /** Names this run's PostgreSQL clones, so the global teardown finds any left behind. */
    testRunId: string;
  }
}

/** The prefix of every database this test run clones (see test/helpers/global-setup.ts). */
export function cloneDatabasePrefix(): string {
  let runId: string | undefined;
  try {
    runId = inject('testRunId');
  } catch {
    // Outside a vitest worker with the global set-up: a prefix of this process alone.
  }
  return `lst_${runId ?? `p${process.pid}`}_`;
}

/** A schema name no other test uses. */
export function freshSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/** The PostgreSQL server the tests run against; throws when TEST_DATABASE_URL is unset. */
export function requireDatabaseUrl(): string {
  if (!testDatabaseUrl) throw new Error('TEST_DATABASE_URL is not set.');
  return testDatabaseUrl;
}

export async function createSchema(schema: string): Promise<void> {
  await adminQuery(requireDatabaseUrl(), `create schema "${schema}"`);
}

export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(requireDatabaseUrl(), `drop schema if exists "${schema}" cascade`);
}

/**
 * A warehouse ready for a test: migrated unless `migrate: false` (then an empty
 * database, for the migration tests). close() drops a PostgreSQL clone.
 */
export async function createTestWarehouse(
  backend: TestBackend,
  options: {
    migrate?: boolean;
    /**
     * PostgreSQL: a warehouse in a new schema of `beside`'s database rather than a database
     * of its own, for tests of what schemas of one database share (advisory locks).
     */
    beside?: TestWarehouse;
  } = {},
): Promise<TestWarehouse> {
  const migrate = options.migrate ?? true;
  if (options.beside) return createSchemaWarehouse(options.beside, migrate);
  if (backend === 'pglite') {
    if (migrate) return acquirePgliteWarehouse();
    return openWarehouse({ memory: true, loadDataDir: await pgliteEmptyTemplate() });
  }
  return postgresWarehouseFrom(
    migrate ? await ensurePostgresTemplate(requireDatabaseUrl()) : 'template1',
  );
}

/**
 * A PostgreSQL test warehouse in a new database copied from `template` (`readOnly`: every
 * transaction in it read-only), opened; close() drops it, `disconnect()` only closes its
 * connections (a database must have none to be a template itself).
 */
export async function postgresWarehouseFrom(
  template: string,
  options: { readOnly?: boolean } = {},
): Promise<TestWarehouse & { database: string; disconnect(): Promise<void> }> {
  const serverUrl = requireDatabaseUrl();
  const database = `${cloneDatabasePrefix()}${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `create database "${database}" template "${template}"`);
  const drop = () => adminQuery(serverUrl, `drop database if exists "${database}" with (force)`);
  const databaseUrl = databaseUrlFor(serverUrl, database);
  let opened: Warehouse;
  try {
    if (options.readOnly) {
      await adminQuery(
        serverUrl,
        `alter database "${database}" set default_transaction_read_only = on`,
      );
    }
    opened = await openWarehouse({ databaseUrl, searchPath: 'public' });
  } catch (error) {
    await drop();
    throw error;
  }
  let disconnected: Promise<void> | undefined;
  const disconnect = () => {
    disconnected ??= opened.close();
    return disconnected;
  };
  return {
    ...opened,
    database,
    searchPath: 'public',
    databaseUrl,
    disconnect,
    close: async () => {
      try {
        await disconnect();
      } finally {
        await drop();
      }
    },
  };
}

async function createSchemaWarehouse(
  beside: TestWarehouse,
  migrate: boolean,
): Promise<TestWarehouse> {
  if (!beside.databaseUrl) throw new Error('`beside` must be a PostgreSQL test warehouse.');
  const databaseUrl = beside.databaseUrl;
  const schema = freshSchemaName();
  await adminQuery(databaseUrl, `create schema "${schema}"`);
  const drop = () => adminQuery(databaseUrl, `drop schema if exists "${schema}" cascade`);
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse({ databaseUrl, searchPath: schema });
    if (migrate) await migrateToLatest(warehouse.db);
  } catch (error) {
    await drop();
    throw error;
  }
  const opened = warehouse;
  return {
    ...opened,
    searchPath: schema,
    databaseUrl,
    close: async () => {
      try {
        await opened.close();
      } finally {
        await drop();
      }
    },
  };
}

/**
 * Skips the running test on PGlite, by name, with the reason in the report: for what an
 * embedded database cannot do (a second process or pool on one data directory).
 */
export function skipOnPglite(
  context: { skip(note?: string): never },
  backend: TestBackend,
  reason: string,
): void {
  if (backend !== 'pglite') return;
  // The default reporter folds skips into a count; the reason goes to the log as well.
  console.info(`skipped on PGlite: ${reason}`);
  context.skip(`not on PGlite: ${reason}`);
}

/**
 * A PGlite data directory for a child process (the CLI tests), migrated from the
 * template; with `migrate: false` nothing is written and the child creates it.
 */
export async function createPgliteDataDir(
  dir: string,
  options: { migrate?: boolean } = {},
): Promise<void> {
  if (options.migrate === false) return;
  await copyPgliteTemplate(dir);
}

/**
 * The environment that points a command (in-process or a child process) at `warehouse`:
 * PostgreSQL, its database with the test's schema first on the search path; PGlite, the
 * data directory `pgliteDir` (a command cannot share this process's in-memory PGlite).
 */
export function databaseEnv(warehouse: TestWarehouse, pgliteDir: string): Record<string, string> {
  if (warehouse.kind === 'postgres') {
    const url = new URL(warehouse.databaseUrl!);
    url.searchParams.set('options', `-c search_path=${warehouse.searchPath}`);
    return { DATABASE_URL: url.toString() };
  }
  return { PGLITE_DATA_DIR: pgliteDir };
}

/** Empties every table (identities restart), so one warehouse can serve a whole suite. */
export async function truncateAll(warehouse: Warehouse): Promise<void> {
  await sql`truncate ${sql.join(CONTRACT_TABLES.map((t) => sql.table(t)))} restart identity cascade`.execute(
    warehouse.db,
  );
}

/** The kind (`pg_class.relkind`: r, v, m, …) of a relation of the current schema; none: absent. */
export async function relationKind(db: Kysely<unknown>, name: string): Promise<string | undefined> {
  const { rows } = await sql<{ kind: string }>`
    select relkind::text as kind from pg_class
     where relname = ${name} and relnamespace = current_schema()::regnamespace`.execute(db);
  return rows[0]?.kind;
}
