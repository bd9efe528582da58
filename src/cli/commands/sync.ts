/** `listings-sync sync`: one run from the command line, with progress, a summary and exit codes. */
import { type Command, Option } from 'commander';
import { alertSinksFromConfig } from '../../alerts/configured-sinks.ts';
import { createAlertDispatcher } from '../../alerts/dispatcher.ts';
import { createConfiguredApiClient, upstreamNow } from '../../api/client.ts';
import { type Credential, requireCredentials } from '../../config/index.ts';
import { syncRunResult, writeRunResult } from '../../lineage/run-result.ts';
import { LINEAGE_HELP } from '../../lineage/settings.ts';
import { STREAMS } from '../../streams/index.ts';
import { UsageError } from '../../usage-error.ts';
import { EXIT, EXIT_FOR_STATUS } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { shardOption } from '../options.ts';

// The sync modules load only when the command runs: `--help` stays quick.
type SyncModule = typeof import('../../sync/run.ts');
type Stream = import('../../streams/index.ts').Stream;

export interface SyncCommandOptions {
  streams?: string;
  account?: string[];
  shard?: import('../../sync/shard.ts').Shard;
  reapply?: boolean;
  exitZeroOnPartial?: boolean;
  /** The run result (docs/running.md, "The run result"): to this file. */
  resultFile?: string;
  /** The run result on standard output (the summary then goes to standard error). */
  resultJson?: boolean;
}

export function parseStreams(
  text: string | undefined,
  streams: readonly string[],
): Stream[] | undefined {
  if (text === undefined) return undefined;
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !streams.includes(name));
  if (unknown.length || names.length === 0) {
    throw new UsageError(
      `--streams takes a comma-separated list of ${streams.join(', ')} (unknown: ${unknown.join(', ') || 'none given'}).`,
    );
  }
  return names as Stream[];
}

export function selectCredentials(
  all: readonly Credential[],
  names: string[] | undefined,
): readonly Credential[] {
  if (!names?.length) return all;
  const missing = names.filter((name) => !all.some((c) => c.name === name));
  if (missing.length) {
    throw new UsageError(
      `--account ${missing.join(', ')}: no such credential. Configured: ${all.map((c) => c.name).join(', ')}.`,
    );
  }
  return all.filter((c) => names.includes(c.name));
}

export function registerSyncCommand(program: Command, io: CliIo): void {
  program
    .command('sync')
    .description('Pull every configured credential into the warehouse once.')
    .addHelpText('after', LINEAGE_HELP)
    .option('--streams <list>', `comma-separated streams: ${STREAMS.join(', ')}`)
    .option('--account <name...>', 'only these credentials (by name)')
    .addOption(
      new Option(
        '--shard <I/N>',
        'only businesses in shard I of N (0-based), for parallel pods',
      ).argParser(shardOption),
    )
    .option(
      '--reapply',
      'parse and write every answer, also one that is the body its rows were built from ' +
        '(docs/warehouse.md, "Answers applied")',
    )
    .option(
      '--exit-zero-on-partial',
      'exit 0, not 3, when the run ends partial (recorded and alerted on as partial all the ' +
        'same): for schedulers that count any other exit as a failed job (docs/deploy.md)',
    )
    .option(
      '--result-file <path>',
      'write the run result, one JSON document, to this file (docs/running.md, "The run result"), e.g. /airflow/xcom/return.json',
    )
    .option('--result-json', 'print the run result on standard output (the summary goes to stderr)')
    .action(async (options: SyncCommandOptions) => {
      io.exitCode = await runSyncCommand(io, options, await import('../../sync/run.ts'));
    });
}

/** Runs one sync; returns the exit code. `io.signal` stops it between businesses. */
async function runSyncCommand(
  io: CliIo,
  options: SyncCommandOptions,
  { runConfiguredSync }: SyncModule,
): Promise<number> {
  const config = loadCommandConfig(io, 'sync');
  const logger = createCommandLogger(io, config);
  const streams = parseStreams(options.streams, STREAMS);
  const credentials = selectCredentials(requireCredentials(config), options.account);
  // Before opening anything: a sink misconfiguration is a configuration error.
  const alertSinks = alertSinksFromConfig(config);
  const { createProgressReporter } = await import('../../sync/progress.ts');
  const { renderSyncSummary } = await import('../../sync/summary.ts');
  const warehouse = await openCommandWarehouse(io, config);
  const api = createConfiguredApiClient(config, logger);
  const onAbort = () =>
    logger.warn(
      { signal: signalName(io.signal) },
      'stopping: businesses in flight will commit, no new ones start',
    );
  io.signal.addEventListener('abort', onAbort, { once: true });
  const progress = createProgressReporter({ terminal: io.terminal, logger });
  try {
    const result = await runConfiguredSync(config, {
      warehouse,
      api,
      credentials,
      logger,
      ...(streams ? { streams } : {}),
      ...(options.shard ? { shard: options.shard } : {}),
      ...(options.reapply ? { reapply: true } : {}),
      trigger: 'cli',
      signal: io.signal,
      ...(io.stopNow ? { stopNow: io.stopNow } : {}),
      onProgress: (p) => progress.update(p),
    });
    progress.stop();
    // With --result-json, standard output holds the result alone.
    (options.resultJson ? io.stderr : io.stdout)(
      renderSyncSummary(result, { warehouse: warehouse.target.description }),
    );
    // This run's alerts go out now, within ALERT_SYNC_DELIVERY_SECONDS; older ones, and
    // what a slow or failing sink leaves, are `serve`'s (or the next run's). Delivery never
    // changes the exit code.
    await createAlertDispatcher({
      db: warehouse.db,
      sinks: alertSinks,
      logger,
      sinkTimeoutMs: config.alertSinkTimeoutMs,
    })
      .dispatch({
        runId: result.runId,
        deadline: new Date(io.now().getTime() + config.alertSyncDeliveryMs),
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'alert dispatch failed; pending alerts stay queued');
      });
    // A partial night is the warehouse's to report (sync_runs, the sync_failed rule),
    // not the scheduler's; an interrupted run still exits 3, so that a Job retries it.
    const code =
      result.status === 'partial' && options.exitZeroOnPartial
        ? EXIT.ok
        : EXIT_FOR_STATUS[result.status];
    const days = Object.fromEntries(credentials.map((c) => [c.name, upstreamNow(api, c)]));
    writeRunResult(options, syncRunResult(result, code, days), io.stdout);
    return code;
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    io.signal.removeEventListener('abort', onAbort);
    await api.close();
    await warehouse.close();
  }
}

/** The signal that stopped a command (the process entry aborts with its name), for the log. */
export function signalName(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : 'abort';
}
