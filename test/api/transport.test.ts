/**
 * Transport behaviour the sandbox cannot produce on demand: exact request headers and
 * bodies as received, in-flight counts, Retry-After as an HTTP date, bodies that echo a
 * secret, unknown error texts. A scripted node:http server stands in for the upstream.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import {
  ApiError,
  addKeyword,
  apiStats,
  createApiClient,
  getBusiness,
  listBusinesses,
  listCountries,
  listStates,
} from '../../src/api/index.ts';
import { manualClock, settleWith } from '../helpers/manual-clock.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';

const TOKEN = 'tok_SECRET_abc123';
const EMAIL = 'owner@acme.example';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

let server: Server;
let cred: Credential;
let handler: Handler;
const seen: Seen[] = [];

function json(res: ServerResponse, status: number, body: unknown, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const summary = (id: number) => ({
  id,
  name: `Biz ${id}`,
  street: 's',
  city: 'c',
  state_name: 'st',
  postal_code: '1',
  phone: '2',
});

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    await handler(req, res, body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  cred = { name: 'acme', baseUrl: `http://127.0.0.1:${port}`, authToken: TOKEN, userEmail: EMAIL };
});

afterAll(async () => {
  server.close();
});

afterEach(() => {
  seen.length = 0;
});

const fastRetry = { baseDelayMs: 1, maxDelayMs: 5 };

/**
 * A handler that holds requests until `limit` are in flight (or all `total` have come),
 * then answers them: requests overlap as far as the client lets them, on any machine.
 * A client that never lets `limit` overlap leaves the handler holding: the test times out.
 */
function holdUntilFull(limit: number, total: number): { handler: Handler; peak(): number } {
  let held: Array<() => void> = [];
  let inFlight = 0;
  let arrived = 0;
  let peak = 0;
  return {
    peak: () => peak,
    handler: async (_req, res) => {
      inFlight += 1;
      arrived += 1;
      peak = Math.max(peak, inFlight);
      const released = new Promise<void>((resolve) => held.push(resolve));
      if (inFlight >= limit || arrived === total) {
        for (const release of held) release();
        held = [];
      }
      await released;
      inFlight -= 1;
      json(res, 200, { success: true, result: summary(1) });
    },
  };
}

describe('requests as sent', () => {
  it('adds auth to the query, a User-Agent with the version, JSON bodies for writes', async () => {
    handler = (_req, res) =>
      json(res, 200, {
        success: true,
        result: {
          id: 1,
          keyword: 'k',
          city: null,
          state: null,
          primary: true,
          location_id: 42,
          archived: false,
        },
      });
    const api = createApiClient();
    await addKeyword(api, cred, 42, 'plumber austin');
    await api.close();
    const [request] = seen;
    const url = new URL(request!.url, 'http://x');
    expect(url.pathname).toBe('/api/v2/businesses/42/add_keyword.json');
    expect(url.searchParams.get('auth_token')).toBe(TOKEN);
    expect(url.searchParams.get('user_email')).toBe(EMAIL);
    expect(request!.method).toBe('POST');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toMatch(/^listings-sync\/0\.1\.0/);
    expect(JSON.parse(request!.body)).toEqual({ keyword: 'plumber austin' });
  });

  it('keeps a base URL path prefix', async () => {
    handler = (_req, res) => json(res, 200, { success: true, result: [] });
    const api = createApiClient();
    await listBusinesses(api, { ...cred, baseUrl: `${cred.baseUrl}/upstream/` });
    await api.close();
    expect(new URL(seen[0]!.url, 'http://x').pathname).toBe('/upstream/api/v2/businesses.json');
  });
});

describe('payload quirks', () => {
  it('accepts a reference list served as a bare array', async () => {
    handler = (_req, res) =>
      json(res, 200, [
        { id: 1, name: 'Texas', iso: 'TX', country_id: 1 },
        { id: 'x', name: 'Bad' },
      ]);
    const api = createApiClient();
    const states = await listStates(api, cred, 1);
    await api.close();
    expect(states.records).toEqual([{ id: 1, name: 'Texas', iso: 'TX', countryId: 1 }]);
    expect(states.rejected).toHaveLength(1);
  });

  it('an envelope whose result is not a list is a whole-call BAD_PAYLOAD', async () => {
    handler = (_req, res) => json(res, 200, { success: true, result: 'nope' });
    const api = createApiClient();
    const error = await listCountries(api, cred).catch((e: unknown) => e);
    await api.close();
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('BAD_PAYLOAD');
  });

  it('an unknown success:false text is UPSTREAM_ERROR with the text kept', async () => {
    handler = (_req, res) => json(res, 200, { success: false, message: 'Quota exceeded for plan' });
    const api = createApiClient({ retry: fastRetry });
    const error = (await getBusiness(api, cred, 42).catch((e: unknown) => e)) as ApiError;
    await api.close();
    expect(error.code).toBe('UPSTREAM_ERROR');
    expect(error.upstreamMessage).toBe('Quota exceeded for plan');
    expect(error.message).toBe(
      'get_business for business 42 on credential "acme" failed: Quota exceeded for plan',
    );
    expect(seen).toHaveLength(1);
  });

  it('a non-JSON body that echoes secrets is quoted short and scrubbed', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<html>proxy error for ${req.url} site_password=hunter2 ${'x'.repeat(500)}</html>`);
    };
    const { logger, lines } = memoryLogger('debug');
    const api = createApiClient({ logger, retry: fastRetry });
    const error = (await getBusiness(api, cred, 42).catch((e: unknown) => e)) as ApiError;
    await api.close();
    expect(error.code).toBe('BAD_PAYLOAD');
    expect(error.status).toBe(200);
    const quoted = /not JSON: "(.*)"$/.exec(error.message)?.[1] ?? '';
    expect(quoted).toContain('proxy error');
    expect(quoted.length).toBeLessThanOrEqual(200);
    for (const text of [error.message, JSON.stringify(error), ...lines()]) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(EMAIL);
      expect(text).not.toContain('hunter2');
    }
  });
});

describe('retries and limits', () => {
  it('honours Retry-After given as an HTTP date', async () => {
    const clock = manualClock();
    let calls = 0;
    handler = (_req, res) => {
      calls += 1;
      if (calls === 1) {
        const at = new Date(clock.now() + 2_000).toUTCString();
        return json(res, 503, { success: false, message: 'busy' }, { 'retry-after': at });
      }
      json(res, 200, { success: true, result: [] });
    };
    const api = createApiClient({ retry: fastRetry, clock });
    await settleWith(clock, listBusinesses(api, cred));
    await api.close();
    // The date names a moment 2 s on the client's clock: exactly that is waited.
    expect(clock.sleeps).toEqual([2_000]);
    expect(calls).toBe(2);
  });

  it('keeps requests in flight under the per-credential limit', async () => {
    const server = holdUntilFull(3, 12);
    handler = server.handler;
    const api = createApiClient({ concurrency: 10, accountConcurrency: 3 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => getBusiness(api, cred, i + 1)));
    await api.close();
    expect(server.peak()).toBe(3);
  });

  it('keeps requests in flight under the overall limit across credentials', async () => {
    const server = holdUntilFull(4, 15);
    handler = server.handler;
    const api = createApiClient({ concurrency: 4, accountConcurrency: 3 });
    const creds = ['a', 'b', 'c'].map((name) => ({ ...cred, name }));
    await Promise.all(
      creds.flatMap((c) => Array.from({ length: 5 }, (_, i) => getBusiness(api, c, i + 1))),
    );
    await api.close();
    expect(server.peak()).toBe(4);
  });

  it('caps requests per second per credential', async () => {
    handler = (_req, res) => json(res, 200, { success: true, result: summary(1) });
    const clock = manualClock();
    const api = createApiClient({ requestsPerSecond: 20, clock });
    await settleWith(
      clock,
      Promise.all(Array.from({ length: 6 }, (_, i) => getBusiness(api, cred, i + 1))),
    );
    await api.close();
    // Six starts at 50 ms spacing: each waits for its own slot.
    expect(clock.sleeps).toEqual([0, 50, 100, 150, 200, 250]);
    expect(seen).toHaveLength(6);
  });

  it('pauses the whole credential after a 429 until Retry-After passes', async () => {
    const clock = manualClock();
    const starts: number[] = [];
    handler = (_req, res) => {
      starts.push(clock.now());
      if (starts.length === 1) {
        return json(res, 429, { success: false, message: 'slow down' }, { 'retry-after': '1' });
      }
      json(res, 200, { success: true, result: summary(1) });
    };
    const api = createApiClient({ retry: fastRetry, clock });
    const t0 = clock.now();
    const firstCall = getBusiness(api, cred, 1);
    await clock.sleeping(1);
    // Sent after the 429 landed: must wait for the pause, not go straight out.
    const secondCall = getBusiness(api, cred, 2);
    await clock.sleeping(2);
    expect(starts).toHaveLength(1);
    // After the pause the client also spaces its requests (it learned the rate is tight).
    await settleWith(clock, Promise.all([firstCall, secondCall]));
    await api.close();
    expect(starts).toHaveLength(3);
    expect(starts[0]).toBe(t0);
    expect(Math.min(...starts.slice(1))).toBeGreaterThanOrEqual(t0 + 1_000);
    expect(clock.sleeps.slice(0, 2)).toEqual([1_000, 1_000]);
    expect(apiStats(api).retries).toBe(1);
  });

  it('aborts a backoff sleep on the caller signal', async () => {
    handler = (_req, res) => json(res, 503, { success: false }, { 'retry-after': '30' });
    const clock = manualClock();
    const api = createApiClient({ clock });
    const controller = new AbortController();
    const pending = getBusiness(api, cred, 1, { signal: controller.signal });
    await clock.sleeping(1);
    expect(clock.sleeps).toEqual([30_000]);
    controller.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
    expect(clock.pending()).toBe(0);
    expect(apiStats(api).byOperation['get_business']).toEqual({ aborted: 1 });
    await api.close();
  });
});
