/**
 * `listings-sync raw show --business ID [--date D] [--operation NAME] [--raw]` and `raw stats`:
 * what the upstream answered, from the raw zone (docs/replay.md).
 */
import { type Command, Option } from 'commander';
import { ConfigError } from '../../config/index.ts';
import { EXIT } from '../../errors.ts';
import { OPERATIONS } from '../../operations.ts';
import { UsageError } from '../../usage-error.ts';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import type { CliIo } from '../command/io.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { dateOption, integerOption } from '../options.ts';

interface ShowOptions {
  business: number;
  date?: string;
  operation?: string;
  raw?: boolean;
}

export function registerRawCommand(program: Command, io: CliIo): void {
  const raw = program
    .command('raw')
    .description('What the upstream answered, from the raw zone: `raw show`, `raw stats`.');
  raw
    .command('show')
    .description('Print what the upstream answered about a business on a night.')
    .addOption(
      new Option('--business <id>', 'the business')
        .makeOptionMandatory()
        .argParser(integerOption('--business', 0)),
    )
    .addOption(
      new Option('--date <date>', 'the night (UTC), YYYY-MM-DD; default the latest kept').argParser(
        dateOption('--date'),
      ),
    )
    .option('--operation <name>', 'only this operation, such as list_listings')
    .option('--raw', 'the bodies byte for byte, without headers')
    .action(async (options: ShowOptions) => {
      const config = loadCommandConfig(io, 'raw');
      if (options.operation !== undefined) requireOperation(options.operation);
      const { renderRawShow } = await import('./raw-show.ts');
      const warehouse = await openCommandWarehouse(io, config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        const shown = await renderRawShow(warehouse.db, {
          businessId: options.business,
          ...(options.date ? { date: options.date } : {}),
          ...(options.operation ? { operation: options.operation } : {}),
          ...(options.raw ? { raw: true } : {}),
        });
        if ('held' in shown) {
          const held = shown.held.length
            ? ` It holds reads of it${options.date ? ' that night' : ''} by: ${shown.held.join(', ')}.`
            : '';
          throw new ConfigError(
            `The raw zone holds no read of business ${options.business}` +
              `${options.date ? ` on ${options.date}` : ''}${options.operation ? ` by ${options.operation}` : ''}.${options.operation ? held : ''}`,
          );
        }
        io.stdout(shown.text);
        // A body that does not read is named as replay names it; the others are shown.
        for (const line of shown.unreadable) io.stderr(`listings-sync: ${line}\n`);
        if (shown.unreadable.length > 0) io.exitCode = EXIT.partial;
      } finally {
        await warehouse.close();
      }
    });
  raw
    .command('stats')
    .description(
      "Print the raw zone's size, bytes per night, what content addressing saved and the oldest night replay can rebuild.",
    )
    .action(async () => {
      const config = loadCommandConfig(io, 'raw');
      const { readRawStats, renderRawStats } = await import('./raw-show.ts');
      const warehouse = await openCommandWarehouse(io, config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        io.stdout(renderRawStats(await readRawStats(warehouse.db)));
      } finally {
        await warehouse.close();
      }
    });
}

/**
 * `--operation` names one of the upstream's operations (docs/upstream.md), or the answer
 * lists them: `listings` is not one, `list_listings` is.
 */
function requireOperation(name: string): void {
  if ((OPERATIONS as readonly string[]).includes(name)) return;
  const near = OPERATIONS.filter((operation) => operation.includes(name.trim().toLowerCase()));
  throw new UsageError(
    `--operation ${name} is not an operation${near.length ? ` (did you mean ${near.join(', ')}?)` : ''}. ` +
      `The operations: ${OPERATIONS.join(', ')}.`,
  );
}
