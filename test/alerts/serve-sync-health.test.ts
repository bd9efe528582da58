/**
 * The dead man's switch in `serve` (fake timers, no sleeps): with `SYNC_SCHEDULE=off`, as
 * in the Kubernetes layout, `sync_stale` fires when no run of an account landed in
 * `sync_runs` for the threshold, and not while the CronJob's runs keep landing; the
 * last-success gauge reports those runs, and `sync_failed` fires for a failed one.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import type { Credential } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import {
  emptySyncRunStats,
  finishSyncRun,
  startSyncRun,
} from '../../src/warehouse/runs/sync-runs.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { metricValue, serveConfig } from '../serve/helpers.ts';
import { testApiClient } from '../sync/harness.ts';

const HOUR = 3_600_000;
const T0 = new Date('2025-03-01T00:00:00.000Z');
const EAST: Credential = {
  name: 'east',
  baseUrl: 'http://127.0.0.1:9',
  authToken: 'tok-east',
  userEmail: 'east@example.com',
};

function rulesFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ls-health-')), 'rules.json');
  writeFileSync(
    path,
    JSON.stringify({
      rules: { sync_stale: { enabled: true, hours: 26 }, sync_failed: { enabled: true } },
    }),
  );
  return path;
}

describe.each(testBackends)('sync health in serve (%s)', (backend) => {
  let warehouse: TestWarehouse;
  let api: ApiClient;
  let serve: RunningServe;

  beforeEach(async () => {
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
    // Only the clock and the interval are fake: the database and HTTP run for real.
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'], now: T0 });
    serve = await startServe({
      config: serveConfig({ ALERT_RULES_FILE: rulesFile() }),
      warehouse,
      api,
      logger: silentLogger(),
      schedule: 'off',
      credentials: [EAST],
      port: 0,
      host: '127.0.0.1',
      alertSinks: [],
      // One check an hour: 27 simulated hours are 27 checks.
      alertIntervalMs: HOUR,
    });
    await serve.settled();
  });
  afterEach(async () => {
    vi.useRealTimers();
    await serve?.close();
    await api?.close();
    await warehouse?.close();
  });

  async function hoursPass(hours: number) {
    await vi.advanceTimersByTimeAsync(hours * HOUR);
    await serve.settled();
  }

  /** What the nightly CronJob leaves behind: a run row finished now. */
  async function cronJobRun(status: 'succeeded' | 'failed') {
    const runId = await startSyncRun(warehouse.db, {
      trigger: 'cli',
      streams: [],
      accounts: ['east'],
    });
    await finishSyncRun(warehouse.db, runId, {
      status,
      stats: emptySyncRunStats(),
      error: status === 'failed' ? 'database timeout' : null,
    });
    return runId;
  }

  async function alerts(kind: string) {
    return warehouse.db.selectFrom('alerts').selectAll().where('kind', '=', kind).execute();
  }

  it('fires sync_stale once when the CronJob never ran for the threshold', async () => {
    await hoursPass(25);
    expect(await alerts('sync_stale')).toHaveLength(0);
    await hoursPass(2);
    const raised = await alerts('sync_stale');
    expect(raised.map((a) => [a.account_name, a.business_id, a.dedupe_key])).toEqual([
      ['east', null, 'sync_stale:east:never'],
    ]);
    expect(raised[0]!.detected_at.getTime()).toBeGreaterThanOrEqual(T0.getTime() + 26 * HOUR);
    await hoursPass(10);
    expect(await alerts('sync_stale')).toHaveLength(1);
    const metrics = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
    expect(metricValue(metrics, 'listings_sync_last_success_timestamp_seconds')).toBe(0);
    expect(metricValue(metrics, 'listings_sync_alerts_raised_total', { kind: 'sync_stale' })).toBe(
      1,
    );
  });

  it('stays quiet while the CronJob runs land nightly, reports them, and fires after they stop', async () => {
    for (let night = 0; night < 4; night++) {
      await hoursPass(20);
      await cronJobRun('succeeded');
      await hoursPass(4);
    }
    expect(await alerts('sync_stale')).toHaveLength(0);
    const lastRun = T0.getTime() + (3 * 24 + 20) * HOUR;
    const metrics = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
    expect(metricValue(metrics, 'listings_sync_last_success_timestamp_seconds')).toBe(
      lastRun / 1000,
    );

    // The CronJob stops: 26 hours after its last run, one alert.
    await hoursPass(21);
    expect(await alerts('sync_stale')).toHaveLength(0);
    await hoursPass(2);
    const raised = await alerts('sync_stale');
    expect(raised.map((a) => a.dedupe_key)).toEqual([
      `sync_stale:east:${new Date(lastRun).toISOString()}`,
    ]);
  });

  it('fires sync_stale for an account whose credential fails inside nightly partial runs', async () => {
    // Another account keeps each run `partial`, not `failed`; this one's token was revoked.
    for (let night = 0; night < 2; night++) {
      await hoursPass(20);
      const runId = await startSyncRun(warehouse.db, {
        trigger: 'cli',
        streams: [],
        accounts: ['east', 'west'],
      });
      await finishSyncRun(warehouse.db, runId, {
        status: 'partial',
        stats: {
          ...emptySyncRunStats(),
          credentials: [
            { name: 'east', status: 'failed', businesses: 0, error: 'Authentication Failure' },
            { name: 'west', status: 'succeeded', businesses: 3 },
          ],
        },
        error: null,
      });
      await hoursPass(4);
    }
    // 48 hours without a run that synced east: one alert, counted from serve's start.
    const raised = await alerts('sync_stale');
    expect(raised.map((a) => [a.account_name, a.dedupe_key])).toEqual([
      ['east', 'sync_stale:east:never'],
    ]);
  });

  it('fires sync_failed once for a failed CronJob run', async () => {
    await hoursPass(3);
    const failed = await cronJobRun('failed');
    await hoursPass(1);
    await hoursPass(1);
    const raised = await alerts('sync_failed');
    expect(raised.map((a) => [a.run_id, a.status])).toEqual([[failed, 'failed']]);
    expect(raised[0]!.details).toMatchObject({ error: 'database timeout' });
  });
});
