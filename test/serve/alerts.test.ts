/**
 * Alerts end to end: a sandbox day advance and a scheduled sync raise alerts; `serve`
 * delivers them to a Slack sink (one digest per account and run) and a signed JSON sink
 * (one event per alert) on a local receiver whose JSON endpoint fails its first two
 * requests: every alert reaches each sink exactly once, and the delivery is recorded.
 */
import { createHmac } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAlertDispatcher } from '../../src/alerts/dispatcher.ts';
import { LISTING_INACCURATE } from '../../src/alerts/kinds/index.ts';
import { recentAlerts } from '../../src/alerts/outbox.ts';
import { raise } from '../../src/alerts/outbox-rows.ts';
import { slackSink } from '../../src/alerts/slack-sink.ts';
import { jsonWebhookSink } from '../../src/alerts/webhook-sink.ts';
import type { ApiClient } from '../../src/api/index.ts';
import { renderAlerts } from '../../src/cli/commands/alert-list.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { count, sync, testApiClient } from '../sync/harness.ts';
import { metricValue, serveConfig, waitFor } from './helpers.ts';

const ALERT_SECRET = 'alert-secret-77c1';

interface Received {
  path: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
}

/** A receiver for both sinks; `/hook` answers 500 to its first `failFirst` requests. */
async function startReceiver(failFirst: number) {
  const received: Received[] = [];
  const app: FastifyInstance = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_r, body, done) => done(null, body));
  let seen = 0;
  app.post('/:sink', async (request, reply) => {
    if (request.url === '/hook') seen += 1;
    const status = request.url === '/hook' && seen <= failFirst ? 500 : 200;
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
    // Its own warehouse state: the first sync sets the baseline; a day later some listings
    // turn Inaccurate.
    await truncateAll(warehouse);
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
    expect(receiver.received.filter((r) => r.status === 500).map((r) => r.path)).toEqual([
      '/hook',
      '/hook',
    ]);
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
      expect(alert.last_error).toBeNull();
      expect(alert.delivered_sinks).toEqual(['slack', 'webhook']);
    }
    // Two refused requests: two alerts took a second attempt, the others one.
    expect(alerts.map((a) => a.attempts).sort()).toEqual([...Array(raised - 2).fill(1), 2, 2]);

    // Slack got one digest per account with alerts (one run), headed by its counts.
    const byAccount = new Map<string, number>();
    for (const alert of alerts) {
      byAccount.set(alert.account_name!, (byAccount.get(alert.account_name!) ?? 0) + 1);
    }
    const slackTexts = ok
      .filter((r) => r.path === '/slack')
      .map((r) => (JSON.parse(r.raw) as { text: string }).text);
    expect(slackTexts).toHaveLength(byAccount.size);
    const runId = alerts[0]!.run_id!;
    for (const [account, n] of byAccount) {
      const header =
        `:bell: *${n} alert${n === 1 ? '' : 's'}* for account *${account}*, run ${runId.slice(0, 8)}: ` +
        `${n} listing${n === 1 ? '' : 's'} newly Inaccurate.`;
      const text = slackTexts.find((t) => t.startsWith(header));
      expect(text, header).toBeDefined();
      // The worst ten are listed, each with its live link; the rest are counted.
      const listed = text!.split('\n').filter((line) => line.startsWith('• :warning: <https://'));
      expect(listed).toHaveLength(Math.min(n, 10));
      const last = text!.split('\n').at(-1);
      expect(last).toBe(
        n > 10 ? `…and ${n - 10} more (\`listings-sync alerts\` lists them all).` : listed.at(-1),
      );
    }

    const metrics = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
    expect(metricValue(metrics, 'listings_sync_alerts_delivered_total', { sink: 'slack' })).toBe(
      raised,
    );
    expect(metricValue(metrics, 'listings_sync_alerts_delivered_total', { sink: 'webhook' })).toBe(
      raised,
    );
    expect(
      metricValue(metrics, 'listings_sync_alert_delivery_failures_total', { sink: 'webhook' }),
    ).toBe(2);
    expect(
      metricValue(metrics, 'listings_sync_alert_delivery_failures_total', { sink: 'slack' }),
    ).toBe(0);
    expect(metricValue(metrics, 'listings_sync_alerts_pending', { sink: 'slack' })).toBe(0);
    expect(metricValue(metrics, 'listings_sync_alerts_pending', { sink: 'webhook' })).toBe(0);
    expect(metrics).toMatch(/^listings_sync_alerts_pending\{sink="slack"\} 0$/m);
    expect(
      metricValue(metrics, 'listings_sync_alerts_raised_total', { kind: 'listing_inaccurate' }),
    ).toBe(raised);
    // The run serve started is the last success, read back from sync_runs.
    const finished = await warehouse.db
      .selectFrom('sync_runs')
      .select('finished_at')
      .orderBy('finished_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(metricValue(metrics, 'listings_sync_last_success_timestamp_seconds')).toBe(
      finished.finished_at!.getTime() / 1000,
    );

    // `listings-sync alerts` shows them delivered to both sinks.
    const table = renderAlerts(await recentAlerts(warehouse.db, { pending: false, limit: 50 }), {
      pending: false,
      sinks: ['slack', 'webhook'],
    });
    expect(table.split('\n')[0]).toMatch(/^kind +business +what changed +detected +delivery/);
    expect(table).toContain('listing_inaccurate');
    expect(table).toContain('→ Inaccurate');
    expect(table).toContain('slack: sent, webhook: sent');
    expect(table).not.toContain('pending');
    expect(
      renderAlerts(await recentAlerts(warehouse.db, { pending: true, limit: 50 }), {
        pending: true,
        sinks: ['slack', 'webhook'],
      }),
    ).toBe('No pending alerts.\n');
    // Stopped here, so its interval sends nothing another test seeds.
    await serve.close();
  });

  it('keeps alerts queued while a sink is down, records the error, and logs them once without sinks', async () => {
    // Its own alerts: seven pending listing alerts, whatever ran before.
    await sql`delete from alerts`.execute(warehouse.db);
    const raised = await raise(
      warehouse.db,
      Array.from({ length: 7 }, (_, i) => ({
        kind: LISTING_INACCURATE,
        dedupeKey: `queued:${i}`,
        accountName: 'account-1',
        businessId: 500 + i,
        listingId: i,
        siteName: 'Yelp',
        previousStatus: 'Accurate',
        status: 'Inaccurate',
        detectedAt: new Date(Date.UTC(2025, 2, 1, 3, i)),
        runId: null,
      })),
    );
    expect(raised).toBe(7);

    // The dispatcher's clock stands still: the next attempt is a minute (less a fifth of
    // jitter at most) after that moment, however long the test takes.
    const at = new Date();
    const down = createAlertDispatcher({
      db: warehouse.db,
      sinks: [slackSink('http://127.0.0.1:9/slack')],
      logger: silentLogger(),
      backoff: { baseMs: 60_000, maxMs: 60_000 },
      now: () => at,
    });
    expect(await down.dispatch()).toMatchObject({ delivered: 0, failed: raised });
    // Backed off: a second pass right away sends nothing.
    expect(await down.dispatch()).toMatchObject({ delivered: 0, failed: 0 });
    const rows = await warehouse.db.selectFrom('alerts').selectAll().execute();
    for (const row of rows) {
      expect(row.delivered_at).toBeNull();
      expect(row.attempts).toBe(1);
      expect(row.last_error).toMatch(/^slack: no answer/);
      expect(row.next_attempt_at!.getTime()).toBeGreaterThanOrEqual(at.getTime() + 48_000);
      expect(row.next_attempt_at!.getTime()).toBeLessThanOrEqual(at.getTime() + 60_000);
    }
    const pendingTable = renderAlerts(
      await recentAlerts(warehouse.db, { pending: true, limit: 50 }),
      { pending: true, sinks: ['slack'] },
    );
    expect(pendingTable).toContain('slack: pending');
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
