/**
 * The schedule: it fires on its cron expression (node-cron under fake timers), never
 * overlaps a run still going (skipping and logging the tick), survives a failing run,
 * steps aside for another replica's lock, and on close lets the running sync finish its
 * businesses in flight. No test waits on the wall clock for a tick.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { type StartTicker, startScheduler } from '../../src/serve/scheduler.ts';
import { startServe } from '../../src/serve/server.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/runs/sync-lock.ts';
import { testBackends } from '../helpers/database.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { worldPerTest } from '../sync/harness.ts';
import { metricValue, serveConfig } from './helpers.ts';

const EVERY_SECOND = '*/1 * * * * *';
/** Never within a test: runs start with runNow(). */
const NEW_YEAR = '0 0 1 1 *';
/**
 * For a run that ends within a few turns of the event loop: a limit that only guards a
 * hang, under the test's own (vitest.config.ts), never a time the run is expected to take.
 */
const HANG_GUARD = { timeout: 100_000 };

/** A ticker fired by hand: the scheduler's rules without any clock. */
function manualTicker(): { start: StartTicker; tick(): void; stopped(): boolean } {
  let onTick: (() => void) | undefined;
  let stopped = false;
  return {
    start: (fire) => {
      onTick = fire;
      return {
        nextRun: () => new Date('2030-01-01T00:00:00Z'),
        stop: async () => {
          stopped = true;
        },
      };
    },
    tick: () => onTick?.(),
    stopped: () => stopped,
  };
}

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open(): void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('scheduler', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('skips a tick while a run is going, and never runs two at once', async () => {
    const logs = memoryLogger('debug');
    const ticker = manualTicker();
    const gates = [gate(), gate()];
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    let skipped = 0;
    const scheduler = startScheduler({
      schedule: EVERY_SECOND,
      timezone: 'UTC',
      logger: logs.logger,
      ticker: ticker.start,
      onSkippedTick: () => {
        skipped += 1;
      },
      run: async () => {
        const mine = gates[runs]!;
        runs += 1;
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await mine.promise;
        running -= 1;
      },
    });
    ticker.tick();
    expect([runs, skipped, scheduler.isRunning()]).toEqual([1, 0, true]);
    ticker.tick();
    ticker.tick();
    expect([runs, skipped]).toEqual([1, 2]);
    expect(await scheduler.runNow()).toBe('skipped');
    expect(skipped).toBe(3);
    gates[0]!.open();
    await vi.waitUntil(() => !scheduler.isRunning(), HANG_GUARD);
    ticker.tick();
    expect([runs, skipped]).toEqual([2, 3]);
    gates[1]!.open();
    await scheduler.stop();
    expect(ticker.stopped()).toBe(true);
    expect(maxRunning).toBe(1);
    expect(scheduler.nextRun()).toBeNull();
    const text = logs.lines().join('\n');
    expect(text).toContain('next sync scheduled');
    expect(text).toContain('"nextRun":"2030-01-01T00:00:00.000Z"');
    expect(text).toContain('this tick is skipped');
  });

  it('logs a failed run with its reason, and the next tick still fires', async () => {
    const logs = memoryLogger('debug');
    const ticker = manualTicker();
    let calls = 0;
    const scheduler = startScheduler({
      schedule: EVERY_SECOND,
      timezone: 'UTC',
      logger: logs.logger,
      ticker: ticker.start,
      run: async () => {
        calls += 1;
        if (calls === 1) throw new Error('upstream exploded');
      },
    });
    ticker.tick();
    await vi.waitUntil(() => !scheduler.isRunning(), HANG_GUARD);
    ticker.tick();
    await vi.waitUntil(() => !scheduler.isRunning(), HANG_GUARD);
    await scheduler.stop();
    expect(calls).toBe(2);
    const failure = logs.lines().find((l) => l.includes('the sync failed'));
    expect(failure).toContain('upstream exploded');
  });

  it('fires on its cron expression under node-cron, a tick per second, skipping while a run goes', async () => {
    vi.useFakeTimers({ now: new Date('2026-03-01T10:00:00.500Z') });
    let runs = 0;
    let skipped = 0;
    const first = gate();
    const scheduler = startScheduler({
      schedule: EVERY_SECOND,
      timezone: 'Europe/Berlin',
      logger: silentLogger(),
      onSkippedTick: () => {
        skipped += 1;
      },
      run: async () => {
        runs += 1;
        // The first run goes on until the test ends it.
        if (runs === 1) await first.promise;
      },
    });
    try {
      expect(scheduler.nextRun()).toEqual(new Date('2026-03-01T10:00:01.000Z'));
      await vi.advanceTimersByTimeAsync(1_000);
      expect([runs, skipped]).toEqual([1, 0]);
      // The next two ticks find it running.
      await vi.advanceTimersByTimeAsync(2_000);
      expect([runs, skipped]).toEqual([1, 2]);
      first.open();
      await vi.advanceTimersByTimeAsync(1_000);
      expect([runs, skipped]).toEqual([2, 2]);
    } finally {
      const stopped = scheduler.stop();
      await vi.runOnlyPendingTimersAsync();
      await stopped;
    }
  });

  it('computes the next run in its time zone', () => {
    vi.useFakeTimers({ now: new Date('2026-03-01T10:00:30Z') });
    const scheduler = startScheduler({
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      logger: silentLogger(),
      run: async () => {},
    });
    // 03:00 in Berlin (UTC+1 in March before the switch) is 02:00 UTC.
    expect(scheduler.nextRun()).toEqual(new Date('2026-03-02T02:00:00Z'));
    void scheduler.stop();
  });
});

describe.each(testBackends)('scheduled sync in serve (%s)', (backend) => {
  // Each test gets its own sandbox and an empty warehouse.
  const world = worldPerTest(backend, { seed: 9, accounts: 1, businessesPerAccount: 4 });

  it('never overlaps a run: a tick during it is skipped and counted', async () => {
    const serve = await startServe({
      config: serveConfig(),
      warehouse: world.warehouse,
      api: world.api,
      logger: silentLogger(),
      credentials: world.sandbox.credentials,
      schedule: NEW_YEAR,
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
      businessConcurrency: 1,
    });
    try {
      const first = serve.scheduler!.runNow();
      expect(serve.scheduler!.isRunning()).toBe(true);
      expect(await serve.scheduler!.runNow()).toBe('skipped');
      expect(await first).toBe('ran');
      expect(await serve.scheduler!.runNow()).toBe('ran');
    } finally {
      await serve.close();
    }
    const runs = await world.warehouse.db
      .selectFrom('sync_runs')
      .select(['started_at', 'finished_at', 'status', 'trigger'])
      .orderBy('started_at')
      .execute();
    expect(runs.map((r) => [r.status, r.trigger])).toEqual([
      ['succeeded', 'schedule'],
      ['succeeded', 'schedule'],
    ]);
    expect(runs[1]!.started_at.getTime()).toBeGreaterThanOrEqual(runs[0]!.finished_at!.getTime());
    const metrics = await serve.metrics.render();
    expect(metricValue(metrics, 'listings_sync_schedule_ticks_skipped_total')).toBe(1);
  });

  it('steps aside when another replica holds the lock', async () => {
    const logs = memoryLogger('info');
    const serve = await startServe({
      config: serveConfig(),
      warehouse: world.warehouse,
      api: world.api,
      logger: logs.logger,
      credentials: world.sandbox.credentials,
      schedule: NEW_YEAR,
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
    });
    const lock = await tryAcquireSyncLock(world.warehouse, 'listings-sync:sync');
    expect(lock).not.toBeNull();
    try {
      expect(await serve.scheduler!.runNow()).toBe('ran');
      const metrics = await serve.metrics.render();
      expect(metricValue(metrics, 'listings_sync_runs_total', { outcome: 'locked' })).toBe(1);
      expect(logs.lines().some((l) => l.includes('another replica is running it'))).toBe(true);
    } finally {
      await lock!.release();
      await serve.close();
    }
  });

  it('on close, stops taking webhooks and lets the running sync finish its businesses in flight', async () => {
    // A sandbox of its own whose every answer waits on a clock the test moves: the run gets
    // as far as the test lets it, one business at a time.
    const clock = manualClock();
    const sandbox = await startSandbox({
      seed: 9,
      accounts: 1,
      businessesPerAccount: 4,
      port: 0,
      faults: { latencyMs: 1 },
      clock,
    });
    const serve = await startServe({
      config: serveConfig(),
      warehouse: world.warehouse,
      api: world.api,
      logger: silentLogger(),
      credentials: sandbox.credentials,
      schedule: NEW_YEAR,
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
      businessConcurrency: 1,
    });
    const committed = async () =>
      (await world.warehouse.db.selectFrom('businesses').select('business_id').execute()).map(
        (r) => r.business_id,
      );
    try {
      const run = serve.scheduler!.runNow();
      // Answers go out one wait at a time until a business is committed; the run then
      // waits for the next answer, of the next business.
      let before = await committed();
      while (before.length === 0) {
        await clock.sleeping(1);
        before = await committed();
        if (before.length === 0) clock.advanceToNext();
      }
      await serve.close();
      await run;
      const runs = await world.warehouse.db.selectFrom('sync_runs').selectAll().execute();
      expect(runs).toHaveLength(1);
      expect(runs[0]!.status).toBe('interrupted');
      expect(runs[0]!.finished_at).toBeInstanceOf(Date);
      // The business whose read was held when the close came is not written.
      const businesses = await committed();
      expect(businesses).toHaveLength(1);
      expect(businesses).toEqual(before);
      await expect(fetch(`${serve.url}/healthz`)).rejects.toThrow();
    } finally {
      await serve.close();
      // Whatever the sandbox still holds goes to a closed connection.
      while (clock.advanceToNext()) {}
      await sandbox.close();
    }
  });
});
