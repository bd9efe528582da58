/**
 * /healthz, /readyz and /metrics on a running `serve`: /metrics on its own listener
 * (METRICS_PORT), never on the public webhook port; both listeners close on shutdown; the
 * counters move after a scheduled sync; readiness fails while the schema is behind or the
 * database is down, and recovers. "Down" on PostgreSQL is a TCP proxy we cut (connections refused); PGlite
 * runs in this process, so there "down" is a closed instance (which cannot come back).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { SETTINGS } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type RunningServe, type ServeOptions, startServe } from '../../src/serve/server.ts';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { pgliteTemplate } from '../helpers/warehouse-template.ts';
import { count, testApiClient } from '../sync/harness.ts';
import { metricValue, serveConfig, startTcpProxy, viaProxy } from './helpers.ts';

async function get(url: string) {
  const response = await fetch(url);
  const text = await response.text();
  return { status: response.status, text, type: response.headers.get('content-type') };
}

describe.each(testBackends)('health and metrics (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;
  let serve: RunningServe;
  const base = (): Omit<ServeOptions, 'warehouse'> => ({
    config: serveConfig(),
    api,
    logger: silentLogger(),
    credentials: sandbox.credentials,
    schedule: '0 0 1 1 *',
    port: 0,
    host: '127.0.0.1',
    alertIntervalMs: 0,
  });

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, accounts: 1, businessesPerAccount: 4, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
    serve = await startServe({ ...base(), warehouse });
  });
  afterAll(async () => {
    await serve?.close();
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('answers /healthz and /readyz on both listeners', async () => {
    for (const url of [serve.url, serve.metricsUrl]) {
      expect(await get(`${url}/healthz`), url).toMatchObject({ status: 200 });
      const ready = await get(`${url}/readyz`);
      expect(ready.status, url).toBe(200);
      expect(JSON.parse(ready.text)).toEqual({ status: 'ready' });
    }
  });

  it('serves /metrics on the metrics port only: the public webhook port answers 404', async () => {
    expect(serve.metricsPort).not.toBe(serve.port);
    expect(serve.metricsUrl).toBe(`http://127.0.0.1:${serve.metricsPort}`);
    const scraped = await get(`${serve.metricsUrl}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain('listings_sync_webhook_deliveries_total');
    const publicPort = await get(`${serve.url}/metrics`);
    expect(publicPort.status).toBe(404);
    expect(publicPort.text).not.toContain('listings_sync_');
    // And the webhooks are not taken on the metrics port.
    const posted = await fetch(`${serve.metricsUrl}/webhooks`, { method: 'POST', body: '{}' });
    expect(posted.status).toBe(404);
  });

  it('the webhook counter help text names every outcome it counts', async () => {
    const { text } = await get(`${serve.metricsUrl}/metrics`);
    const name = 'listings_sync_webhook_deliveries_total';
    const help = text.split('\n').find((line) => line.startsWith(`# HELP ${name} `));
    const outcomes = [...text.matchAll(new RegExp(`^${name}\\{outcome="([a-z_]+)"\\}`, 'gm'))].map(
      (m) => m[1]!,
    );
    expect(outcomes).toContain('unprocessable');
    for (const outcome of outcomes)
      expect(help, outcome).toMatch(new RegExp(`[(, ]${outcome}[,)]`));
  });

  it('shows the counters moving after a scheduled sync', async () => {
    const before = await get(`${serve.metricsUrl}/metrics`);
    expect(before.status).toBe(200);
    expect(before.type).toContain('text/plain');
    expect(metricValue(before.text, 'listings_sync_runs_total', { outcome: 'succeeded' })).toBe(0);
    expect(metricValue(before.text, 'listings_sync_last_success_timestamp_seconds')).toBe(0);

    expect(await serve.scheduler!.runNow()).toBe('ran');
    const after = (await get(`${serve.metricsUrl}/metrics`)).text;
    expect(metricValue(after, 'listings_sync_runs_total', { outcome: 'succeeded' })).toBe(1);
    expect(
      metricValue(after, 'listings_sync_run_duration_seconds_count', { outcome: 'succeeded' }),
    ).toBe(1);
    // The run's own end, as sync_runs recorded it.
    const finished = await warehouse.db
      .selectFrom('sync_runs')
      .select('finished_at')
      .where('status', '=', 'succeeded')
      .executeTakeFirstOrThrow();
    expect(metricValue(after, 'listings_sync_last_success_timestamp_seconds')).toBe(
      finished.finished_at!.getTime() / 1000,
    );
    expect(
      metricValue(after, 'listings_sync_upstream_requests_total', {
        operation: 'list_businesses',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(
      metricValue(after, 'listings_sync_upstream_requests_total', {
        operation: 'list_listings',
        outcome: 'ok',
      }),
    ).toBe(4);
    expect(after).toContain('listings_sync_upstream_retries_total');
    expect(
      metricValue(after, 'listings_sync_rows_written_total', {
        table: 'listings',
        operation: 'inserted',
      }),
    ).toBe(await count(warehouse, 'listings'));
    expect(after).toContain('listings_sync_quarantined_records_total');
    // No sink is configured: the pending gauge has no series, so an alert on it cannot fire.
    expect(after).toContain('# TYPE listings_sync_alerts_pending gauge');
    expect(after).not.toMatch(/^listings_sync_alerts_pending[{ ]/m);
    expect(after).toContain('process_cpu_user_seconds_total');

    // A scrape is not a side effect: the counters stay where they were.
    const again = (await get(`${serve.metricsUrl}/metrics`)).text;
    expect(
      metricValue(again, 'listings_sync_upstream_requests_total', {
        operation: 'list_businesses',
        outcome: 'ok',
      }),
    ).toBe(1);
  });

  it('closes both listeners on shutdown', async () => {
    const second = await startServe({ ...base(), warehouse, schedule: 'off' });
    expect((await get(`${second.metricsUrl}/metrics`)).status).toBe(200);
    await second.close();
    await expect(fetch(`${second.url}/healthz`)).rejects.toThrow();
    await expect(fetch(`${second.metricsUrl}/healthz`)).rejects.toThrow();
  });

  it('METRICS_PORT: the configured port is the one bound; PORT itself is refused; unset, 9464 as documented', async () => {
    const blocker = await startServe({ ...base(), warehouse, schedule: 'off' });
    try {
      // A taken port, named in the configuration, is the one it tries.
      await expect(
        startServe({
          ...base(),
          config: serveConfig({ METRICS_PORT: String(blocker.metricsPort) }),
          warehouse,
          schedule: 'off',
        }),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await blocker.close();
    }
    await expect(
      startServe({
        ...base(),
        config: serveConfig({ PORT: '18080', METRICS_PORT: '18080' }),
        port: 18080,
        warehouse,
        schedule: 'off',
      }),
    ).rejects.toThrow('METRICS_PORT and PORT are both 18080');
    expect(serveConfig().metricsPort).toBeUndefined();
    expect(SETTINGS.METRICS_PORT.defaultText).toContain('9464');
  });

  it('/readyz fails while migrations are pending, and recovers after `migrate`', async () => {
    const fresh = await createTestWarehouse(backend, { migrate: false });
    const second = await startServe({ ...base(), warehouse: fresh, schedule: 'off' });
    try {
      const notReady = await get(`${second.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(JSON.parse(notReady.text).reason).toMatch(/migration\(s\) pending \(0001_initial/);
      await migrateToLatest(fresh.db);
      expect((await get(`${second.url}/readyz`)).status).toBe(200);
    } finally {
      await second.close();
      await fresh.close();
    }
  });

  it('/readyz fails while the database is down, and recovers after', async () => {
    const runsBefore = await count(warehouse, 'sync_runs');
    if (backend === 'postgres') {
      const target = new URL(warehouse.databaseUrl!);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      const proxied = await openWarehouse({
        databaseUrl: viaProxy(warehouse.databaseUrl!, proxy.port),
        searchPath: warehouse.searchPath!,
      });
      const second = await startServe({ ...base(), warehouse: proxied, schedule: 'off' });
      try {
        await second.dispatcher.idle();
        expect((await get(`${second.url}/readyz`)).status).toBe(200);
        await proxy.cut();
        const down = await get(`${second.url}/readyz`);
        expect(down.status).toBe(503);
        expect(JSON.parse(down.text).reason).toMatch(/database is unreachable/);
        // /healthz is the process: still alive; /metrics still answers.
        expect((await get(`${second.url}/healthz`)).status).toBe(200);
        expect((await get(`${second.metricsUrl}/metrics`)).status).toBe(200);
        await proxy.restore();
        expect((await get(`${second.url}/readyz`)).status).toBe(200);
      } finally {
        await second.close();
        await proxied.close();
        await proxy.close();
      }
    } else {
      // Its own PGlite, from the migrated template, for this test to close under serve.
      const closing = await openWarehouse({ memory: true, loadDataDir: await pgliteTemplate() });
      const second = await startServe({ ...base(), warehouse: closing, schedule: 'off' });
      try {
        await second.dispatcher.idle();
        expect((await get(`${second.url}/readyz`)).status).toBe(200);
        await closing.close();
        const down = await get(`${second.url}/readyz`);
        expect(down.status).toBe(503);
        expect(JSON.parse(down.text).reason).toMatch(/database is unreachable/);
        expect((await get(`${second.url}/healthz`)).status).toBe(200);
      } finally {
        await second.close();
      }
    }
    // The suite's own warehouse was never touched.
    expect(await count(warehouse, 'sync_runs')).toBe(runsBefore);
  });
});
