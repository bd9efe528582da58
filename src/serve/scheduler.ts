/**
 * The sync schedule of `serve`: node-cron on a cron expression in a time zone, and never
 * two runs at once. In this process a tick that finds a run still going is skipped (and
 * logged); across replicas the warehouse's advisory lock keeps a second run off (the
 * `run` callback handles `SyncLockedError`). A run that fails is logged by the callback
 * and the next tick still fires. `stop()` ends the schedule, aborts the run's signal (the
 * sync then starts no new business) and waits for the run to finish.
 *
 * The ticks come from a `Ticker`: node-cron on the wall clock by default. Time is a
 * parameter: tests pass a ticker they fire by hand, or drive node-cron with fake timers.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../log.ts';

export interface SchedulerOptions {
  /** A cron expression of 5 or 6 fields (6: with seconds). */
  schedule: string;
  timezone: string;
  logger: Logger;
  /** One run. Should not throw; if it does, the error is logged and the schedule goes on. */
  run: (signal: AbortSignal) => Promise<void>;
  /** Called for a tick skipped because a run is still going. */
  onSkippedTick?: () => void;
  /** What fires the ticks; node-cron (`cronTicker`) when absent. */
  ticker?: StartTicker;
}

/** A running source of ticks. */
export interface Ticker {
  /** When the next tick fires. */
  nextRun(): Date | null;
  stop(): Promise<void>;
}

export type StartTicker = (
  onTick: () => void,
  options: { schedule: string; timezone: string; logger: Logger },
) => Ticker;

/** node-cron on a cron expression in a time zone (it reads the global timers and Date). */
export const cronTicker: StartTicker = (onTick, { schedule, timezone, logger }) => {
  const task: ScheduledTask = cron.schedule(schedule, onTick, {
    timezone,
    name: 'listings-sync',
    logger: {
      info: (message) => logger.debug(message),
      warn: (message) => logger.warn(message),
      error: (message, err) => logger.error({ err: err ?? message }, String(message)),
      debug: (message) => logger.debug(String(message)),
    },
  });
  return {
    nextRun: () => task.getNextRun(),
    stop: async () => {
      await task.destroy();
    },
  };
};

export interface Scheduler {
  /** When the next tick fires; null once stopped. */
  nextRun(): Date | null;
  isRunning(): boolean;
  /** Runs now, outside the schedule, under the same no-overlap rule. */
  runNow(): Promise<'ran' | 'skipped'>;
  /** Stops the schedule and waits for a run in flight (aborting its signal). */
  stop(): Promise<void>;
}

export function startScheduler(options: SchedulerOptions): Scheduler {
  const log = options.logger.child({ component: 'scheduler' });
  const stopping = new AbortController();
  let current: Promise<void> | null = null;
  let stopped = false;

  const logNext = () => {
    const next = task.nextRun();
    log.info(
      { schedule: options.schedule, timezone: options.timezone, nextRun: next?.toISOString() },
      'next sync scheduled',
    );
  };

  const start = (reason: 'scheduled' | 'manual'): 'ran' | 'skipped' => {
    if (stopped) return 'skipped';
    if (current) {
      log.warn({ reason }, 'a sync of this process is still running; this tick is skipped');
      options.onSkippedTick?.();
      return 'skipped';
    }
    log.info({ reason }, 'sync starting');
    current = options
      .run(stopping.signal)
      .catch((error: unknown) => {
        log.error({ err: error }, 'the sync failed; the next tick will still fire');
      })
      .finally(() => {
        current = null;
        if (!stopped) logNext();
      });
    return 'ran';
  };

  const task = (options.ticker ?? cronTicker)(
    // Not awaited: the ticker need not track the run; the guard above is the one rule.
    () => void start('scheduled'),
    { schedule: options.schedule, timezone: options.timezone, logger: log },
  );
  logNext();

  return {
    nextRun: () => (stopped ? null : task.nextRun()),
    isRunning: () => current !== null,
    async runNow() {
      const outcome = start('manual');
      if (outcome === 'ran') await current;
      return outcome;
    },
    async stop() {
      if (stopped) {
        await current;
        return;
      }
      stopped = true;
      await task.stop();
      stopping.abort();
      if (current) {
        log.info('waiting for the running sync to finish its businesses in flight');
        await current;
      }
    },
  };
}
