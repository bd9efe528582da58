/**
 * `listings-sync replay [--from DATE] [--to DATE] [--account NAME] [--business ID] --into SCHEMA`
 * and `listings-sync replay --in-place` (docs/operations.md, "Raw zone and replay"):
 * rebuilds the warehouse from its raw zone into a fresh schema of the same database, or
 * rebuilds the live schema itself (built beside it, swapped in one transaction, under the
 * sync lock). Progress goes to stderr, one line per run.
 */
import { type Command, Option } from 'commander';
import type { CliIo } from '../../command/io.ts';
import { createCommandLogger } from '../../command/logger.ts';
import { loadCommandConfig } from '../../command/settings-bridge.ts';
import { UsageError } from '../../command/usage-error.ts';
import { type Config, ConfigError } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import { ReplayCoverageError, replay } from '../../sync/replay.ts';
import { ReplayLockedError, replayInPlace } from '../../sync/replay-in-place.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../../warehouse/open.ts';
import { dateOption, integerOption } from '../options.ts';

export interface ReplayCommandOptions {
  from?: string;
  to?: string;
  account?: string;
  business?: number;
  into?: string;
  inPlace?: boolean;
}

/** `--into` or `--in-place`, and `--in-place` rebuilds everything (a part would lose the rest). */
function checkTarget(options: ReplayCommandOptions): void {
  if (options.inPlace) {
    const narrowing = [
      options.into !== undefined && '--into',
      options.from !== undefined && '--from',
      options.to !== undefined && '--to',
      options.account !== undefined && '--account',
      options.business !== undefined && '--business',
    ].filter(Boolean);
    if (narrowing.length > 0) {
      throw new UsageError(
        `--in-place rebuilds the whole live schema and takes no ${narrowing.join(', ')}; ` +
          'to replay a part, use --into SCHEMA.',
      );
    }
  } else if (options.into === undefined) {
    throw new UsageError('replay needs --into SCHEMA (a fresh schema) or --in-place.');
  }
}

export async function runReplayCommand(
  config: Config,
  options: ReplayCommandOptions,
  logger: Logger,
  io: Pick<CliIo, 'stdout' | 'stderr' | 'isTTY'>,
): Promise<number> {
  checkTarget(options);
  const warehouse = await openConfiguredWarehouse(config);
  try {
    await requireCurrentSchema(warehouse);
    const common = {
      warehouse,
      ...(warehouse.target.databaseUrl ? { databaseUrl: warehouse.target.databaseUrl } : {}),
      alertRules: config.alertRules,
      // The replayed runs' own logs would repeat every night's: warnings and worse only.
      logger: logger.child({ replay: options.into ?? 'in-place' }, { level: 'warn' }),
      onProgress: (p: { runsDone: number; runsTotal: number; day: string }) => {
        const line = `replay: run ${p.runsDone}/${p.runsTotal} (${p.day})`;
        io.stderr(
          io.isTTY.stderr ? `\r${line}${p.runsDone === p.runsTotal ? '\n' : ''}` : `${line}\n`,
        );
      },
    };
    if (options.inPlace) {
      const result = await replayInPlace(common);
      io.stdout(
        `Rebuilt schema "${result.schema}" of ${warehouse.target.description} from ` +
          `${result.runs} run(s), ${result.reads} kept reads, in ${result.seconds} s` +
          `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.\n` +
          `The schema it replaced is kept as "${result.kept}": check, then DROP SCHEMA ${result.kept} CASCADE.\n` +
          'Alerts were recomputed; those the schema had keep their delivery, new ones were not delivered.\n',
      );
      return 0;
    }
    const into = options.into as string;
    const result = await replay({
      ...common,
      into,
      ...(options.from ? { from: options.from } : {}),
      ...(options.to ? { to: options.to } : {}),
      ...(options.account ? { account: options.account } : {}),
      ...(options.business !== undefined ? { businessId: options.business } : {}),
    });
    io.stdout(
      `Replayed ${result.runs} run(s), ${result.reads} kept reads, into schema "${into}" ` +
        `of ${warehouse.target.description} in ${result.seconds} s` +
        `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.\n` +
        'Its alerts were recomputed and not delivered.\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof ReplayCoverageError || error instanceof ReplayLockedError)
      throw new ConfigError(error.message);
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
    .option('--into <schema>', 'the new schema to build (must not hold tables)')
    .option(
      '--in-place',
      'rebuild the live schema: built beside it and swapped in one transaction, under the sync lock',
    )
    .action(async (options: ReplayCommandOptions) => {
      const config = loadCommandConfig(io, 'replay');
      io.exitCode = await runReplayCommand(config, options, createCommandLogger(io, config), io);
    });
}
