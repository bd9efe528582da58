/** `listings-sync sync`: one run from the command line, with progress, a summary and exit codes. */

import { alertSinksFromConfig } from '../alerts/configured-sinks.ts';
import { createAlertDispatcher } from '../alerts/dispatcher.ts';
import { createConfiguredApiClient } from '../api/client.ts';
import { type Config, ConfigError, type Credential, requireCredentials } from '../config.ts';
import type { Logger } from '../log.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../warehouse/open.ts';
import { STREAMS, type Stream, syncOptionsFromConfig } from './options.ts';
import { createProgressReporter } from './progress.ts';
import { runSync, SyncLockedError, type SyncResult } from './run.ts';
import type { Shard } from './shard.ts';
import { renderSyncSummary } from './summary.ts';

export class UsageError extends Error {
  readonly code = 'USAGE';
}

export interface SyncCommandOptions {
  streams?: string;
  account?: string[];
  shard?: Shard;
}

export function parseStreams(text: string | undefined): Stream[] | undefined {
  if (text === undefined) return undefined;
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(STREAMS as readonly string[]).includes(name));
  if (unknown.length || names.length === 0) {
    throw new UsageError(
      `--streams takes a comma-separated list of ${STREAMS.join(', ')} (unknown: ${unknown.join(', ') || 'none given'}).`,
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

export const EXIT_FOR_STATUS: Record<SyncResult['status'], number> = {
  succeeded: 0,
  partial: 3,
  interrupted: 3,
  failed: 1,
};

/** After a second signal, how long recording the run `interrupted` may take before the process exits regardless. */
const SECOND_SIGNAL_EXIT_MS = 10_000;

/** Runs the command; returns the process exit code. */
export async function runSyncCommand(
  config: Config,
  options: SyncCommandOptions,
  logger: Logger,
): Promise<number> {
  const streams = parseStreams(options.streams);
  const credentials = selectCredentials(requireCredentials(config), options.account);
  // Before opening anything: a sink misconfiguration is a configuration error.
  const alertSinks = alertSinksFromConfig(config);
  const warehouse = await openConfiguredWarehouse(config);
  const api = createConfiguredApiClient(config, logger);
  const stop = new AbortController();
  const stopNow = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      // The run still records `interrupted`; only if even that hangs does the process go.
      logger.warn({ signal }, 'second signal: the run ends now; businesses in flight roll back');
      stopNow.abort();
      setTimeout(() => process.exit(EXIT_FOR_STATUS.interrupted), SECOND_SIGNAL_EXIT_MS).unref();
      return;
    }
    logger.warn({ signal }, 'stopping: businesses in flight will commit, no new ones start');
    stop.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const progress = createProgressReporter({ stream: process.stderr, logger });
  try {
    await requireCurrentSchema(warehouse);
    const result = await runSync({
      warehouse,
      api,
      credentials,
      logger,
      ...(streams ? { streams } : {}),
      ...(options.shard ? { shard: options.shard } : {}),
      ...syncOptionsFromConfig(config),
      trigger: 'cli',
      signal: stop.signal,
      stopNow: stopNow.signal,
      onProgress: (p) => progress.update(p),
    });
    progress.stop();
    process.stdout.write(renderSyncSummary(result, { warehouse: warehouse.target.description }));
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
        deadline: new Date(Date.now() + config.alertSyncDeliveryMs),
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'alert dispatch failed; pending alerts stay queued');
      });
    return EXIT_FOR_STATUS[result.status];
  } catch (error) {
    progress.stop();
    if (error instanceof SyncLockedError) throw new ConfigError(error.message);
    throw error;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await api.close();
    await warehouse.close();
  }
}
