/**
 * `listings-sync replay [--from DATE] [--to DATE] [--account NAME] [--business ID] --into SCHEMA`
 * and `listings-sync replay --in-place [--dry-run]` (docs/replay.md, "Replay into a fresh schema", "Replay in place"): rebuilds the warehouse from its raw zone into a fresh schema
 * of the same database, or rebuilds the live warehouse itself (what the raw zone covers,
 * merged in one transaction under the sync lock; every row it cannot rebuild kept).
 * Progress goes to stderr, one line per run.
 */
import { type Command, Option } from 'commander';
import type { Config } from '../../config/index.ts';
import { EXIT } from '../../errors.ts';
import { type ReplayOutcome, replayRunResult, writeRunResult } from '../../lineage/run-result.ts';
import { LINEAGE_HELP } from '../../lineage/settings.ts';
import type { Logger } from '../../log.ts';
import { type InPlaceResult, replayInPlace } from '../../replay/in-place.ts';
import type { KeptWholeReason } from '../../replay/merge.ts';
import { type NotRebuilt, replay } from '../../replay/replay.ts';
import { UsageError } from '../../usage-error.ts';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { dateOption, integerOption } from '../options.ts';

export interface ReplayCommandOptions {
  from?: string;
  to?: string;
  account?: string;
  business?: number;
  into?: string;
  inPlace?: boolean;
  dryRun?: boolean;
  /** The run result (docs/running.md, "The run result"): to this file. */
  resultFile?: string;
  /** The run result on standard output (the summary then goes to standard error). */
  resultJson?: boolean;
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
  } else if (options.dryRun) {
    throw new UsageError(
      '--dry-run goes with --in-place (replay --into writes a fresh schema only).',
    );
  } else if (options.into === undefined) {
    throw new UsageError('replay needs --into SCHEMA (a fresh schema) or --in-place.');
  }
}

export async function runReplayCommand(
  config: Config,
  options: ReplayCommandOptions,
  logger: Logger,
  io: Pick<CliIo, 'stdout' | 'stderr' | 'isTTY' | 'services'>,
): Promise<number> {
  checkTarget(options);
  const warehouse = await openCommandWarehouse(io, config);
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
    // With --result-json, standard output holds the result alone.
    const print = options.resultJson ? io.stderr : io.stdout;
    const finish = (code: number, outcome: ReplayOutcome): number => {
      writeRunResult(options, replayRunResult(outcome, code), io.stdout);
      return code;
    };
    if (options.inPlace) {
      const result = await replayInPlace({ ...common, dryRun: options.dryRun === true });
      print(renderInPlace(result, warehouse.target.description));
      return finish(incomplete(result) ? EXIT.partial : EXIT.ok, {
        ...result,
        runIds: [...result.runIds.keys()],
      });
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
    const missing = result.notRebuilt.length;
    print(
      `${missing ? 'Replay incomplete: replayed' : 'Replayed'} ${result.runs} run(s), ${result.reads} kept reads, into schema "${into}" ` +
        `of ${warehouse.target.description} in ${result.seconds} s` +
        `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.\n` +
        // A run per credential of each kept run: counted as `listings-sync runs` lists them.
        `Schema "${into}" holds ${result.runIds.size} run(s), one per credential of each ` +
        `(DATABASE_SCHEMA=${into} listings-sync runs lists them).\n` +
        'Its alerts were recomputed and not delivered.\n' +
        renderNotRebuilt(result.notRebuilt, `schema "${into}" lacks their rows`),
    );
    return finish(missing ? EXIT.partial : EXIT.ok, {
      ...result,
      runIds: [...result.runIds.keys()],
    });
  } finally {
    await warehouse.close();
  }
}

/**
 * Whether a replay left a business-night unrebuilt (exit 3, docs/running.md, "Exit
 * codes"): a night it named, or a business whose rebuild stopped short of its window.
 */
function incomplete(result: InPlaceResult): boolean {
  return (
    result.notRebuilt.length > 0 || result.keptWhole.some((kept) => kept.reason === NOT_EVERY_NIGHT)
  );
}

const NOT_EVERY_NIGHT: KeptWholeReason = 'the replay did not write every night of its window';

/** Every business-night a replay could not rebuild, one line each; empty when none. */
export function renderNotRebuilt(notRebuilt: readonly NotRebuilt[], consequence: string): string {
  if (notRebuilt.length === 0) return '';
  const lines = [
    `Not rebuilt: ${notRebuilt.length} business-night(s); ${consequence}:`,
    ...notRebuilt.map(
      (m) =>
        `  ${m.night} business ${m.businessId} (account ${m.account}, run ${m.runId}): ${m.reason}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** What an in-place replay changed (or would change), per table, and what it kept whole. */
export function renderInPlace(result: InPlaceResult, target: string): string {
  const lines: string[] = [];
  const verb = result.dryRun ? 'Would rebuild' : 'Rebuilt';
  lines.push(
    `${verb} ${result.rebuilt} business(es) of schema "${result.schema}" of ${target} from ` +
      `${result.runs} run(s), ${result.reads} kept reads, in ${result.seconds} s` +
      `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.`,
  );
  lines.push(
    result.windowFrom
      ? `The raw zone covers from ${result.windowFrom.toISOString()} on (per business: from its first kept read); every row older is kept as it was.`
      : 'The raw zone holds no replayable read: nothing is rebuilt.',
  );
  const changed = result.changes.filter((c) => c.deleted + c.inserted + c.updated > 0);
  if (changed.length === 0) {
    lines.push(result.dryRun ? 'No table would change.' : 'No table changed.');
  } else {
    const width = Math.max(...changed.map((c) => c.table.length), 'table'.length);
    lines.push(
      `${'table'.padEnd(width)}  ${'deleted'.padStart(8)}  ${'inserted'.padStart(8)}  ${'updated'.padStart(8)}`,
    );
    for (const c of changed) {
      lines.push(
        `${c.table.padEnd(width)}  ${String(c.deleted).padStart(8)}  ${String(c.inserted).padStart(8)}  ${String(c.updated).padStart(8)}`,
      );
    }
  }
  if (result.keptWhole.length > 0) {
    lines.push(
      `Kept as they were (${result.keptWhole.length} business(es) the raw zone cannot rebuild whole):`,
    );
    for (const { businessId, reason } of result.keptWhole.slice(0, 20)) {
      lines.push(`  business ${businessId}: ${reason}`);
    }
    if (result.keptWhole.length > 20) lines.push(`  … and ${result.keptWhole.length - 20} more`);
  }
  const notRebuilt = renderNotRebuilt(
    result.notRebuilt,
    'each business is kept as it was, and the command exits 3',
  );
  if (notRebuilt) lines.push(notRebuilt.trimEnd());
  lines.push(
    result.dryRun
      ? 'Dry run: nothing was committed. Run again without --dry-run to apply.'
      : 'Alerts kept their identity and delivery; alerts only the rebuild raised were added closed, not delivered. Runs, the raw zone, webhook events and review response requests were not touched.',
  );
  return `${lines.join('\n')}\n`;
}

export function registerReplayCommand(program: Command, io: CliIo): void {
  program
    .command('replay')
    .description(
      'Rebuild the warehouse from its raw zone into a fresh schema of the same database (alerts recomputed, never delivered).',
    )
    .addHelpText('after', LINEAGE_HELP)
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
      'rebuild the live warehouse from its raw zone: what the raw zone covers is replaced in one transaction, everything older is kept (docs/replay.md, "Replay in place")',
    )
    .option(
      '--dry-run',
      'with --in-place: build and compare, print what would change per table, commit nothing',
    )
    .option(
      '--result-file <path>',
      'write the run result, one JSON document, to this file (docs/running.md, "The run result")',
    )
    .option('--result-json', 'print the run result on standard output (the summary goes to stderr)')
    .action(async (options: ReplayCommandOptions) => {
      const config = loadCommandConfig(io, 'replay');
      io.exitCode = await runReplayCommand(config, options, createCommandLogger(io, config), io);
    });
}
