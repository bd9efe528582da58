/**
 * serve's alert passes: the sync health checks (src/alerts/kinds/sync-health.ts) and an alert
 * dispatch, one at a time, queued after each scheduled run and on the interval.
 */
import type { AlertDispatcher } from '../alerts/dispatcher.ts';
import { raiseSyncHealthAlerts } from '../alerts/kinds/sync-health.ts';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';

export interface AlertPasses {
  /** Queues a check and pass after those started so far; resolves when it is done. */
  dispatch(): Promise<void>;
  /** Resolves when the checks and passes started so far are done. */
  settled(): Promise<void>;
}

export function startAlertPasses(options: {
  config: Config;
  warehouse: Warehouse;
  dispatcher: AlertDispatcher;
  accountNames: readonly string[];
  log: Logger;
}): AlertPasses {
  const { config, warehouse, dispatcher, accountNames, log } = options;
  // The dead man's switch measures an account that never synced from here.
  const watchingSince = new Date();
  // One check and pass at a time; close() waits for the last. The sinks are recorded
  // first, so what this process raises is never taken for a new sink's backlog
  // (docs/alerts.md, "A sink added later"); on failure the first pass tries again.
  let passes: Promise<void> = dispatcher.recordSinks().catch((error: unknown) => {
    log.error({ err: error }, 'recording the alert sinks failed; the next pass tries again');
  });
  const checkAndDispatch = async () => {
    try {
      await raiseSyncHealthAlerts(warehouse.db, config.alertRules, {
        now: new Date(),
        accounts: accountNames,
        watchingSince,
      });
    } catch (error) {
      log.error({ err: error }, 'sync health check failed; it runs again on the next interval');
    }
    await dispatcher.dispatch().catch((error: unknown) => {
      log.error({ err: error }, 'alert dispatch failed; pending alerts stay queued');
    });
  };
  return {
    dispatch() {
      passes = passes.then(checkAndDispatch);
      return passes;
    },
    settled: () => passes,
  };
}
