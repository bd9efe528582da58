/**
 * Alerts end to end: a sandbox day advance and a scheduled sync raise alerts; `serve`
 * delivers each to a Slack-format sink and a signed JSON sink on a local receiver that
 * fails its first two requests, exactly once per sink, and records the delivery.
 */
import { createHmac } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { memoryLogger, silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createAlertDispatcher } from '../../src/serve/alert-dispatcher.ts';
import { jsonWebhookSink, slackSink } from '../../src/serve/alert-sinks.ts';
import { recentAlerts } from '../../src/serve/alert-store.ts';
import { renderAlerts } from '../../src/serve/alerts-command.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { count, sync, testApiClient } from '../sync/harness.ts';
import { metricValue, serveConfig, waitFor } from './helpers.ts';

const ALERT_SECRET = 'alert-secret-77c1';

interface Received {
  path: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
}

async function startReceiver(failFirst: number) {
  const received: Received[] = [];
  const app: FastifyInstance = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_r, body, done) => done(null, body));
  let seen = 0;
  app.post('/:sink', async (request, reply) => {
    seen += 1;
    const status = seen <= failFirst ? 500 : 200;
    received.push({
      path: request.url,
      status,
      headers: request.headers,
      raw: String(request.body),
    });
    return reply.code(status).send(status === 200 ? 'ok' : 'boom');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, received, close: () => app.close() };
}

describe.each(testBackends)('alert delivery (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let serve: RunningServe;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, accounts: 2, businessesPerAccount: 6, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
    receiver = await startReceiver(2);
  });
  afterAll(async () => {
    await serve?.close();
    await receiver?.close();
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('delivers every alert of a scheduled run exactly once per sink, through two failures', async () => {
    // The first sync sets the baseline; a day later some listings turn Inaccurate.
    expect((await sync(warehouse, api, sandbox.credentials)).status).toBe('succeeded');
    sandbox.advanceDays(1);

    serve = await startServe({
      config: serveConfig(),
      warehouse,
      api,
      logger: silentLogger(),
      credentials: sandbox.credentials,
      // A schedule that will not fire during the test; the run is started by hand.
      schedule: '0 0 1 1 *',
      port: 0,
      host: '127.0.0.1',
      alertSinks: [
        slackSink(`${receiver.url}/slack`),
        jsonWebhookSink(`${receiver.url}/hook`, ALERT_SECRET),
      ],
      alertBackoff: { baseMs: 1, maxMs: 20 },
      alertIntervalMs: 30,
    });
    expect(await serve.scheduler!.runNow()).toBe('ran');
    const raised = await count(warehouse, 'alerts');
    expect(raised).toBeGreaterThan(0);
    await waitFor('every alert delivered', async () => {
      const pending = await count(warehouse, 'alerts', sql`delivered_at is null`);
      return pending === 0;
    });

    const alerts = await warehouse.db.selectFrom('alerts').selectAll().execute();
    const ok = receiver.received.filter((r) => r.status === 200);
    expect(receiver.received.filter((r) => r.status === 500)).toHaveLength(2);
    expect(ok.filter((r) => r.path === '/slack')).toHaveLength(raised);
    expect(ok.filter((r) => r.path === '/hook')).toHaveLength(raised);

    const hooksByKey = new Map<string, Received[]>();
    for (const hook of ok.filter((r) => r.path === '/hook')) {
      const key = String(hook.headers['idempotency-key']);
      hooksByKey.set(key, [...(hooksByKey.get(key) ?? []), hook]);
      // Signed like our own webhooks: sha256=<hex HMAC of the raw body>.
      const expected = `sha256=${createHmac('sha256', ALERT_SECRET).update(hook.raw).digest('hex')}`;
      expect(hook.headers['x-service-signature']).toBe(expected);
      expect(JSON.parse(hook.raw).dedupe_key).toBe(key);
    }
    for (const alert of alerts) {
      expect(hooksByKey.get(alert.dedupe_key)).toHaveLength(1);
      expect(alert.delivered_at).toBeInstanceOf(Date);
      expect(alert.attempts).toBeGreaterThanOrEqual(1);
      expect(alert.last_error).toBeNull();
      expect(alert.delivered_sinks).toEqual(['slack', 'webhook']);
    }
    // Two failed requests mean at most two alerts needed a second attempt.
    const extra = alerts.reduce((sum, a) => sum + a.attempts - 1, 0);
    expect(extra).toBeGreaterThanOrEqual(1);
    expect(extra).toBeLessThanOrEqual(2);

    // The Slack message reads: business name, directory, what is wrong, the live link.
    const slackTexts = ok
      .filter((r) => r.path === '/slack')
      .map((r) => (JSON.parse(r.raw) as { text: string }).text);
    const first = alerts[0]!;
    const business = await warehouse.db
      .selectFrom('businesses')
      .select('name')
      .where('business_id', '=', first.business_id)
      .executeTakeFirstOrThrow();
    const listing = await warehouse.db
      .selectFrom('listings')
      .selectAll()
      .where('business_id', '=', first.business_id)
      .where('listing_id', '=', first.listing_id!)
      .executeTakeFirstOrThrow();
    const text = slackTexts.find(
      (t) => t.includes(`*${first.site_name}*`) && t.includes(business.name!),
    );
    expect(text).toBeDefined();
    expect(text).toContain('Inaccurate');
    const wrong = [
      listing.name_valid === false && 'name',
      listing.phone_valid === false && 'phone',
      listing.address_valid === false && 'address',
    ].filter(Boolean);
    if (wrong.length) expect(text).toContain(`Wrong on the directory: ${wrong.join(', ')}.`);
    if (listing.live_link?.startsWith('http')) expect(text).toContain(listing.live_link);

    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    expect(metricValue(metrics, 'listings_sync_alerts_delivered_total', { sink: 'slack' })).toBe(
      raised,
    );
    expect(metricValue(metrics, 'listings_sync_alerts_delivered_total', { sink: 'webhook' })).toBe(
      raised,
    );
    expect(
      metricValue(metrics, 'listings_sync_alert_delivery_failures_total', { sink: 'slack' }) +
        metricValue(metrics, 'listings_sync_alert_delivery_failures_total', { sink: 'webhook' }),
    ).toBe(2);
    expect(metricValue(metrics, 'listings_sync_alerts_pending')).toBe(0);
    expect(metricValue(metrics, 'listings_sync_alerts_raised_total')).toBe(raised);

    // `listings-sync alerts` shows them delivered.
    const table = renderAlerts(
      await recentAlerts(warehouse.db, { pending: false, limit: 50 }),
      false,
    );
    expect(table).toContain('previous → status');
    expect(table).toContain('→ Inaccurate');
    expect(table).not.toContain('pending');
    expect(renderAlerts(await recentAlerts(warehouse.db, { pending: true, limit: 50 }), true)).toBe(
      'No pending alerts.\n',
    );
  });

  it('keeps alerts queued while a sink is down, records the error, and logs them once without sinks', async () => {
    await serve.close();
    // Make every alert pending again.
    await warehouse.db
      .updateTable('alerts')
      .set({ delivered_at: null, attempts: 0, delivered_sinks: '[]', next_attempt_at: null })
      .execute();
    const raised = await count(warehouse, 'alerts');

    const down = createAlertDispatcher({
      db: warehouse.db,
      sinks: [slackSink('http://127.0.0.1:9/slack')],
      logger: silentLogger(),
      backoff: { baseMs: 60_000, maxMs: 60_000 },
    });
    expect(await down.dispatch()).toMatchObject({ delivered: 0, failed: raised });
    // Backed off: a second pass right away sends nothing.
    expect(await down.dispatch()).toMatchObject({ delivered: 0, failed: 0 });
    const rows = await warehouse.db.selectFrom('alerts').selectAll().execute();
    for (const row of rows) {
      expect(row.delivered_at).toBeNull();
      expect(row.attempts).toBe(1);
      expect(row.last_error).toMatch(/^slack: no answer/);
      expect(row.next_attempt_at!.getTime()).toBeGreaterThan(Date.now() + 30_000);
    }
    const pendingTable = renderAlerts(
      await recentAlerts(warehouse.db, { pending: true, limit: 50 }),
      true,
    );
    expect(pendingTable).toContain('slack: no answer');

    const logs = memoryLogger('info');
    const none = createAlertDispatcher({ db: warehouse.db, sinks: [], logger: logs.logger });
    expect(await none.dispatch()).toMatchObject({ logged: raised });
    expect(await none.dispatch()).toMatchObject({ logged: 0 });
    const lines = logs.lines().filter((l) => l.includes('no alert sink configured'));
    expect(lines).toHaveLength(raised);
    expect(await count(warehouse, 'alerts', sql`delivered_at is null`)).toBe(raised);
  });
});
