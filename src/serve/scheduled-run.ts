/**
 * serve's scheduled run: one configured sync (trigger `schedule`), its outcome counted in
 * /metrics and logged, then an alert pass.
 */
import type { ApiClient, Credential } from '../api/index.ts';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { runConfiguredSync, SyncLockedError } from '../sync/run.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import type { ServeMetrics } from './metrics.ts';

export function scheduledRun(options: {
  config: Config;
  warehouse: Warehouse;
  api: ApiClient;
  credentials: readonly Credential[];
  logger: Logger;
  log: Logger;
  businessConcurrency?: number | undefined;
  metrics: ServeMetrics;
  /** The alert pass after each run. */
  dispatch: () => Promise<void>;
}): (signal: AbortSignal) => Promise<void> {
  const { config, warehouse, api, credentials, logger, log, metrics, dispatch } = options;
  return async (signal) => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await runConfiguredSync(config, {
        warehouse,
        api,
        credentials,
        logger,
        ...(options.businessConcurrency !== undefined
          ? { businessConcurrency: options.businessConcurrency }
          : {}),
        trigger: 'schedule',
        signal,
      });
      metrics.recordRun(result.status, seconds(), result);
      const level = result.status === 'succeeded' ? 'info' : 'warn';
      log[level](
        {
          runId: result.runId,
          status: result.status,
          seconds: result.stats.seconds,
          error: result.error,
        },
        'scheduled sync finished',
      );
    } catch (error) {
      if (error instanceof SyncLockedError) {
        metrics.recordRun('locked', seconds());
        log.info('scheduled sync skipped: another replica is running it');
        return;
      }
      metrics.recordRun('error', seconds());
      log.error({ err: error }, 'scheduled sync could not run');
    } finally {
      await dispatch();
    }
  };
}
