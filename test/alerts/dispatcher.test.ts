/**
 * The dispatcher against a real database and real HTTP receivers: a run's 50 alerts make
 * one Slack digest (under Slack's size limit) and 50 signed webhook events (or one batch);
 * two dispatchers with a slow sink never deliver an alert twice (the lease covers the work
 * claimed); with no sink a backlog larger than a page is logged once, each alert once.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlertDispatcher } from '../../src/alerts/dispatcher.ts';
import { LISTING_INACCURATE, LOW_RATING_REVIEW, RANK_DROP } from '../../src/alerts/kinds/index.ts';
import type { AlertForDelivery } from '../../src/alerts/outbox.ts';
import { type NewAlert, raise } from '../../src/alerts/outbox-rows.ts';
import type { AlertSink } from '../../src/alerts/sinks.ts';
import { slackSink } from '../../src/alerts/slack-sink.ts';
import { jsonWebhookSink } from '../../src/alerts/webhook-sink.ts';
import { silentLogger } from '../../src/log.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';

const T0 = new Date('2025-03-01T03:00:00.000Z');
const RUN = '6f1d9a52-3c1e-4a38-9d55-1b6c0e0c8a0a';
const SECRET = 'alert-secret-5d1';
/** A digest's text stops before 3,500 characters (docs/alerts.md). */
const SLACK_TEXT_LIMIT = 3_500;

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
}

async function startReceiver() {
  const received: Received[] = [];
  const app: FastifyInstance = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_r, body, done) => done(null, body));
  app.post('/:sink', async (request) => {
    received.push({ path: request.url, headers: request.headers, raw: String(request.body) });
    return 'ok';
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, received, close: () => app.close() };
}

/** 30 listings, 12 rank drops and 8 low ratings of one account and run, long names included. */
function runOf50(): NewAlert[] {
  return Array.from({ length: 50 }, (_, i): NewAlert => {
    const kind = i < 30 ? LISTING_INACCURATE : i < 42 ? RANK_DROP : LOW_RATING_REVIEW;
    return {
      kind,
      dedupeKey: `test:${i}`,
      accountName: 'east',
      businessId: 1000 + i,
      listingId: kind === LISTING_INACCURATE ? i : null,
      siteName: kind === RANK_DROP ? 'Google_new.local' : 'Yelp',
      keyword: kind === RANK_DROP ? `emergency dentist open on sundays ${'x'.repeat(200)}` : null,
      previousStatus: 'Accurate',
      status: kind === RANK_DROP ? '14' : 'Inaccurate',
      details: kind === RANK_DROP ? { rank: 14, previousRank: 2, weekAgoRank: 2 } : { rating: 1 },
      detectedAt: new Date(T0.getTime() + i),
      runId: RUN,
    };
  });
}

describe.each(testBackends)('alert dispatcher (%s)', (backend) => {
  let wh: Warehouse;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
    receiver = await startReceiver();
  });
  beforeEach(async () => {
    await truncateAll(wh);
    receiver.received.length = 0;
  });
  afterAll(async () => {
    await receiver?.close();
    await wh?.close();
  });

  it('sends a run of 50 alerts as one Slack digest and 50 signed webhook events', async () => {
    await raise(wh.db, runOf50());
    const dispatcher = createAlertDispatcher({
      db: wh.db,
      sinks: [slackSink(`${receiver.url}/slack`), jsonWebhookSink(`${receiver.url}/hook`, SECRET)],
      logger: silentLogger(),
    });
    expect(await dispatcher.dispatch()).toMatchObject({ delivered: 50, failed: 0 });

    const slack = receiver.received.filter((r) => r.path === '/slack');
    expect(slack).toHaveLength(1);
    const text = (JSON.parse(slack[0]!.raw) as { text: string }).text;
    expect(text.split('\n')[0]).toBe(
      `:bell: *50 alerts* for account *east*, run ${RUN.slice(0, 8)}: ` +
        '30 listings newly Inaccurate, 8 low-rated reviews, 12 rank drops.',
    );
    expect(text.length).toBeLessThanOrEqual(SLACK_TEXT_LIMIT);
    expect(text).toMatch(/\n…and \d+ more \(`listings-sync alerts` lists them all\)\.$/);

    const hooks = receiver.received.filter((r) => r.path === '/hook');
    expect(hooks).toHaveLength(50);
    expect(new Set(hooks.map((h) => h.headers['idempotency-key']))).toEqual(
      new Set(runOf50().map((a) => a.dedupeKey)),
    );
    for (const hook of hooks) {
      expect(hook.headers['x-service-signature']).toBe(
        `sha256=${createHmac('sha256', SECRET).update(hook.raw).digest('hex')}`,
      );
    }
    const rows = await wh.db
      .selectFrom('alerts')
      .select(['delivered_at', 'delivered_sinks'])
      .execute();
    expect(rows.every((r) => r.delivered_at !== null)).toBe(true);
    expect(new Set(rows.map((r) => JSON.stringify(r.delivered_sinks)))).toEqual(
      new Set(['["slack","webhook"]']),
    );
  });

  it('sends one signed batch per account and run when the webhook opts in', async () => {
    await raise(wh.db, runOf50());
    const dispatcher = createAlertDispatcher({
      db: wh.db,
      sinks: [jsonWebhookSink(`${receiver.url}/hook`, SECRET, { mode: 'batch' })],
      logger: silentLogger(),
    });
    expect(await dispatcher.dispatch()).toMatchObject({ delivered: 50 });
    expect(receiver.received).toHaveLength(1);
    const body = JSON.parse(receiver.received[0]!.raw) as { alerts: { dedupe_key: string }[] };
    expect(body.alerts.map((a) => a.dedupe_key).sort()).toEqual(
      runOf50()
        .map((a) => a.dedupeKey)
        .sort(),
    );
    expect(receiver.received[0]!.headers['idempotency-key']).toMatch(/^batch:[0-9a-f]{64}$/);
  });

  it('never delivers an alert twice with two dispatchers and a sink slower than the old lease', async () => {
    await raise(
      wh.db,
      Array.from({ length: 50 }, (_, i) => ({ ...runOf50()[i]!, kind: LISTING_INACCURATE })),
    );
    // A shared clock that each send moves by 9.5 s: 50 sends are ~8 minutes of work.
    let clock = T0.getTime();
    const now = () => new Date(clock);
    const sent: number[] = [];
    let second: Promise<unknown> | undefined;
    const slow: AlertSink = {
      name: 'webhook',
      grouping: 'each',
      async send(alerts) {
        clock += 9_500;
        sent.push(...alerts.map((a) => a.alertId));
        // Two minutes and a half in, a second replica starts its own pass.
        if (!second && clock - T0.getTime() > 150_000) second = replicaB.dispatch();
        await new Promise((resolve) => setImmediate(resolve));
      },
    };
    const options = { db: wh.db, sinks: [slow], logger: silentLogger(), now, concurrency: 4 };
    const replicaA = createAlertDispatcher(options);
    const replicaB = createAlertDispatcher(options);
    const first = await replicaA.dispatch();
    const secondResult = await second;
    expect(second).toBeDefined();
    expect(first).toMatchObject({ delivered: 50, failed: 0 });
    expect(secondResult).toMatchObject({ delivered: 0, failed: 0 });
    expect(sent).toHaveLength(50);
    expect(new Set(sent).size).toBe(50);
  });

  it("within sync's delivery time, starts no send it cannot finish and cuts none short", async () => {
    // Five accounts' digests of one run, and a Slack that answers each in 9.5 s of a 10 s
    // timeout, sent one at a time under a 30 s budget: sends start at 0, 9.5 and 19 s (each
    // can end by 29 s or sooner); one at 28.5 s could run to 38.5 s, so it and the last are
    // left for `serve`. Before, the fourth was started and then cut at 30 s: recorded as
    // failed after Slack had posted it, and posted again by `serve`.
    await raise(
      wh.db,
      ['a', 'b', 'c', 'd', 'e'].map((account, i) => ({
        ...runOf50()[i]!,
        accountName: account,
      })),
    );
    let clock = T0.getTime();
    const signals: (AbortSignal | undefined)[] = [];
    const started: number[] = [];
    const slack: AlertSink = {
      name: 'slack',
      grouping: 'group',
      async send(_alerts, signal) {
        started.push(clock - T0.getTime());
        signals.push(signal);
        clock += 9_500;
        await new Promise((resolve) => setImmediate(resolve));
      },
    };
    const logs = memoryLogger('info');
    const dispatcher = createAlertDispatcher({
      db: wh.db,
      sinks: [slack],
      logger: logs.logger,
      now: () => new Date(clock),
      concurrency: 1,
      sinkTimeoutMs: 10_000,
    });
    const result = await dispatcher.dispatch({
      runId: RUN,
      deadline: new Date(T0.getTime() + 30_000),
    });
    expect(started).toEqual([0, 9_500, 19_000]);
    expect(result).toMatchObject({ delivered: 3, failed: 0, released: 2 });
    // Nothing could cut a send short: no abort signal is handed to the sink.
    expect(signals.every((signal) => signal === undefined || !signal.aborted)).toBe(true);
    const rows = await wh.db
      .selectFrom('alerts')
      .select(['attempts', 'delivered_at', 'next_attempt_at', 'last_error'])
      .orderBy('alert_id')
      .execute();
    expect(rows.filter((r) => r.delivered_at !== null)).toHaveLength(3);
    // The two not started are untouched, due at once for `serve`.
    expect(rows.filter((r) => r.delivered_at === null)).toEqual([
      { attempts: 0, delivered_at: null, next_attempt_at: null, last_error: null },
      { attempts: 0, delivered_at: null, next_attempt_at: null, last_error: null },
    ]);
    expect(logs.lines().join('\n')).toContain('ALERT_SINK_TIMEOUT_SECONDS');
  });

  it('with no sink, logs a backlog larger than a page once, then only new alerts', async () => {
    await raise(
      wh.db,
      Array.from({ length: 1_500 }, (_, i) => ({ ...runOf50()[0]!, dedupeKey: `bulk:${i}` })),
    );
    const logs = memoryLogger('info');
    const dispatcher = createAlertDispatcher({ db: wh.db, sinks: [], logger: logs.logger });
    expect(await dispatcher.dispatch()).toMatchObject({ logged: 1_500 });
    expect(await dispatcher.dispatch()).toMatchObject({ logged: 0 });
    await raise(wh.db, [{ ...runOf50()[0]!, dedupeKey: 'late' }]);
    expect(await dispatcher.dispatch()).toMatchObject({ logged: 1 });
    const lines = logs.lines().filter((l) => l.includes('no alert sink configured'));
    expect(lines).toHaveLength(1_501);
    expect(lines.at(-1)).toContain('"kind":"listing_inaccurate"');
    // Logging is not delivery: every alert stays pending for a sink configured later.
    const pending = await wh.db
      .selectFrom('alerts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('delivered_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(Number(pending.n)).toBe(1_501);
  });

  it('gives up on a sink that does not answer within its timeout, and records why', async () => {
    const hanging = createServer((request) => void request.resume());
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const address = hanging.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      await raise(wh.db, runOf50().slice(0, 2));
      const dispatcher = createAlertDispatcher({
        db: wh.db,
        sinks: [slackSink(`http://127.0.0.1:${port}/slack`, { timeoutMs: 200 })],
        logger: silentLogger(),
        sinkTimeoutMs: 200,
      });
      expect(await dispatcher.dispatch()).toMatchObject({ delivered: 0, failed: 2 });
      const rows = await wh.db.selectFrom('alerts').select(['attempts', 'last_error']).execute();
      expect(rows).toEqual([
        { attempts: 1, last_error: 'slack: no answer within 0.2 s (ALERT_SINK_TIMEOUT_SECONDS)' },
        { attempts: 1, last_error: 'slack: no answer within 0.2 s (ALERT_SINK_TIMEOUT_SECONDS)' },
      ]);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('passes every alert of a group to a grouping sink at once', async () => {
    await raise(wh.db, [
      ...runOf50().slice(0, 3),
      { ...runOf50()[3]!, accountName: 'west' },
      { ...runOf50()[4]!, runId: null },
    ]);
    const groups: AlertForDelivery[][] = [];
    const dispatcher = createAlertDispatcher({
      db: wh.db,
      sinks: [
        { name: 'slack', grouping: 'group', send: async (alerts) => void groups.push([...alerts]) },
      ],
      logger: silentLogger(),
    });
    await dispatcher.dispatch();
    expect(groups.map((g) => g.map((a) => a.dedupeKey)).sort()).toEqual([
      ['test:0', 'test:1', 'test:2'],
      ['test:3'],
      ['test:4'],
    ]);
  });
});
