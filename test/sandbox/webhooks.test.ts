/**
 * Webhook emission: distinct `social_post.boost_created` events, signed with
 * HMAC-SHA256 over the raw body (hex or base64), repeated on request, retried after a
 * failed attempt. The receiver is a real local HTTP server that verifies every signature.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { signWebhookBody } from '../../src/sandbox/webhooks.ts';
import { control } from './http.ts';

interface Received {
  body: string;
  signature: string;
  contentType: string;
  valid: boolean;
}

const SECRET = 'whsec_test';
let sandbox: RunningSandbox;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
/** Requests to answer with 500 before accepting. */
let failNext = 0;

function verify(body: string, header: string): boolean {
  const value = header.replace(/^sha256=/, '');
  const mac = createHmac('sha256', SECRET).update(body).digest();
  const given = /^[0-9a-f]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : Buffer.from(value, 'base64');
  return given.length === mac.length && timingSafeEqual(given, mac);
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 4 });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const signature = String(req.headers['x-service-signature'] ?? '');
      received.push({
        body,
        signature,
        contentType: String(req.headers['content-type']),
        valid: verify(body, signature),
      });
      if (failNext > 0) {
        failNext--;
        res.writeHead(500).end('try again');
        return;
      }
      res.writeHead(verify(body, signature) ? 204 : 401).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  await sandbox.close();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('webhooks', () => {
  it('signs with lowercase hex by default and base64 on request', () => {
    const body = '{"a":1}';
    const hex = createHmac('sha256', 's').update(body).digest('hex');
    expect(signWebhookBody('s', body, 'hex')).toBe(`sha256=${hex}`);
    expect(signWebhookBody('s', body)).toBe(`sha256=${hex}`);
    expect(signWebhookBody('s', body, 'base64')).toBe(
      `sha256=${createHmac('sha256', 's').update(body).digest('base64')}`,
    );
  });

  it('delivers distinct signed events, each repeated', async () => {
    received.length = 0;
    const answer = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url: receiverUrl,
      count: 3,
      secret: SECRET,
      repeat: 2,
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ events: 3, delivered: 6, failed: 0 });
    expect(received).toHaveLength(6);
    for (const r of received) {
      expect(r.valid).toBe(true);
      expect(r.signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(r.contentType).toContain('application/json');
    }
    const events = received.map((r) => JSON.parse(r.body));
    expect(new Set(events.map((e) => e.data.ad_run_id)).size).toBe(3);
    for (const e of events) {
      expect(e).toMatchObject({
        event: 'social_post.boost_created',
        location_id: null,
        data: { is_boost: true, boost_state: 'created' },
      });
      expect(Number.isInteger(e.account_id)).toBe(true);
      expect(new Date(e.timestamp).toISOString()).toBe(e.timestamp);
      for (const key of ['ad_run_id', 'post_id', 'social_profile_id', 'platform']) {
        expect(typeof e.data[key], key).toBe('string');
      }
    }
    // A repeat is byte-identical: the same delivery again.
    expect(received[0]!.body).toBe(received[1]!.body);
  });

  it('signs in base64 when asked', async () => {
    received.length = 0;
    const answer = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url: receiverUrl,
      count: 1,
      secret: SECRET,
      encoding: 'base64',
    });
    expect(answer.json.delivered).toBe(1);
    expect(received[0]!.signature).toMatch(/^sha256=[A-Za-z0-9+/]+=*$/);
    expect(received[0]!.valid).toBe(true);
  });

  it('retries a delivery answered 500, and reports each attempt', async () => {
    received.length = 0;
    failNext = 1;
    const answer = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url: receiverUrl,
      count: 1,
      secret: SECRET,
    });
    expect(answer.json.deliveries).toEqual([
      expect.objectContaining({ attempts: 2, statuses: [500, 204], delivered: true }),
    ]);
    expect(received).toHaveLength(2);
    expect(received[0]!.body).toBe(received[1]!.body);
  });

  it('gives up after a few attempts on a dead receiver', async () => {
    const answer = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url: 'http://127.0.0.1:1/nothing',
      count: 1,
      secret: SECRET,
    });
    expect(answer.json).toMatchObject({ delivered: 0, failed: 1 });
    expect(answer.json.deliveries[0].attempts).toBeGreaterThan(1);
  });

  it('refuses a bad request', async () => {
    expect(
      (await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', { count: 1 })).status,
    ).toBe(400);
  });
});
