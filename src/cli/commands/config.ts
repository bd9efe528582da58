/**
 * `listings-sync config`: the effective configuration and where each value came from
 * (the environment, the credentials file, or the default), secrets masked.
 */
import type { Command } from 'commander';
import { renderTable } from '../../text-table.ts';
import type { CliIo } from '../command/io.ts';
import { configRows, credentialRows, loadCommandConfig } from '../command/settings-bridge.ts';

export function registerConfigCommand(program: Command, io: CliIo): void {
  program
    .command('config')
    .description(
      'Print the effective configuration and where each value comes from (secrets masked).',
    )
    .action(() => {
      // Its warnings are part of the output, below the tables.
      const config = loadCommandConfig(io, 'config', { warnings: 'none' });
      const parts = [renderTable(['variable', 'value', 'source'], configRows(config))];
      const credentials = credentialRows(config);
      parts.push(
        credentials.rows.length
          ? renderTable(credentials.header, credentials.rows)
          : 'No credentials configured.',
      );
      if (config.warnings.length)
        parts.push(config.warnings.map((w) => `warning: ${w}`).join('\n'));
      io.stdout(`${parts.join('\n\n')}\n`);
    });
}
