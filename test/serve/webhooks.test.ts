/**
 * POST /webhooks on a running `serve`: the sandbox signs and sends boosts over real HTTP;
 * forged, unsigned, tampered, oversized and malformed deliveries are refused and store
 * nothing; duplicates are stored once; a database that is down answers 503.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { pgliteTemplate } from '../helpers/warehouse-template.ts';
import { count } from '../sync/harness.ts';
import { metricValue, serveConfig, startTcpProxy, viaProxy } from './helpers.ts';

const OLD_SECRET = 'whsec-old-4f1c';
const NEW_SECRET = 'whsec-new-9a7e';
const LIMIT = 4096;

function sign(secret: string, body: string | Buffer, encoding: 'hex' | 'base64' = 'hex') {
  return `sha256=${createHmac('sha256', secret).update(body).digest(encoding)}`;
}

async function post(url: string, body: string | Buffer, signature?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['x-service-signature'] = signature;
  const response = await fetch(`${url}/webhooks`, { method: 'POST', headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function boost(adRunId: string, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    event: 'social_post.boost_created',
    timestamp: '2026-01-02T03:04:05Z',
    account_id: 1001,
    location_id: null,
    data: {
      ad_run_id: adRunId,
      is_boost: true,
      boost_state: 'created',
      post_id: '123_456',
      social_profile_id: '42',
      platform: 'facebook',
    },
    ...extra,
  });
}

interface EmitReport {
  events: number;
  delivered: number;
  failed: number;
  deliveries: { statuses: number[]; delivered: boolean }[];
}

async function emit(
  sandbox: RunningSandbox,
  url: string,
  body: { count?: number; secret: string; encoding?: 'hex' | 'base64'; repeat?: number },
): Promise<EmitReport> {
  const response = await fetch(`${sandbox.baseUrl}/__sandbox/webhooks/emit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${url}/webhooks`, ...body }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as EmitReport;
}

describe.each(testBackends)('webhook intake (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let serve: RunningServe;
  const logs = memoryLogger('debug');
  const api = createApiClient({ logger: silentLogger() });

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 1, port: 0 });
    warehouse = await createTestWarehouse(backend);
    serve = await startServe({
      config: serveConfig({
        WEBHOOK_SECRET: `${OLD_SECRET},${NEW_SECRET}`,
        WEBHOOK_BODY_LIMIT_BYTES: String(LIMIT),
        // 100 deliveries at once below are all to be taken (past the limit they would be
        // answered 503 to retry: test/serve/webhook-overload.test.ts).
        WEBHOOK_MAX_IN_FLIGHT: '128',
      }),
      warehouse,
      api,
      logger: logs.logger,
      schedule: 'off',
      port: 0,
      host: '127.0.0.1',
      alertIntervalMs: 0,
    });
  });
  afterAll(async () => {
    await serve?.close();
    await api.close();
    await warehouse?.close();
    await sandbox?.close();
  });
  beforeEach(async () => {
    await truncateAll(warehouse);
  });

  it('stores each signed boost from the sandbox once, with its projection', async () => {
    const report = await emit(sandbox, serve.url, { count: 5, secret: NEW_SECRET, repeat: 2 });
    expect(report).toMatchObject({ events: 5, delivered: 10, failed: 0 });
    expect(await count(warehouse, 'webhook_events')).toBe(5);
    expect(await count(warehouse, 'social_post_boosts')).toBe(5);
    const boosts = await warehouse.db.selectFrom('social_post_boosts').selectAll().execute();
    for (const row of boosts) {
      expect(row.boost_state).toBe('created');
      expect(row.is_boost).toBe(true);
      expect(row.event_key).toBe(`social_post.boost_created:${row.ad_run_id}`);
      expect(row.emitted_at).toBeInstanceOf(Date);
    }
    const events = await warehouse.db.selectFrom('webhook_events').selectAll().execute();
    expect(events.every((e) => e.event === 'social_post.boost_created')).toBe(true);
    expect(events.every((e) => e.account_id !== null && e.location_id === null)).toBe(true);
  });

  it('accepts hex and base64 signatures, under either secret of a rotation', async () => {
    const hexOld = await emit(sandbox, serve.url, { secret: OLD_SECRET, encoding: 'hex' });
    const b64New = await emit(sandbox, serve.url, { secret: NEW_SECRET, encoding: 'base64' });
    const b64Old = await emit(sandbox, serve.url, { secret: OLD_SECRET, encoding: 'base64' });
    for (const report of [hexOld, b64New, b64Old]) expect(report.delivered).toBe(1);
    // Without the `sha256=` prefix, too.
    const body = boost('no-prefix-1');
    const bare = sign(NEW_SECRET, body).slice('sha256='.length);
    expect((await post(serve.url, body, bare)).status).toBe(200);
    expect(await count(warehouse, 'webhook_events')).toBe(4);
  });

  it('refuses forged, unsigned and tampered deliveries with 401 and stores nothing', async () => {
    const forged = await emit(sandbox, serve.url, { secret: 'not-our-secret', count: 2 });
    expect(forged.delivered).toBe(0);
    expect(forged.deliveries.flatMap((d) => d.statuses).every((s) => s === 401)).toBe(true);

    const body = boost('tamper-1');
    const signature = sign(NEW_SECRET, body);
    expect((await post(serve.url, body)).status).toBe(401);
    expect((await post(serve.url, body, '')).status).toBe(401);
    expect((await post(serve.url, body, 'sha256=zz')).status).toBe(401);
    const tampered = body.replace('"facebook"', '"instagram"');
    expect(tampered).not.toBe(body);
    expect((await post(serve.url, tampered, signature)).status).toBe(401);
    // The right digest with a different secret's length of hex is still a mismatch.
    expect((await post(serve.url, body, sign('x', body))).status).toBe(401);

    expect(await count(warehouse, 'webhook_events')).toBe(0);
    expect(await count(warehouse, 'social_post_boosts')).toBe(0);
    // The signature is never logged, nor any secret.
    const text = logs.lines().join('\n');
    expect(text).toContain('missing or invalid signature');
    expect(text).not.toContain(signature.slice(7));
    expect(text).not.toContain(NEW_SECRET);
    expect(text).not.toContain(OLD_SECRET);
  });

  it('refuses an oversized body with 413 and a signed non-JSON body with 400', async () => {
    const big = boost('big-1', { padding: 'x'.repeat(LIMIT) });
    expect((await post(serve.url, big, sign(NEW_SECRET, big))).status).toBe(413);
    for (const bad of ['not json at all', '{"event": ', '[1, 2]', '"text"']) {
      expect((await post(serve.url, bad, sign(NEW_SECRET, bad))).status).toBe(400);
    }
    // Unsigned: this test's own 401, so that it passes alone.
    expect((await post(serve.url, boost('unsigned-1'))).status).toBe(401);
    expect(await count(warehouse, 'webhook_events')).toBe(0);
    const metrics = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
    const name = 'listings_sync_webhook_deliveries_total';
    expect(metricValue(metrics, name, { outcome: 'too_large' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(metrics, name, { outcome: 'bad_json' })).toBeGreaterThanOrEqual(4);
    expect(metricValue(metrics, name, { outcome: 'unauthorized' })).toBeGreaterThanOrEqual(1);
  });

  it('stores the same delivery sent 100 times at once exactly once', async () => {
    const body = boost('concurrent-1');
    const signature = sign(OLD_SECRET, body);
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => post(serve.url, body, signature)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body['duplicate'] === false)).toHaveLength(1);
    expect(await count(warehouse, 'webhook_events')).toBe(1);
    expect(await count(warehouse, 'social_post_boosts')).toBe(1);
  });

  it('stores an unknown event kind, keyed by a hash of the body when it has no ad_run_id', async () => {
    const body = JSON.stringify({ event: 'review.created', account_id: '77', data: { x: 1 } });
    const first = await post(serve.url, body, sign(NEW_SECRET, body));
    const again = await post(serve.url, body, sign(NEW_SECRET, body));
    expect(first).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(again).toMatchObject({ status: 200, body: { duplicate: true } });
    const row = await warehouse.db
      .selectFrom('webhook_events')
      .selectAll()
      .executeTakeFirstOrThrow();
    expect(row.event_key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(row).toMatchObject({ event: 'review.created', account_id: 77 });
    expect(await count(warehouse, 'social_post_boosts')).toBe(0);
  });

  it('answers 503 while the database cannot take the event, and stores it once it can', async () => {
    const body = boost('while-down-1');
    const signature = sign(NEW_SECRET, body);
    if (backend === 'postgres') {
      // A second server whose warehouse connects through a proxy we cut: connections refused.
      const target = new URL(warehouse.databaseUrl!);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      const viaProxyWarehouse = await openWarehouse({
        databaseUrl: viaProxy(warehouse.databaseUrl!, proxy.port),
        searchPath: warehouse.searchPath!,
      });
      const second = await startServe({
        config: serveConfig({ WEBHOOK_SECRET: NEW_SECRET }),
        warehouse: viaProxyWarehouse,
        api,
        logger: silentLogger(),
        schedule: 'off',
        port: 0,
        host: '127.0.0.1',
        alertIntervalMs: 0,
      });
      try {
        // The start-up dispatch holds a connection opened before serve could guard it.
        await second.dispatcher.idle();
        await proxy.cut();
        const down = await post(second.url, body, signature);
        expect(down.status).toBe(503);
        expect(await count(warehouse, 'webhook_events')).toBe(0);
        await proxy.restore();
        expect((await post(second.url, body, signature)).status).toBe(200);
        expect(await count(warehouse, 'webhook_events')).toBe(1);
        const metrics = await (await fetch(`${second.metricsUrl}/metrics`)).text();
        expect(
          metricValue(metrics, 'listings_sync_webhook_deliveries_total', {
            outcome: 'unavailable',
          }),
        ).toBe(1);
      } finally {
        await second.close();
        await viaProxyWarehouse.close();
        await proxy.close();
      }
    } else {
      // PGlite is in-process: "down" is a closed instance (it cannot come back).
      // Its own PGlite, from the migrated template, for this test to close under serve.
      const closing: Warehouse = await openWarehouse({
        memory: true,
        loadDataDir: await pgliteTemplate(),
      });
      const second = await startServe({
        config: serveConfig({ WEBHOOK_SECRET: NEW_SECRET }),
        warehouse: closing,
        api,
        logger: silentLogger(),
        schedule: 'off',
        port: 0,
        host: '127.0.0.1',
        alertIntervalMs: 0,
      });
      try {
        await closing.close();
        expect((await post(second.url, body, signature)).status).toBe(503);
      } finally {
        await second.close();
      }
    }
  });
});
