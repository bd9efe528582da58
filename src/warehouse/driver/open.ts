/**
 * Opening the configured warehouse for a command, with errors a user can act on: which
 * database (password removed), what went wrong, and what to run.
 *
 * The driver's error is kept as the `cause` only rewritten (`withoutDatabaseUrl`): pg and
 * Node's URL parser carry the connection string in their errors (`input`, `message`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { type Config, DEMO_PGLITE_DATA_DIR } from '../../config/index.ts';
import { ListingsSyncError } from '../../errors.ts';
import { redactDatabaseUrlIn, redactUrl, withoutDatabaseUrl } from '../../log.ts';
import { openWarehouse, timeoutsOf, type Warehouse } from './connection.ts';
import { describeDatabaseError } from './database-errors.ts';
import { pendingMigrations } from './migrate.ts';
import { DataDirInUseError, recordLockCommand } from './pglite/lock.ts';
import type { DatabaseTimeouts } from './timeouts.ts';

export class WarehouseUnavailableError extends ListingsSyncError {
  readonly code = 'WAREHOUSE_UNAVAILABLE';
}

/** The warehouse for messages: a database URL without its password, whatever it holds. */
export function describeWarehouse(config: Config): string {
  return config.databaseUrl
    ? `PostgreSQL at ${redactUrl(config.databaseUrl)}`
    : `the embedded PGlite database in ${config.pgliteDataDir}`;
}

function safeCause(config: Config, cause: unknown): unknown {
  return config.databaseUrl ? withoutDatabaseUrl(cause, config.databaseUrl) : cause;
}

/** A driver's error text, which may echo the URL or a part of it, made safe to print. */
function causeText(config: Config, cause: unknown, timeouts?: DatabaseTimeouts): string {
  const text = describeDatabaseError(cause, timeouts);
  return config.databaseUrl ? redactDatabaseUrlIn(text, config.databaseUrl) : text;
}

/**
 * Connections beside the business transactions: the sync lock's session, reference data,
 * quarantine and response-request writes, and in `serve` the webhook intake and the
 * alert dispatcher.
 */
const POOL_RESERVE = 4;

/**
 * The PostgreSQL pool size: one connection per business in flight (at most
 * SYNC_CONCURRENCY across credentials, each writes in its own transaction) plus
 * `POOL_RESERVE`, so businesses never queue for a connection behind each other.
 */
export function warehousePoolSize(config: Pick<Config, 'syncConcurrency'>): number {
  return config.syncConcurrency + POOL_RESERVE;
}

/** True when `dir` holds a PGlite database (PostgreSQL writes PG_VERSION when it creates one). */
export function pgliteDatabaseExists(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

export interface WarehouseTarget {
  databaseUrl?: string;
  pgliteDataDir?: string;
  /** For messages: which database, password removed. */
  description: string;
  /** True when a read fell back to the demo's warehouse (see `resolveWarehouse`). */
  demo: boolean;
}

/**
 * Which database a command uses. A command that only reads (`report`, `alerts`, `runs`,
 * `check`) with neither DATABASE_URL nor PGLITE_DATA_DIR set, and no embedded database in
 * the default directory, reads the demo's (`./.data/demo`) when `npm start` made one: so
 * the quick start's `npx listings-sync report` after `npm start` shows the demo's data.
 * Writes never fall back: sandbox data must not mix with a real account's.
 */
export type WarehouseAccess = 'read' | 'write' | 'inspect';

export function resolveWarehouse(config: Config, access: WarehouseAccess): WarehouseTarget {
  if (config.databaseUrl) {
    return { databaseUrl: config.databaseUrl, description: describeWarehouse(config), demo: false };
  }
  if (
    access === 'read' &&
    config.sources.PGLITE_DATA_DIR === 'default' &&
    !pgliteDatabaseExists(config.pgliteDataDir) &&
    pgliteDatabaseExists(DEMO_PGLITE_DATA_DIR)
  ) {
    return {
      pgliteDataDir: DEMO_PGLITE_DATA_DIR,
      description: `the demo's embedded PGlite database in ${DEMO_PGLITE_DATA_DIR}`,
      demo: true,
    };
  }
  return {
    pgliteDataDir: config.pgliteDataDir,
    description: describeWarehouse(config),
    demo: false,
  };
}

export interface OpenOptions {
  /**
   * The command holding an embedded database (`serve`): recorded beside its lock, so a
   * command refused the directory names it (src/warehouse/driver/pglite/lock.ts).
   */
  command?: string;
  /**
   * A warehouse already open for `target`, in place of the driver's: a test's own
   * (`CliServices.openWarehouse`), or undefined to open the target as usual. The target
   * is still the configuration's, for messages; a given warehouse has no directory to
   * find or lock, and its schema is still checked.
   */
  connect?: (config: Config, target: WarehouseTarget) => Promise<Warehouse | undefined>;
  /**
   * Create DATABASE_SCHEMA when it is missing (`migrate`, the copy's target); every other
   * command refuses a schema that does not exist.
   */
  createSchema?: boolean;
}

/**
 * Open the warehouse `config` names and check that it answers. With `access: 'read'`
 * (which may fall back to the demo's) or `'inspect'` (exactly the configured one, for
 * `check`), an embedded database that does not exist is an error, not an empty database
 * created as a side effect of looking.
 */
export async function openConfiguredWarehouse(
  config: Config,
  access: WarehouseAccess = 'write',
  options: OpenOptions = {},
): Promise<Warehouse & { target: WarehouseTarget }> {
  const target = resolveWarehouse(config, access);
  const given = await options.connect?.(config, target);
  if (given) return checkAnswers(config, target, given);
  if (access !== 'write' && target.pgliteDataDir && !pgliteDatabaseExists(target.pgliteDataDir)) {
    throw new WarehouseUnavailableError(
      `There is no warehouse yet: ${target.description} does not exist. ` +
        'Run `listings-sync migrate` and `listings-sync sync` to load one, `npm start` for the demo, ' +
        'or set DATABASE_URL (or PGLITE_DATA_DIR) to the warehouse to read.',
    );
  }
  const searchPath = schemaOption(config, target.databaseUrl);
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse(
      target.databaseUrl
        ? {
            databaseUrl: target.databaseUrl,
            poolSize: warehousePoolSize(config),
            timeouts: {
              connectMs: config.databaseConnectTimeoutMs,
              statementMs: config.databaseStatementTimeoutMs,
              lockMs: config.databaseLockTimeoutMs,
            },
            ...searchPath,
          }
        : {
            pgliteDataDir: target.pgliteDataDir ?? config.pgliteDataDir,
            ...searchPath,
          },
    );
  } catch (cause) {
    // The lock's refusal already names the directory, its holder and both ways out, and
    // keeps its own code (DATA_DIR_IN_USE, docs/running.md, "Error codes").
    if (cause instanceof DataDirInUseError) throw cause;
    throw new WarehouseUnavailableError(
      `Cannot open ${target.description}: ${causeText(config, cause)}`,
      { cause: safeCause(config, cause) },
    );
  }
  if (
    options.command &&
    warehouse.kind === 'pglite' &&
    target.pgliteDataDir &&
    target.pgliteDataDir !== 'memory://'
  ) {
    try {
      recordLockCommand(target.pgliteDataDir, options.command);
    } catch (cause) {
      await warehouse.close().catch(() => {});
      throw cause;
    }
  }
  if (config.databaseSchema) {
    try {
      await requireSchema(warehouse, config, target, options.createSchema === true);
    } catch (error) {
      await warehouse.close().catch(() => {});
      throw error;
    }
  }
  return checkAnswers(config, target, warehouse);
}

/**
 * DATABASE_SCHEMA as the connection's search path (docs/configuration.md,
 * DATABASE_SCHEMA). A `search_path` in DATABASE_URL's `options` would win over it
 * silently (pg reads the URL last), so the two together are refused.
 */
function schemaOption(config: Config, databaseUrl?: string): { searchPath?: string } {
  if (!config.databaseSchema) return {};
  const options = databaseUrl ? URL.parse(databaseUrl)?.searchParams.get('options') : null;
  if (options && /search_path/i.test(options)) {
    throw new WarehouseUnavailableError(
      `DATABASE_SCHEMA is set (${config.databaseSchema}) and DATABASE_URL's options set a ` +
        'search_path too: keep one of them (DATABASE_SCHEMA, docs/configuration.md).',
    );
  }
  return { searchPath: config.databaseSchema };
}

/** The schemas of the open database that hold a migrated warehouse, by name. */
export async function warehouseSchemas(warehouse: Warehouse): Promise<string[]> {
  const { rows } = await sql<{ schema: string }>`
    select table_schema as schema from information_schema.tables
     where table_name = 'kysely_migration' order by table_schema`.execute(warehouse.db);
  return rows.map((row) => row.schema);
}

/** `; the schemas of this database holding a warehouse: a, b` or that there is none. */
async function schemasHint(warehouse: Warehouse, except?: string): Promise<string> {
  const schemas = (await warehouseSchemas(warehouse)).filter((schema) => schema !== except);
  return schemas.length
    ? ` Schemas of this database that hold a warehouse: ${schemas.join(', ')}; point a command at one with DATABASE_SCHEMA=${schemas[0]}.`
    : ' No schema of this database holds a warehouse yet.';
}

/** DATABASE_SCHEMA exists in the database (created first with `create`), or a clear error. */
async function requireSchema(
  warehouse: Warehouse,
  config: Config,
  target: WarehouseTarget,
  create: boolean,
): Promise<void> {
  const schema = config.databaseSchema as string;
  const { rows } = await sql<{ found: number }>`
    select count(*)::int as found from pg_namespace where nspname = ${schema}`.execute(
    warehouse.db,
  );
  if ((rows[0]?.found ?? 0) > 0) return;
  if (create) {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(warehouse.db);
    return;
  }
  throw new WarehouseUnavailableError(
    `DATABASE_SCHEMA names the schema ${schema}, which ${target.description} does not have. ` +
      `\`listings-sync migrate\` creates it and its tables.${await schemasHint(warehouse)}`,
  );
}

/** The opened warehouse once it has answered a read of its migrations; closed if it fails. */
async function checkAnswers(
  config: Config,
  target: WarehouseTarget,
  warehouse: Warehouse,
): Promise<Warehouse & { target: WarehouseTarget }> {
  try {
    await pendingMigrations(warehouse.db);
  } catch (cause) {
    await warehouse.close().catch(() => {});
    throw new WarehouseUnavailableError(
      `Cannot reach ${target.description}: ${causeText(config, cause, timeoutsOf(warehouse.db))}. ` +
        'Check DATABASE_URL and that the server is running.',
      { cause: safeCause(config, cause) },
    );
  }
  return { ...warehouse, target };
}

/**
 * Refuse to write into a schema that is behind the code. When the schema holds no
 * warehouse at all, the message names the schemas of the same database that do (the
 * PostgreSQL demo's `listings_demo`), and how to point at one.
 */
export async function requireCurrentSchema(warehouse: Warehouse): Promise<void> {
  const pending = await pendingMigrations(warehouse.db);
  if (pending.length) {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
      warehouse.db,
    );
    const current = rows[0]?.schema ?? 'public';
    // A warehouse behind its code (an upgrade) needs `migrate`; one that is not there at
    // all may be in another schema (the PostgreSQL demo's).
    const empty = !(await warehouseSchemas(warehouse)).includes(current);
    const hint =
      warehouse.kind === 'postgres' && empty ? await schemasHint(warehouse, current) : '';
    throw new WarehouseUnavailableError(
      `The warehouse schema is not current: ${pending.length} migration(s) pending ` +
        `(${pending.join(', ')}) in schema ${current}. Run \`listings-sync migrate\` first.${hint}`,
    );
  }
}
