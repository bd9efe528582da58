/**
 * The schedule: it fires on a seconds cron, never overlaps a run still going (skipping and
 * logging the tick), survives a failing run, steps aside for another replica's lock, and
 * on close lets the running sync finish its businesses in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { memoryLogger, silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { startScheduler } from '../../src/serve/scheduler.ts';
import { startServe } from '../../src/serve/server.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/sync-lock.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { testApiClient } from '../sync/harness.ts';
import { metricValue, serveConfig, waitFor } from './helpers.ts';

const EVERY_SECOND = '*/1 * * * * *';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('scheduler', () => {
  it('fires every second, skips ticks while a run is going, and never runs two at once', async () => {
    const logs = memoryLogger('debug');
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    let skipped = 0;
    const scheduler = startScheduler({
      schedule: EVERY_SECOND,
      timezone: 'Europe/Berlin',
      logger: logs.logger,
      onSkippedTick: () => {
        skipped += 1;
      },
      run: async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        runs += 1;
        await sleep(2_200);
        running -= 1;
      },
    });
    try {
      await waitFor('two runs and two skipped ticks', () => runs >= 2 && skipped >= 2, 15_000);
    } finally {
      await scheduler.stop();
    }
    expect(maxRunning).toBe(1);
    expect(scheduler.nextRun()).toBeNull();
    const text = logs.lines().join('\n');
    expect(text).toContain('next sync scheduled');
    expect(text).toContain('"nextRun":"');
    expect(text).toContain('this tick is skipped');
  });

  it('logs a failed run with its reason, and the next tick still fires', async () => {
    const logs = memoryLogger('debug');
    let calls = 0;
    const scheduler = startScheduler({
      schedule: EVERY_SECOND,
      timezone: 'UTC',
      logger: logs.logger,
      run: async () => {
        calls += 1;
        if (calls === 1) throw new Error('upstream exploded');
      },
    });
    try {
      await waitFor('a second run after a failure', () => calls >= 2, 10_000);
    } finally {
      await scheduler.stop();
    }
    const failure = logs.lines().find((l) => l.includes('the sync failed'));
    expect(failure).toContain('upstream exploded');
  });
});

describe.each(testBackends)('scheduled sync in serve (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 9, accounts: 1, businessesPerAccount: 4, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('never overlaps a slow run: ticks during it are skipped', async () => {
    await truncateAll(warehouse);
    // Every request takes 150 ms: a run lasts well over a second, longer than a tick.
    sandbox.setFaults({ latencyMs: 150 });
    const serve = await startServe({
      config: serveConfig(),
      warehouse,
      api,
      logger: silentLogger(),
      credentials: sandbox.credentials,
      schedule: EVERY_SECOND,
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
      businessConcurrency: 1,
    });
    try {
      await waitFor(
        'two finished runs',
        async () => {
          const done = await warehouse.db
            .selectFrom('sync_runs')
            .select('run_id')
            .where('finished_at', 'is not', null)
            .execute();
          return done.length >= 2;
        },
        30_000,
      );
    } finally {
      await serve.close();
      sandbox.setFaults({ latencyMs: 0 });
    }
    const runs = await warehouse.db
      .selectFrom('sync_runs')
      .select(['started_at', 'finished_at', 'status', 'trigger'])
      .orderBy('started_at')
      .execute();
    for (let i = 1; i < runs.length; i++) {
      expect(runs[i]!.started_at.getTime()).toBeGreaterThanOrEqual(
        runs[i - 1]!.finished_at!.getTime(),
      );
    }
    expect(runs.every((r) => r.trigger === 'schedule')).toBe(true);
    const metrics = await serve.metrics.render();
    expect(metricValue(metrics, 'listings_sync_schedule_ticks_skipped_total')).toBeGreaterThan(0);
  });

  it('steps aside when another replica holds the lock', async () => {
    const logs = memoryLogger('info');
    const serve = await startServe({
      config: serveConfig(),
      warehouse,
      api,
      logger: logs.logger,
      credentials: sandbox.credentials,
      schedule: '0 0 1 1 *',
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
    });
    const lock = await tryAcquireSyncLock(warehouse, 'listings-sync:sync');
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
    await truncateAll(warehouse);
    sandbox.setFaults({ latencyMs: 200 });
    const serve = await startServe({
      config: serveConfig(),
      warehouse,
      api,
      logger: silentLogger(),
      credentials: sandbox.credentials,
      schedule: '0 0 1 1 *',
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
      businessConcurrency: 1,
    });
    try {
      const run = serve.scheduler!.runNow();
      await waitFor('a business committed', async () => {
        const row = await warehouse.db
          .selectFrom('businesses')
          .select('business_id')
          .executeTakeFirst();
        return row !== undefined;
      });
      await serve.close();
      await run;
      const runs = await warehouse.db.selectFrom('sync_runs').selectAll().execute();
      expect(runs).toHaveLength(1);
      expect(runs[0]!.status).toBe('interrupted');
      expect(runs[0]!.finished_at).toBeInstanceOf(Date);
      const businesses = await warehouse.db
        .selectFrom('businesses')
        .select('business_id')
        .execute();
      expect(businesses.length).toBeGreaterThan(0);
      expect(businesses.length).toBeLessThan(4);
      await expect(fetch(`${serve.url}/healthz`)).rejects.toThrow();
    } finally {
      sandbox.setFaults({ latencyMs: 0 });
      await serve.close();
    }
  });
});
