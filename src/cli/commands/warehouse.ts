/**
 * `listings-sync warehouse copy [--from <pglite-dir>] [--to <postgres-url>] [--replace]`:
 * copies an embedded PGlite warehouse into PostgreSQL, every table, and verifies it table
 * by table (src/warehouse/driver/copy.ts; docs/backup-restore.md, "Moving from PGlite to
 * PostgreSQL"). The source is only read; the target is migrated, then written in one
 * transaction that commits only once the counts and content hashes match.
 */
import type { Command } from 'commander';
import type { Config } from '../../config/index.ts';
import { redactDatabaseUrlIn } from '../../log.ts';
import { renderTable } from '../../text-table.ts';
import { UsageError } from '../../usage-error.ts';
import type { CopyProgress, TableComparison } from '../../warehouse/driver/copy.ts';
import { describeDatabaseError } from '../../warehouse/driver/database-errors.ts';
import {
  describeWarehouse,
  openConfiguredWarehouse,
  pgliteDatabaseExists,
  WarehouseUnavailableError,
} from '../../warehouse/driver/open.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';

/** Seconds between progress lines within one long table: often enough to see a stall. */
const PROGRESS_INTERVAL_MS = 10_000;

interface CopyOptions {
  from?: string;
  to?: string;
  replace?: boolean;
}

/**
 * `--to`: a postgres:// URL. Checked here rather than by commander, whose message repeats
 * the value, password and all.
 */
function requirePostgresUrl(value: string): string {
  if (!/^postgres(ql)?:\/\//.test(value.trim())) {
    throw new UsageError('--to must be a postgres:// or postgresql:// URL.');
  }
  return value.trim();
}

export function registerWarehouseCommand(program: Command, io: CliIo): void {
  const warehouse = program
    .command('warehouse')
    .description('Move a warehouse: copy the embedded PGlite database into PostgreSQL.');
  warehouse
    .command('copy')
    .description(
      'Copy a PGlite warehouse (every table: history, raw zone, alerts, runs) into PostgreSQL, ' +
        'in one transaction, and verify each table by row count and content hash.',
    )
    .option('--from <dir>', 'the PGlite data directory to copy (default: PGLITE_DATA_DIR)')
    .option(
      '--to <postgres-url>',
      'the PostgreSQL warehouse to fill (default: DATABASE_URL, which keeps the password ' +
        'out of the process list)',
    )
    .option(
      '--replace',
      "empty the target's warehouse tables first, in the same transaction (without it, a " +
        'target holding any row is refused)',
    )
    .action(async (options: CopyOptions) => {
      io.exitCode = await runWarehouseCopy(io, options);
    });
}

/** `7 of 120,000`: counts as people read them. */
const count = (n: number) => n.toLocaleString('en-US');

async function runWarehouseCopy(io: CliIo, options: CopyOptions): Promise<number> {
  const config = loadCommandConfig(io, 'warehouse');
  const logger = createCommandLogger(io, config);
  const to = options.to === undefined ? config.databaseUrl : requirePostgresUrl(options.to);
  if (!to) {
    throw new UsageError(
      'warehouse copy needs a PostgreSQL target: set DATABASE_URL to it (or pass --to ' +
        'postgres://…; a URL on the command line shows in the process list).',
    );
  }
  const from = options.from ?? config.pgliteDataDir;
  // DATABASE_SCHEMA names the target's schema; the embedded source is read as it is.
  const sourceConfig: Config = {
    ...config,
    databaseUrl: undefined,
    databaseSchema: undefined,
    pgliteDataDir: from,
  };
  // A migration may rewrite a year of history, and the copy's statements read whole
  // tables: no statement timeout on the target. The connect and lock timeouts still hold.
  const targetConfig: Config = { ...config, databaseUrl: to, databaseStatementTimeoutMs: 0 };
  const source = describeWarehouse(sourceConfig);
  const target = describeWarehouse(targetConfig);
  if (!pgliteDatabaseExists(from)) {
    throw new WarehouseUnavailableError(
      `There is no PGlite warehouse to copy in ${from}. Pass --from with its data directory ` +
        '(PGLITE_DATA_DIR; `npm start` keeps the demo in ./.data/demo).',
    );
  }

  const { copyWarehouse, WarehouseCopyError } = await import('../../warehouse/driver/copy.ts');
  const { migrateToLatest, pendingMigrations } = await import('../../warehouse/driver/migrate.ts');
  const sourceWarehouse = await openConfiguredWarehouse(sourceConfig, 'inspect');
  try {
    const pending = await pendingMigrations(sourceWarehouse.db);
    if (pending.length > 0) {
      throw new WarehouseUnavailableError(
        `${source} is behind this release of listings-sync (${pending.length} migration(s) ` +
          `pending). Bring it up to date first, then copy: DATABASE_URL= PGLITE_DATA_DIR=${from} ` +
          'listings-sync migrate',
      );
    }
    const targetWarehouse = await openConfiguredWarehouse(targetConfig, 'write', {
      createSchema: true,
    });
    try {
      const { applied } = await migrateToLatest(targetWarehouse.db);
      if (applied.length > 0) {
        io.stdout(`Applied ${applied.length} migration(s) to ${target}.\n`);
      }
      io.stdout(`Copying ${source} into ${target}.\n`);
      let lastLine = io.now().getTime();
      const onProgress = (progress: CopyProgress) => {
        const now = io.now().getTime();
        if (progress.done) {
          logger.info(
            { table: progress.table, rows: progress.copied },
            `copied ${progress.table}: ${count(progress.copied)} rows`,
          );
          lastLine = now;
        } else if (now - lastLine >= PROGRESS_INTERVAL_MS) {
          logger.info(
            { table: progress.table, rows: progress.copied, total: progress.total },
            `copying ${progress.table}: ${count(progress.copied)} of ${count(progress.total)} rows`,
          );
          lastLine = now;
        }
      };
      let result: Awaited<ReturnType<typeof copyWarehouse>>;
      try {
        result = await copyWarehouse(sourceWarehouse.db, targetWarehouse.db, {
          replace: options.replace === true,
          onProgress,
        });
      } catch (error) {
        if (error instanceof WarehouseCopyError) {
          if (error.tables.length > 0) io.stdout(`${renderComparison(error.tables)}\n`);
          throw error;
        }
        const reason = redactDatabaseUrlIn(describeDatabaseError(error), to);
        throw new Error(
          `The copy into ${target} failed and was rolled back: the target is as it was. ${reason}`,
        );
      }
      const rows = result.tables.reduce((sum, t) => sum + t.target.rows, 0);
      io.stdout(`${renderComparison(result.tables)}\n`);
      io.stdout(
        `Copied ${count(rows)} rows in ${result.tables.length} tables into ${target}` +
          `${result.replaced.length > 0 ? `, replacing the rows of ${result.replaced.length} table(s)` : ''}` +
          ': every row count and content hash matches the source. Set DATABASE_URL to it for ' +
          'every command (serve, sync, runs, alerts, report).\n',
      );
      return EXIT.ok;
    } finally {
      await targetWarehouse.close();
    }
  } finally {
    await sourceWarehouse.close();
  }
}

/** The verification: one row per table, source and target counts, the hash, a match. */
function renderComparison(tables: readonly TableComparison[]): string {
  return renderTable(
    ['table', 'source rows', 'target rows', 'content hash', 'match'],
    tables.map((t) => [
      t.table,
      count(t.source.rows),
      count(t.target.rows),
      t.matches
        ? t.source.hash.slice(0, 12)
        : `${t.source.hash.slice(0, 5)}≠${t.target.hash.slice(0, 5)}`,
      t.matches ? 'yes' : 'NO',
    ]),
  );
}
