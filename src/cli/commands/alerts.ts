/** `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table (src/alerts/alerts-command.ts). */
import { type Command, Option } from 'commander';
import { EXIT } from '../../command/exit-codes.ts';
import type { CliIo } from '../../command/io.ts';
import { loadCommandConfig } from '../../command/settings-bridge.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../../warehouse/open.ts';
import { integerOption } from '../options.ts';

export function registerAlertsCommand(program: Command, io: CliIo): void {
  program
    .command('alerts')
    .description('List recent alerts (every kind: what changed, the business, delivery per sink).')
    .option('--pending', 'only alerts not yet delivered to every sink')
    .addOption(
      new Option('--limit <n>', 'how many, most recent first')
        .default(50)
        .argParser(integerOption('--limit', 1, 100_000)),
    )
    .action(async (options: { pending?: boolean; limit: number }) => {
      const config = loadCommandConfig(io, 'alerts');
      const { configuredSinkNames, renderAlerts } = await import('../../alerts/alerts-command.ts');
      const { recentAlerts } = await import('../../alerts/outbox.ts');
      // Only reads: a missing embedded database is an error, never created by looking.
      const warehouse = await openConfiguredWarehouse(config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        const pending = options.pending === true;
        const rows = await recentAlerts(warehouse.db, { pending, limit: options.limit });
        io.stdout(renderAlerts(rows, { pending, sinks: configuredSinkNames(config) }));
        io.exitCode = EXIT.ok;
      } finally {
        await warehouse.close();
      }
    });
}
