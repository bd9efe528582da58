/**
 * Webhook intake bounds: bodies the warehouse cannot store as sent (a NUL character, a
 * lone surrogate, nesting thousands deep) get a permanent 422, are logged for diagnosis
 * and are not counted as database outages; a body dripped slowly is cut off after
 * WEBHOOK_REQUEST_TIMEOUT_MS; past WEBHOOK_MAX_CONNECTIONS connections are refused, and
 * /healthz answers again once the slow ones are cut.
 */
import { createHash, createHmac } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { redactSecrets, silentLogger } from '../../src/log.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import { findUnstorableValue } from '../../src/serve/webhook-intake.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { count } from '../sync/harness.ts';
import { metricValue, serveConfig } from './helpers.ts';

const SECRET = 'whsec-limits-8e3b';
const DELIVERIES = 'listings_sync_webhook_deliveries_total';

function sign(body: string | Buffer): string {
  return `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
}

async function post(url: string, body: string) {
  const response = await fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': sign(body) },
    body,
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** A boost whose `data` gets `extra`, as JSON text (escapes written by hand where needed). */
function boostWith(dataFields: string): string {
  return `{"event":"social_post.boost_created","account_id":1001,"data":{"ad_run_id":"r-1",${dataFields}}}`;
}

/** Hex that TOAST cannot compress: a chain of sha256 digests. */
function incompressible(length: number): string {
  let text = '';
  for (let block = 'seed'; text.length < length; ) {
    block = createHash('sha256').update(block).digest('hex');
    text += block;
  }
  return text.slice(0, length);
}

function nested(depth: number): string {
  return `{"event":"social_post.boost_created","data":{"deep":${'['.repeat(depth)}1${']'.repeat(depth)}}}`;
}

describe.each(testBackends)('webhook bodies the warehouse cannot store (%s)', (backend) => {
  let warehouse: TestWarehouse;
  let serve: RunningServe;
  const logs = memoryLogger('info');
  const api = createApiClient({ logger: silentLogger() });

  beforeAll(async () => {
    warehouse = await createTestWarehouse(backend);
    serve = await startServe({
      config: serveConfig({ WEBHOOK_SECRET: SECRET }),
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
  });
  beforeEach(async () => {
    await truncateAll(warehouse);
  });

  it.each([
    [
      'a NUL character in a string',
      boostWith('"post_id":"12\\u00003"'),
      'data.post_id contains a NUL character',
    ],
    [
      'a NUL character in a key',
      boostWith('"po\\u0000st":"1"'),
      'is a key that contains a NUL character',
    ],
    [
      'a lone high surrogate',
      boostWith('"platform":"face\\ud800book"'),
      'data.platform contains a lone UTF-16 surrogate',
    ],
    [
      'a lone low surrogate',
      boostWith('"platform":"\\udc00"'),
      'data.platform contains a lone UTF-16 surrogate',
    ],
    ['nesting 6,000 deep', nested(6_000), 'is nested deeper than 64 levels'],
    [
      // Incompressible, so its key is too large for the primary key's index (54000).
      'an ad run id too long for the key index',
      boostWith(`"ad_run_id":"${incompressible(12_000)}"`),
      'the database refused a value (SQLSTATE 54000)',
    ],
  ])(
    'answers 422 for %s, stores nothing, logs the event, and counts no outage',
    async (_what, body, reason) => {
      const before = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
      const answer = await post(serve.url, body);
      expect(answer.status).toBe(422);
      expect(answer.retryAfter).toBeNull();
      expect(String(answer.body['error'])).toContain(reason);
      expect(await count(warehouse, 'webhook_events')).toBe(0);
      expect(await count(warehouse, 'social_post_boosts')).toBe(0);

      const after = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
      const delta = (outcome: string) =>
        metricValue(after, DELIVERIES, { outcome }) - metricValue(before, DELIVERIES, { outcome });
      expect(delta('unprocessable')).toBe(1);
      expect(delta('unavailable')).toBe(0);

      const refused = logs
        .lines()
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((r) =>
          String(r['msg']).startsWith('webhook refused: signed, but the warehouse cannot store it'),
        );
      const last = refused.at(-1);
      expect(last).toMatchObject({ level: 'warn', event: 'social_post.boost_created' });
      expect(String(last?.['reason'])).toContain(reason);
      // Enough of the body to diagnose, and never all of a large one.
      expect(String(last?.['excerpt'])).toContain('social_post.boost_created');
      expect(String(last?.['excerpt']).length).toBeLessThanOrEqual(400);
      expect(logs.lines().join('\n')).not.toContain(SECRET);

      // The same delivery again gets the same permanent answer, and the intake still stores
      // what it can.
      expect((await post(serve.url, body)).status).toBe(422);
      expect((await post(serve.url, boostWith('"post_id":"1_2"'))).status).toBe(200);
      expect(await count(warehouse, 'webhook_events')).toBe(1);
    },
  );

  it('keeps secrets in a refused body out of the log excerpt', async () => {
    const body = boostWith(
      '"site_password":"pw-in-body-77","auth_token":"tok-in-body-88","x":"\\u0000"',
    );
    expect((await post(serve.url, body)).status).toBe(422);
    const text = logs.lines().join('\n');
    expect(text).toContain('data.x contains a NUL character');
    expect(text).not.toContain('pw-in-body-77');
    expect(text).not.toContain('tok-in-body-88');
  });

  it('keeps e-mails and credentials out of a stored payload and of a refusal excerpt, by the raw zone rule', async () => {
    // Stored: the e-mail at the top and deep inside, an escaped key too.
    const stored = await post(
      serve.url,
      boostWith(
        '"post_id":"mail-1","author":{"user_email":"alice@example.com","name":"Alice"},"user\\u005femail":"bob@example.com"',
      ).replace('{"event"', '{"user_email":"carol@example.com","event"'),
    );
    expect(stored.status).toBe(200);
    const row = await warehouse.db
      .selectFrom('webhook_events')
      .select('payload')
      .executeTakeFirstOrThrow();
    const text = JSON.stringify(row.payload);
    for (const email of ['alice@example.com', 'bob@example.com', 'carol@example.com']) {
      expect(text).not.toContain(email);
    }
    expect(row.payload).toMatchObject({
      user_email: '[kept out of the raw zone]',
      data: {
        post_id: 'mail-1',
        author: { user_email: '[kept out of the raw zone]', name: 'Alice' },
        user_email: '[kept out of the raw zone]',
      },
    });
    // Refused (422), its excerpt logged: the e-mail is kept out there too.
    const refused = await post(
      serve.url,
      boostWith('"user_email":"dave@example.com","x":"\\u0000"'),
    );
    expect(refused.status).toBe(422);
    const lines = logs.lines().join('\n');
    expect(lines).toContain('data.x contains a NUL character');
    expect(lines).toContain('kept out of the raw zone');
    expect(lines).not.toContain('dave@example.com');
  });

  it('stores escaped text that is valid Unicode (a tab, an emoji as a surrogate pair)', async () => {
    const answer = await post(
      serve.url,
      boostWith('"post_id":"a\\tb","platform":"\\ud83d\\ude00"'),
    );
    expect(answer.status).toBe(200);
    const row = await warehouse.db
      .selectFrom('social_post_boosts')
      .select(['post_id', 'platform'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ post_id: 'a\tb', platform: '\u{1F600}' });
  });
});

describe('walking a payload', () => {
  it('finds nothing wrong in an ordinary event, and stops at the depth bound without recursion', () => {
    expect(findUnstorableValue(JSON.parse(boostWith('"x":[1,{"y":null}]')))).toBeNull();
    const deep = JSON.parse(nested(100_000));
    expect(findUnstorableValue(deep)).toMatchObject({
      rule: 'is nested deeper than 64 levels',
    });
  });

  it('redacts a value nested 100,000 deep without overflowing the stack', () => {
    const deep = JSON.parse(
      `${'{"a":'.repeat(100_000)}{"password":"hunter2"}${'}'.repeat(100_000)}`,
    );
    const redacted = JSON.stringify(redactSecrets({ shallow: { password: 'p' }, deep }));
    expect(redacted).toContain('[Too deep]');
    expect(redacted).not.toContain('hunter2');
    expect(redacted).toContain('"shallow":{"password":"[REDACTED]"}');
  });
});

/**
 * A raw connection that sends a signed request's headers, then its body one byte every
 * 50 ms: always active, never done within the 300 ms the test server allows.
 */
async function dripConnection(port: number): Promise<{
  socket: net.Socket;
  /** What the server sent, once it closed the connection. */
  closed: Promise<string>;
}> {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8');
  const continued = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (received.includes('100 Continue')) resolve();
    });
    socket.once('close', () => reject(new Error(`closed before 100 Continue: ${received}`)));
  });
  const closed = new Promise<string>((resolve) => {
    socket.once('close', () => resolve(received));
  });
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const body = boostWith('"post_id":"slow"');
  socket.write(
    'POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      `X-Service-Signature: ${sign(body)}\r\nContent-Length: ${body.length}\r\n` +
      'Expect: 100-continue\r\n\r\n',
  );
  // Node answers `100 Continue` once it holds the request: the connection is counted.
  await continued;
  let sent = 0;
  const drip = setInterval(() => {
    if (sent < body.length - 1 && !socket.destroyed) socket.write(body[sent++] ?? '');
  }, 50);
  void closed.finally(() => clearInterval(drip));
  return { socket, closed };
}

describe.each(testBackends)('webhook connections and time limits (%s)', (backend) => {
  let warehouse: TestWarehouse;
  let serve: RunningServe;
  const logs = memoryLogger('info');
  const api = createApiClient({ logger: silentLogger() });

  beforeAll(async () => {
    warehouse = await createTestWarehouse(backend);
    serve = await startServe({
      config: serveConfig({
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_REQUEST_TIMEOUT_MS: '300',
        WEBHOOK_MAX_CONNECTIONS: '3',
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
  });

  it('cuts off bodies that drip, refuses connections past the limit, and /healthz answers again', async () => {
    const drips = await Promise.all([1, 2, 3].map(() => dripConnection(serve.port)));

    // A fourth connection, over WEBHOOK_MAX_CONNECTIONS, is closed without an answer.
    const extra = net.connect(serve.port, '127.0.0.1');
    extra.on('error', () => {});
    let extraData = '';
    extra.on('data', (chunk) => {
      extraData += String(chunk);
    });
    await new Promise<void>((resolve) => extra.once('close', () => resolve()));
    expect(extraData).toBe('');

    // Each slow request is cut off (its connection closed, never answered 200) once
    // WEBHOOK_REQUEST_TIMEOUT_MS has passed, though bytes keep arriving.
    const answers = await Promise.all(drips.map((d) => d.closed));
    for (const answer of answers) expect(answer).not.toMatch(/HTTP\/1\.1 200 /);
    expect(await count(warehouse, 'webhook_events')).toBe(0);

    const health = await fetch(`${serve.url}/healthz`);
    expect(health.status).toBe(200);
    expect((await post(serve.url, boostWith('"post_id":"fast"'))).status).toBe(200);

    const text = logs.lines().join('\n');
    expect(text).toContain(
      'request cut off: not received in full within WEBHOOK_REQUEST_TIMEOUT_MS',
    );
    expect(text).toContain('connection refused: WEBHOOK_MAX_CONNECTIONS connections are open');
  });
});
