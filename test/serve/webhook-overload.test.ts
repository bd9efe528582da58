/**
 * Overload is answered, not reset (docs/serve.md, "Limits"): with WEBHOOK_MAX_IN_FLIGHT
 * deliveries being handled, a further one gets `503` with `Retry-After` before its body is
 * read, read whole off the socket, never a reset; the ones in flight are stored once.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServe } from '../../src/serve/server.ts';
import { type TestWarehouse, testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { count } from '../sync/harness.ts';
import { type Intake, metricValue, startIntake, waitFor } from './helpers.ts';
import { rawExchange } from './raw-http.ts';

const SECRET = 'whsec-overload-51c2';

function signedHead(body: string): string {
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  return (
    'POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `X-Service-Signature: ${signature}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
  );
}

function boost(adRunId: string): string {
  return `{"event":"social_post.boost_created","account_id":1001,"data":{"ad_run_id":"${adRunId}"}}`;
}

describe.each(testBackends)('webhook intake past its capacity (%s)', (backend) => {
  let intake: Intake;
  let warehouse: TestWarehouse;
  let serve: RunningServe;
  const logs = memoryLogger('info');

  beforeAll(async () => {
    intake = await startIntake(
      backend,
      { WEBHOOK_SECRET: SECRET, WEBHOOK_MAX_IN_FLIGHT: '2' },
      logs.logger,
    );
    ({ warehouse, serve } = intake);
  });
  afterAll(() => intake?.close());

  it('answers 503 with Retry-After to each delivery past WEBHOOK_MAX_IN_FLIGHT, resets none, and stores the ones it took once', async () => {
    // Two deliveries in flight: headers and half a body sent, the rest held back.
    const held = await Promise.all(
      ['held-1', 'held-2'].map(async (id) => {
        const body = boost(id);
        const exchange = await rawExchange(serve.port);
        await exchange.write(signedHead(body) + body.slice(0, 10));
        return { exchange, rest: body.slice(10) };
      }),
    );
    // Both are counted in flight once their headers are parsed. Then eight more, whole,
    // at once.
    await waitFor('two deliveries in flight', async () => {
      const text = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
      return metricValue(text, 'listings_sync_webhooks_in_flight') === 2;
    });
    const extra = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const body = boost(`extra-${i}`);
        const exchange = await rawExchange(serve.port);
        await exchange.write(signedHead(body) + body);
        return exchange.answer;
      }),
    );
    for (const answer of extra) {
      expect(answer.error).toBeUndefined();
      expect(answer.complete).toBe(true);
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBe('1');
    }
    // The two held deliveries finish and are stored.
    const stored = await Promise.all(
      held.map(async ({ exchange, rest }) => {
        await exchange.write(rest);
        return exchange.answer;
      }),
    );
    for (const answer of stored) {
      expect(answer.error).toBeUndefined();
      expect(answer.status).toBe(200);
    }
    expect(await count(warehouse, 'webhook_events')).toBe(2);

    // With the slots free again, a retry is taken.
    const retry = await rawExchange(serve.port);
    await retry.write(signedHead(boost('extra-0')) + boost('extra-0'));
    expect((await retry.answer).status).toBe(200);
    expect(await count(warehouse, 'webhook_events')).toBe(3);

    const metrics = await (await fetch(`${serve.metricsUrl}/metrics`)).text();
    expect(
      metricValue(metrics, 'listings_sync_webhook_deliveries_total', { outcome: 'overloaded' }),
    ).toBe(8);
    const warned = logs.lines().filter((line) => line.includes('WEBHOOK_MAX_IN_FLIGHT'));
    expect(warned.length).toBeGreaterThanOrEqual(1);
  });

  // The kernel holds connections Node has not accepted yet in the listen backlog; past it
  // they are reset unanswered. Node's default is 511; ss shows a listener's as Send-Q.
  it.skipIf(!existsSync('/usr/bin/ss') && !existsSync('/bin/ss'))(
    'listens with a backlog of 4,096 connections (or the kernel cap, net.core.somaxconn)',
    () => {
      const line = execFileSync('ss', ['-ltnH', `sport = :${serve.port}`], { encoding: 'utf8' });
      const [, , sendQ] = line.trim().split(/\s+/);
      const cap = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
      expect(Number(sendQ)).toBe(Math.min(4096, cap));
    },
  );
});
