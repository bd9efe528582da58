/**
 * Too large is answered `413`, always (docs/serve.md, "Webhooks"): decided from
 * Content-Length before `100 Continue` is sent, or before the body is read, and from the
 * bytes counted when the body is chunked; the answer is read whole off the socket, never
 * lost to a reset, while the sender is still sending.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServe } from '../../src/serve/server.ts';
import { type TestWarehouse, testBackends } from '../helpers/database.ts';
import { count } from '../sync/harness.ts';
import { type Intake, metricValue, startIntake } from './helpers.ts';
import { type RawAnswer, rawExchange } from './raw-http.ts';

const SECRET = 'whsec-too-large-7a21';
const LIMIT = 1024 * 1024;
/** A signed 3 MB body: a JSON event with a long field. */
const BODY = Buffer.from(
  `{"event":"social_post.boost_created","data":{"ad_run_id":"big","pad":"${'x'.repeat(3 * 1024 * 1024)}"}}`,
);
const SIGNATURE = `sha256=${createHmac('sha256', SECRET).update(BODY).digest('hex')}`;

function head(extra: string): string {
  return (
    'POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    `X-Service-Signature: ${SIGNATURE}\r\n${extra}\r\n`
  );
}

function expectWhole413(answer: RawAnswer): void {
  expect(answer.error).toBeUndefined();
  expect(answer.status).toBe(413);
  expect(answer.complete).toBe(true);
  expect(answer.headers['connection']).toBe('close');
  expect(JSON.parse(answer.body)).toEqual({ error: `body larger than ${LIMIT} bytes` });
}

describe.each(testBackends)('an oversized webhook (%s)', (backend) => {
  let intake: Intake;
  let warehouse: TestWarehouse;
  let serve: RunningServe;

  beforeAll(async () => {
    intake = await startIntake(backend, {
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_BODY_LIMIT_BYTES: String(LIMIT),
    });
    ({ warehouse, serve } = intake);
  });
  afterAll(() => intake?.close());

  it('with Expect: 100-continue gets 413 from its Content-Length, and never 100 Continue', async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const exchange = await rawExchange(serve.port);
      await exchange.write(head(`Content-Length: ${BODY.length}\r\nExpect: 100-continue\r\n`));
      // What a sender waits for before sending the body: the final answer comes first.
      expect(await exchange.interim).toBe('final');
      const answer = await exchange.answer;
      expect(answer.sawContinue).toBe(false);
      expectWhole413(answer);
    }
  });

  /**
   * A sender that sends its whole body, 64 KiB a write, whatever the answer (as a sender
   * that does not read while it uploads does), then closes: `before` pieces go first, the
   * rest only once the 413 has arrived, so they meet the connection after the answer.
   * The 413 arrives whole, and no write meets a reset.
   */
  async function sendWhole(headText: string, pieces: Buffer[], before: number): Promise<RawAnswer> {
    const exchange = await rawExchange(serve.port, { untilClose: true });
    await exchange.write(headText);
    for (const piece of pieces.slice(0, before)) await exchange.write(piece);
    expect(await exchange.interim).toBe('final');
    for (const piece of pieces.slice(before)) await exchange.write(piece);
    exchange.socket.end();
    return exchange.answer;
  }

  function pieces(body: Buffer): Buffer[] {
    const out: Buffer[] = [];
    for (let at = 0; at < body.length; at += 64 * 1024) out.push(body.subarray(at, at + 64 * 1024));
    return out;
  }

  it('without Expect, a 3 MB body gets a whole 413 from its Content-Length, and the connection closes without a reset', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      // Answered from the headers: the whole body goes after the answer.
      expectWhole413(await sendWhole(head(`Content-Length: ${BODY.length}\r\n`), pieces(BODY), 0));
    }
  });

  it('chunked, the 413 is decided from the bytes counted, read whole, without a reset', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const chunked = pieces(BODY).flatMap((part) => [
        Buffer.from(`${part.length.toString(16)}\r\n`),
        part,
        Buffer.from('\r\n'),
      ]);
      chunked.push(Buffer.from('0\r\n\r\n'));
      // 20 chunks of 64 KiB (1.25 MiB) pass the limit; the rest goes after the answer.
      expectWhole413(await sendWhole(head('Transfer-Encoding: chunked\r\n'), chunked, 20 * 3));
    }
  });

  it('stores none of them, counts each too_large, and takes a small delivery after', async () => {
    // Its own deliveries, measured against what it finds: the suite's tests run in any order.
    const tooLarge = async () =>
      metricValue(
        await (await fetch(`${serve.metricsUrl}/metrics`)).text(),
        'listings_sync_webhook_deliveries_total',
        {
          outcome: 'too_large',
        },
      );
    const before = await tooLarge();
    const stored = await count(warehouse, 'webhook_events');
    expectWhole413(await sendWhole(head(`Content-Length: ${BODY.length}\r\n`), pieces(BODY), 0));
    const exchange = await rawExchange(serve.port);
    await exchange.write(head(`Content-Length: ${BODY.length}\r\nExpect: 100-continue\r\n`));
    expectWhole413(await exchange.answer);
    expect(await tooLarge()).toBe(before + 2);
    expect(await count(warehouse, 'webhook_events')).toBe(stored);

    const small = Buffer.from('{"event":"social_post.boost_created","data":{"ad_run_id":"s"}}');
    const response = await fetch(`${serve.url}/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-signature': `sha256=${createHmac('sha256', SECRET).update(small).digest('hex')}`,
      },
      body: small,
    });
    expect(response.status).toBe(200);
    expect(await count(warehouse, 'webhook_events')).toBe(stored + 1);
  });
});
