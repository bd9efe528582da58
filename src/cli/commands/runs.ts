/** `listings-sync runs [--limit N]`: recent sync runs (src/cli/commands/runs-table.ts). */
import { type Command, Option } from 'commander';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import type { CliIo } from '../command/io.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { integerOption } from '../options.ts';

export function registerRunsCommand(program: Command, io: CliIo): void {
  program
    .command('runs')
    .description(
      'List recent sync runs: the upstream day each read, status, duration, counts and what failed.',
    )
    .addOption(
      new Option('--limit <n>', 'how many, most recent first')
        .default(20)
        .argParser(integerOption('--limit', 1, 10_000)),
    )
    .action(async (options: { limit: number }) => {
      const config = loadCommandConfig(io, 'runs');
      const { readRecentRuns, renderRuns } = await import('./runs-table.ts');
      const warehouse = await openCommandWarehouse(io, config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        io.stdout(`Sync runs in ${warehouse.target.description}:\n`);
        io.stdout(renderRuns(await readRecentRuns(warehouse.db, options.limit)));
      } finally {
        await warehouse.close();
      }
    });
}
