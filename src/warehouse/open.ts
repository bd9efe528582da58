/**
 * Opening the configured warehouse for a command, with errors a user can act on: which
 * database (password removed), what went wrong, and what to run.
 */
import type { Config } from '../config.ts';
import { redactText } from '../log.ts';
import { describeDatabaseError, openWarehouse, timeoutsOf, type Warehouse } from './connection.ts';
import { pendingMigrations } from './migrate.ts';

export class WarehouseUnavailableError extends Error {
  readonly code = 'WAREHOUSE_UNAVAILABLE';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WarehouseUnavailableError';
  }
}

export function describeWarehouse(config: Config): string {
  return config.databaseUrl
    ? `PostgreSQL at ${redactText(config.databaseUrl)}`
    : `the embedded PGlite database in ${config.pgliteDataDir}`;
}

/** Open the warehouse `config` names and check that it answers. */
export async function openConfiguredWarehouse(config: Config): Promise<Warehouse> {
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse(
      config.databaseUrl
        ? {
            databaseUrl: config.databaseUrl,
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
      `Cannot open ${describeWarehouse(config)}: ${redactText((cause as Error).message)}`,
      { cause },
    );
  }
  try {
    await pendingMigrations(warehouse.db);
  } catch (cause) {
    await warehouse.close().catch(() => {});
    throw new WarehouseUnavailableError(
      `Cannot reach ${describeWarehouse(config)}: ${redactText(describeDatabaseError(cause, timeoutsOf(warehouse.db)))}. ` +
        'Check DATABASE_URL and that the server is running.',
      { cause },
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
