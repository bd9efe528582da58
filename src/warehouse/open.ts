/**
 * Opening the configured warehouse for a command, with errors a user can act on: which
 * database (password removed), what went wrong, and what to run.
 *
 * The driver's error is kept as the `cause` only rewritten (`withoutDatabaseUrl`): pg and
 * Node's URL parser carry the connection string in their errors (`input`, `message`).
 */
import type { Config } from '../config.ts';
import { redactDatabaseUrlIn, redactUrl, withoutDatabaseUrl } from '../log.ts';
import {
  type DatabaseTimeouts,
  describeDatabaseError,
  openWarehouse,
  timeoutsOf,
  type Warehouse,
} from './connection.ts';
import { pendingMigrations } from './migrate.ts';

export class WarehouseUnavailableError extends Error {
  readonly code = 'WAREHOUSE_UNAVAILABLE';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WarehouseUnavailableError';
  }
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
export const POOL_RESERVE = 4;

/**
 * The PostgreSQL pool size: one connection per business in flight (at most
 * SYNC_CONCURRENCY across credentials, each writes in its own transaction) plus
 * `POOL_RESERVE`, so businesses never queue for a connection behind each other.
 */
export function warehousePoolSize(config: Config): number {
  return config.syncConcurrency + POOL_RESERVE;
}

/** Open the warehouse `config` names and check that it answers. */
export async function openConfiguredWarehouse(config: Config): Promise<Warehouse> {
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse(
      config.databaseUrl
        ? {
            databaseUrl: config.databaseUrl,
            poolSize: warehousePoolSize(config),
            timeouts: {
              connectMs: config.databaseConnectTimeoutMs,
              statementMs: config.databaseStatementTimeoutMs,
              lockMs: config.databaseLockTimeoutMs,
            },
          }
        : { pgliteDataDir: config.pgliteDataDir },
    );
  } catch (cause) {
    throw new WarehouseUnavailableError(
      `Cannot open ${describeWarehouse(config)}: ${causeText(config, cause)}`,
      { cause: safeCause(config, cause) },
    );
  }
  try {
    await pendingMigrations(warehouse.db);
  } catch (cause) {
    await warehouse.close().catch(() => {});
    throw new WarehouseUnavailableError(
      `Cannot reach ${describeWarehouse(config)}: ${causeText(config, cause, timeoutsOf(warehouse.db))}. ` +
        'Check DATABASE_URL and that the server is running.',
      { cause: safeCause(config, cause) },
    );
  }
  return warehouse;
}

/** Refuse to write into a schema that is behind the code. */
export async function requireCurrentSchema(warehouse: Warehouse): Promise<void> {
  const pending = await pendingMigrations(warehouse.db);
  if (pending.length) {
    throw new WarehouseUnavailableError(
      `The warehouse schema is not current: ${pending.length} migration(s) pending ` +
        `(${pending.join(', ')}). Run \`listings-sync migrate\` first.`,
    );
  }
}
