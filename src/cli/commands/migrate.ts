/** `listings-sync migrate`: bring the warehouse schema up to date (safe from several pods at once). */
import type { Command } from 'commander';
import { describeWarehouse } from '../../warehouse/driver/open.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';

export function registerMigrateCommand(program: Command, io: CliIo): void {
  program
    .command('migrate')
    .description('Bring the warehouse schema up to date (safe to run from several pods at once).')
    .action(async () => {
      const config = loadCommandConfig(io, 'migrate');
      const logger = createCommandLogger(io, config);
      const { migrateToLatest } = await import('../../warehouse/driver/migrate.ts');
      // A migration may rewrite a year of history (0005): no statement timeout here. The
      // connect and lock timeouts still hold.
      // DATABASE_SCHEMA is created when missing (docs/configuration.md, DATABASE_SCHEMA).
      const warehouse = await openCommandWarehouse(
        io,
        { ...config, databaseStatementTimeoutMs: 0 },
        'write',
        { createSchema: true },
      );
      try {
        const { applied } = await migrateToLatest(warehouse.db);
        logger.info({ applied }, 'migrations applied');
        io.stdout(
          applied.length
            ? `Applied ${applied.length} migration(s) to ${describeWarehouse(config)}: ${applied.join(', ')}\n`
            : `${describeWarehouse(config)} is already up to date.\n`,
        );
      } finally {
        await warehouse.close();
      }
    });
}
