/**
 * `listings-sync check`: the configuration, each credential (one cheap authenticated
 * read) and the warehouse (reachable, migrated), as a table; touches no data, exits 1 on
 * any failure (src/cli/commands/check-rows.ts).
 */
import type { Command } from 'commander';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';

export function registerCheckCommand(program: Command, io: CliIo): void {
  program
    .command('check')
    .description(
      'Check the configuration, each credential (one cheap authenticated read) and the warehouse (reachable, migrated); touches no data.',
    )
    .action(async () => {
      const { renderChecks, runChecks } = await import('./check-rows.ts');
      // Its warnings are a row of the table, not lines on standard error.
      const rows = await runChecks(() => loadCommandConfig(io, 'check', { warnings: 'none' }), io);
      io.stdout(renderChecks(rows));
      io.exitCode = rows.every((row) => row.ok) ? EXIT.ok : EXIT.fatal;
    });
}
