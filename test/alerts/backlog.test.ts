/**
 * A sink added later (ALERT_BACKLOG): alerts kept in the table before any sink was
 * configured, then `serve` started with a Slack and a signed webhook sink on a local
 * receiver. By default nothing old reaches the receiver, `listings-sync alerts` lists the
 * old ones as skipped and `--pending` leaves them out, and the decision survives a restart
 * under another ALERT_BACKLOG; with `send` the backlog arrives; in both a new alert is
 * delivered, and so is what `serve` raises as it starts. `alerts send-backlog` sends what was skipped, to the sink named. A sink added
 * while another is failing skips the backlog without stopping the other's retries, and the
 * run `sync` delivers is never backlog.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlertDispatcher } from '../../src/alerts/dispatcher.ts';
import { LISTING_INACCURATE } from '../../src/alerts/kinds/index.ts';
import { type NewAlert, raise } from '../../src/alerts/outbox-rows.ts';
import { slackSink } from '../../src/alerts/slack-sink.ts';
import { jsonWebhookSink } from '../../src/alerts/webhook-sink.ts';
import type { ApiClient } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { startServe } from '../../src/serve/server.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  emptySyncRunStats,
  finishSyncRun,
  startSyncRun,
} from '../../src/warehouse/runs/sync-runs.ts';
import { createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { type TestBackend, testBackends } from '../helpers/database.ts';
import { serveConfig } from '../serve/helpers.ts';
import { testApiClient } from '../sync/harness.ts';

const SECRET = 'alert-secret-b4c7';
const OLD_RUN_A = '11111111-1111-4111-8111-111111111111';
const OLD_RUN_B = '22222222-2222-4222-8222-222222222222';
const NEW_RUN = '33333333-3333-4333-8333-333333333333';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

/** Takes every POST; paths in `failing` answer 503. */
async function startReceiver() {
  const received: Received[] = [];
  const failing = new Set<string>();
  const server = createServer((request, response) => {
    let raw = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      raw += chunk;
    });
    request.on('end', () => {
      const path = request.url ?? '';
      if (failing.has(path)) {
        response.writeHead(503).end('down');
        return;
      }
      received.push({ path, headers: request.headers, raw });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    failing,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function alert(n: number, runId: string): NewAlert {
  return {
    kind: LISTING_INACCURATE,
    dedupeKey: `backlog:${n}`,
    accountName: 'east',
    businessId: 1000 + n,
    listingId: n,
    siteName: 'Yelp',
    previousStatus: 'Accurate',
    status: 'Inaccurate',
    detectedAt: new Date(Date.UTC(2026, 9, 1 + n, 3)),
    runId,
  };
}

/** Three alerts of two past runs, kept while no sink was configured. */
const BACKLOG = [alert(1, OLD_RUN_A), alert(2, OLD_RUN_A), alert(3, OLD_RUN_B)];

/** One test's warehouse: opened by the test, and reachable by a command through `env`. */
interface World {
  open(): Promise<Warehouse>;
  env: Record<string, string>;
  dispose(): Promise<void>;
}

async function newWorld(backend: TestBackend): Promise<World> {
  const { warehouse, env, close } = await createCommandWarehouse(backend);
  return {
    // A command's close() leaves it open; the test keeps it until the end.
    open: async () => ({ ...warehouse, close: async () => {} }),
    env,
    dispose: close,
  };
}

describe.each(testBackends)('a sink added later (%s)', (backend) => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let api: ApiClient;
  let world: World;
  let sinkEnv: Record<string, string>;

  beforeAll(async () => {
    receiver = await startReceiver();
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });
  beforeEach(async () => {
    receiver.received.length = 0;
    receiver.failing.clear();
    world = await newWorld(backend);
    sinkEnv = {
      ALERT_SLACK_WEBHOOK_URL: `${receiver.url}/slack`,
      ALERT_WEBHOOK_URL: `${receiver.url}/hook`,
      ALERT_WEBHOOK_SECRET: SECRET,
    };
    // The backlog: alerts raised while no sink was configured, logged and kept.
    const wh = await world.open();
    try {
      await raise(wh.db, BACKLOG);
      const logOnly = createAlertDispatcher({ db: wh.db, sinks: [], logger: silentLogger() });
      expect(await logOnly.dispatch()).toMatchObject({ logged: 3, delivered: 0 });
    } finally {
      await wh.close();
    }
  });
  afterEach(async () => {
    await world?.dispose();
  });

  /** `serve` with the sinks of `env` as the configuration builds them; stopped after `during`. */
  async function serveWith(
    env: Record<string, string>,
    during?: (wh: Warehouse) => Promise<unknown>,
  ) {
    const wh = await world.open();
    try {
      const serve = await startServe({
        config: serveConfig(env),
        warehouse: wh,
        api,
        logger: silentLogger(),
        schedule: 'off',
        port: 0,
        host: '127.0.0.1',
        alertIntervalMs: 0,
      });
      try {
        await serve.settled();
        await serve.dispatcher.idle();
        if (during) {
          await during(wh);
          // What `serve` does on its interval: a pass over what is due.
          await serve.dispatcher.dispatch();
        }
      } finally {
        await serve.close();
      }
    } finally {
      await wh.close();
    }
  }

  const raiseNew = (wh: Warehouse) => raise(wh.db, [alert(4, NEW_RUN)]);

  const keysAt = (path: string) =>
    receiver.received
      .filter((r) => r.path === path)
      .map((r) => String(r.headers['idempotency-key']))
      .sort();

  it('by default sends nothing old, and sends what is raised after, across a restart', async () => {
    await serveWith(sinkEnv, raiseNew);

    // Only the new alert reached each sink: one Slack message, one signed event.
    expect(receiver.received.map((r) => r.path).sort()).toEqual(['/hook', '/slack']);
    expect(keysAt('/hook')).toEqual(['backlog:4']);
    const hook = receiver.received.find((r) => r.path === '/hook')!;
    expect(hook.headers['x-service-signature']).toBe(
      `sha256=${createHmac('sha256', SECRET).update(hook.raw).digest('hex')}`,
    );
    expect(receiver.received.find((r) => r.path === '/slack')!.raw).toContain(
      `run ${NEW_RUN.slice(0, 8)}`,
    );

    const wh = await world.open();
    try {
      const rows = await wh.db
        .selectFrom('alerts')
        .select(['dedupe_key', 'delivered_at', 'delivered_sinks', 'attempts', 'last_error'])
        .select((eb) => eb.ref('skipped_sinks' as never).as('skipped_sinks'))
        .orderBy('alert_id')
        .execute();
      for (const row of rows.slice(0, 3)) {
        // Closed, not sent: never tried, and saying why.
        expect(row).toMatchObject({
          delivered_sinks: [],
          skipped_sinks: ['slack', 'webhook'],
          attempts: 0,
          // The note docs/alerts.md ("A sink added later") gives, word for word.
          last_error:
            'not sent: raised before its sink was configured (ALERT_BACKLOG=skip; `listings-sync alerts send-backlog` sends it)',
        });
        expect(row.delivered_at).not.toBeNull();
      }
      expect(rows[3]).toMatchObject({
        dedupe_key: 'backlog:4',
        delivered_sinks: ['slack', 'webhook'],
        skipped_sinks: [],
        last_error: null,
      });
    } finally {
      await wh.close();
    }

    // A restart, even under ALERT_BACKLOG=send, does not change the decision.
    await serveWith({ ...sinkEnv, ALERT_BACKLOG: 'send' });
    expect(receiver.received).toHaveLength(2);
  });

  it('lists what a new sink skipped as skipped, and leaves it out of --pending', async () => {
    await serveWith(sinkEnv, raiseNew);
    const listed = await runCli(['alerts'], { ...world.env, ...sinkEnv });
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    const skipped = lines.filter((line) =>
      line.includes(
        'slack: skipped (raised before sink slack was added), ' +
          'webhook: skipped (raised before sink webhook was added)',
      ),
    );
    expect(skipped).toHaveLength(3);
    expect(lines.find((line) => /^listing_inaccurate +1004 /.test(line))).toContain(
      'slack: sent, webhook: sent',
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^Skipped by slack \(added \d{4}-\d\d-\d\d \d\d:\d\dZ\): 3 alerts; `listings-sync alerts send-backlog --sink slack` sends them\.$/,
        ),
      ]),
    );
    const pending = await runCli(['alerts', '--pending'], { ...world.env, ...sinkEnv });
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout.split('\n')[0]).toBe('No pending alerts.');

    // The sinks' rows say what was decided.
    const wh = await world.open();
    try {
      const { rows: sinks } = await sqlRows(
        wh,
        'select sink, backlog, skipped from alert_sinks order by sink',
      );
      expect(sinks).toEqual([
        { sink: 'slack', backlog: 'skip', skipped: 3 },
        { sink: 'webhook', backlog: 'skip', skipped: 3 },
      ]);
    } finally {
      await wh.close();
    }
  });

  it('sends what serve raises as it starts with a new sink: it is not backlog', async () => {
    // The last run failed: `serve`'s first health check raises sync_failed at once.
    let wh = await world.open();
    let runId: string;
    try {
      runId = await startSyncRun(wh.db, { trigger: 'cli', streams: [], accounts: ['east'] });
      await finishSyncRun(wh.db, runId, {
        status: 'failed',
        stats: emptySyncRunStats(),
        error: 'database timeout',
      });
    } finally {
      await wh.close();
    }
    const rulesDir = mkdtempSync(join(tmpdir(), 'ls-alert-backlog-rules-'));
    try {
      const rules = join(rulesDir, 'rules.json');
      writeFileSync(rules, JSON.stringify({ rules: { sync_failed: { enabled: true } } }));
      await serveWith({ ...sinkEnv, ALERT_RULES_FILE: rules });
    } finally {
      rmSync(rulesDir, { recursive: true, force: true });
    }
    const hooks = receiver.received.filter((r) => r.path === '/hook');
    expect(hooks.map((r) => (JSON.parse(r.raw) as { kind: string }).kind)).toEqual(['sync_failed']);
    expect(receiver.received.filter((r) => r.path === '/slack')).toHaveLength(1);
    wh = await world.open();
    try {
      const { rows } = await sqlRows(
        wh,
        `select kind, delivered_sinks, skipped_sinks from alerts where kind = 'sync_failed'`,
      );
      expect(rows).toEqual([
        { kind: 'sync_failed', delivered_sinks: ['slack', 'webhook'], skipped_sinks: [] },
      ]);
    } finally {
      await wh.close();
    }
  });

  it('with ALERT_BACKLOG=send delivers the backlog, then what is raised after', async () => {
    await serveWith({ ...sinkEnv, ALERT_BACKLOG: 'send' }, raiseNew);
    expect(keysAt('/hook')).toEqual(['backlog:1', 'backlog:2', 'backlog:3', 'backlog:4']);
    // One Slack digest per account and run: two past runs, then the new one.
    const slack = receiver.received.filter((r) => r.path === '/slack').map((r) => r.raw);
    expect(slack).toHaveLength(3);
    expect(slack.some((text) => text.includes(`run ${OLD_RUN_A.slice(0, 8)}`))).toBe(true);
    expect(slack.some((text) => text.includes(`run ${NEW_RUN.slice(0, 8)}`))).toBe(true);

    const listed = await runCli(['alerts', '--pending'], { ...world.env, ...sinkEnv });
    expect(listed.stdout.split('\n')[0]).toBe('No pending alerts.');
  });

  it('alerts send-backlog sends what a sink skipped, to that sink only', async () => {
    await serveWith(sinkEnv);
    expect(receiver.received).toEqual([]);

    const sent = await runCli(['alerts', 'send-backlog', '--sink', 'webhook'], {
      ...world.env,
      ...sinkEnv,
    });
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toBe('3 skipped alerts are due again for webhook; delivered now: 3.\n');
    expect(keysAt('/hook')).toEqual(['backlog:1', 'backlog:2', 'backlog:3']);
    expect(keysAt('/slack')).toEqual([]);

    const listed = await runCli(['alerts'], { ...world.env, ...sinkEnv });
    expect(
      listed.stdout
        .split('\n')
        .filter((line) =>
          line.includes('slack: skipped (raised before sink slack was added), webhook: sent'),
        ),
    ).toHaveLength(3);

    const again = await runCli(['alerts', 'send-backlog', '--sink', 'webhook'], {
      ...world.env,
      ...sinkEnv,
    });
    expect(again.stdout).toBe('No skipped alerts for webhook.\n');
    expect(receiver.received).toHaveLength(3);
  });

  it('a sink removed and added back is not new; skip-backlog starts it from now', async () => {
    const hookOnly = {
      ALERT_WEBHOOK_URL: sinkEnv['ALERT_WEBHOOK_URL']!,
      ALERT_WEBHOOK_SECRET: SECRET,
    };
    await serveWith(hookOnly);
    expect(receiver.received).toEqual([]);

    // The webhook is removed for a while: an alert is raised and only logged.
    let wh = await world.open();
    try {
      await raise(wh.db, [alert(5, NEW_RUN)]);
    } finally {
      await wh.close();
    }
    // Added back, it is known: it gets what is still undelivered, as a retry would.
    await serveWith(hookOnly);
    expect(keysAt('/hook')).toEqual(['backlog:5']);

    // Removed again; this time the operator starts it from now before adding it back.
    wh = await world.open();
    try {
      await raise(wh.db, [alert(6, NEW_RUN)]);
    } finally {
      await wh.close();
    }
    const skipped = await runCli(['alerts', 'skip-backlog'], { ...world.env, ...hookOnly });
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(skipped.stdout).toBe('webhook: 1 pending alert skipped; it starts from now.\n');
    await serveWith(hookOnly, raiseNew);
    expect(keysAt('/hook')).toEqual(['backlog:4', 'backlog:5']);

    const listed = await runCli(['alerts'], { ...world.env, ...hookOnly });
    expect(listed.stdout).toMatch(
      /\nSkipped by webhook \(added [^)]+\): 4 alerts; `listings-sync alerts send-backlog --sink webhook` sends them\.\n$/,
    );
  });

  it('a sink added while another fails skips the backlog; the other still retries it', async () => {
    // Slack has been configured all along (seen before the backlog), and is down.
    receiver.failing.add('/slack');
    let wh = await world.open();
    try {
      await sqlRows(
        wh,
        `insert into alert_sinks (sink, first_seen_at, backlog) values ('slack', '2026-09-01', 'skip')`,
      );
      const slackOnly = createAlertDispatcher({
        db: wh.db,
        sinks: [slackSink(`${receiver.url}/slack`, { backlog: 'skip' })],
        logger: silentLogger(),
        backoff: { baseMs: 0, maxMs: 0 },
      });
      expect(await slackOnly.dispatch()).toMatchObject({ delivered: 0, failed: 3 });
    } finally {
      await wh.close();
    }

    // The webhook is added; Slack comes back.
    receiver.failing.clear();
    wh = await world.open();
    try {
      const both = createAlertDispatcher({
        db: wh.db,
        sinks: [
          slackSink(`${receiver.url}/slack`, { backlog: 'skip' }),
          jsonWebhookSink(`${receiver.url}/hook`, SECRET, { backlog: 'skip' }),
        ],
        logger: silentLogger(),
        backoff: { baseMs: 0, maxMs: 0 },
      });
      expect(await both.dispatch()).toMatchObject({ delivered: 3, failed: 0 });
      const rows = await wh.db
        .selectFrom('alerts')
        .select(['delivered_sinks', 'delivered_at', 'last_error'])
        .select((eb) => eb.ref('skipped_sinks' as never).as('skipped_sinks'))
        .execute();
      for (const row of rows) {
        expect(row).toMatchObject({
          delivered_sinks: ['slack'],
          skipped_sinks: ['webhook'],
          last_error: null,
        });
        expect(row.delivered_at).not.toBeNull();
      }
    } finally {
      await wh.close();
    }
    expect(keysAt('/hook')).toEqual([]);
    expect(receiver.received.filter((r) => r.path === '/slack')).toHaveLength(2);
  });

  it('the run sync delivers is not backlog when its sink is new', async () => {
    const wh = await world.open();
    try {
      await raiseNew(wh);
      const dispatcher = createAlertDispatcher({
        db: wh.db,
        sinks: [jsonWebhookSink(`${receiver.url}/hook`, SECRET, { backlog: 'skip' })],
        logger: silentLogger(),
      });
      expect(await dispatcher.dispatch({ runId: NEW_RUN })).toMatchObject({ delivered: 1 });
      const { rows } = await sqlRows(
        wh,
        `select dedupe_key, skipped_sinks from alerts where delivered_sinks = '[]' order by alert_id`,
      );
      expect(rows).toEqual(
        ['backlog:1', 'backlog:2', 'backlog:3'].map((key) => ({
          dedupe_key: key,
          skipped_sinks: ['webhook'],
        })),
      );
    } finally {
      await wh.close();
    }
    expect(keysAt('/hook')).toEqual(['backlog:4']);
  });
});

function sqlRows(wh: Warehouse, text: string) {
  return sql.raw<Record<string, unknown>>(text).execute(wh.db);
}
