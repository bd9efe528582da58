/**
 * `listings-sync replay [--from DATE] [--to DATE] [--account NAME] [--business ID] --into SCHEMA`
 * (docs/operations.md, "Raw zone and replay"): rebuilds the warehouse from its raw zone
 * into a fresh schema of the same database. Progress goes to stderr, one line per run.
 */
import { type Command, Option } from 'commander';
import type { CliIo } from '../../command/io.ts';
import { createCommandLogger } from '../../command/logger.ts';
import { loadCommandConfig } from '../../command/settings-bridge.ts';
import { type Config, ConfigError } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import { ReplayCoverageError, replay } from '../../sync/replay.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../../warehouse/open.ts';
import { dateOption, integerOption } from '../options.ts';

export interface ReplayCommandOptions {
  from?: string;
  to?: string;
  account?: string;
  business?: number;
  into: string;
}

export async function runReplayCommand(
  config: Config,
  options: ReplayCommandOptions,
  logger: Logger,
  io: Pick<CliIo, 'stdout' | 'stderr' | 'isTTY'>,
): Promise<number> {
  const warehouse = await openConfiguredWarehouse(config);
  try {
    await requireCurrentSchema(warehouse);
    const result = await replay({
      warehouse,
      ...(warehouse.target.databaseUrl ? { databaseUrl: warehouse.target.databaseUrl } : {}),
      into: options.into,
      ...(options.from ? { from: options.from } : {}),
      ...(options.to ? { to: options.to } : {}),
      ...(options.account ? { account: options.account } : {}),
      ...(options.business !== undefined ? { businessId: options.business } : {}),
      alertRules: config.alertRules,
      // The replayed runs' own logs would repeat every night's: warnings and worse only.
      logger: logger.child({ replay: options.into }, { level: 'warn' }),
      onProgress: (p) => {
        const line = `replay: run ${p.runsDone}/${p.runsTotal} (${p.day})`;
        io.stderr(
          io.isTTY.stderr ? `\r${line}${p.runsDone === p.runsTotal ? '\n' : ''}` : `${line}\n`,
        );
      },
    });
    io.stdout(
      `Replayed ${result.runs} run(s), ${result.reads} kept reads, into schema "${options.into}" ` +
        `of ${warehouse.target.description} in ${result.seconds} s` +
        `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.\n` +
        'Its alerts were recomputed and not delivered.\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof ReplayCoverageError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await warehouse.close();
  }
}

export function registerReplayCommand(program: Command, io: CliIo): void {
  program
    .command('replay')
    .description(
      'Rebuild the warehouse from its raw zone into a fresh schema of the same database (alerts recomputed, never delivered).',
    )
    .addOption(
      new Option('--from <date>', 'first night (UTC), YYYY-MM-DD').argParser(dateOption('--from')),
    )
    .addOption(
      new Option('--to <date>', 'last night (UTC), YYYY-MM-DD').argParser(dateOption('--to')),
    )
    .option('--account <name>', 'only this credential')
    .addOption(
      new Option('--business <id>', 'only this business').argParser(integerOption('--business', 0)),
    )
    .requiredOption('--into <schema>', 'the new schema to build (must not hold tables)')
    .action(async (options: ReplayCommandOptions) => {
      const config = loadCommandConfig(io, 'replay');
      io.exitCode = await runReplayCommand(config, options, createCommandLogger(io, config), io);
    });
}
