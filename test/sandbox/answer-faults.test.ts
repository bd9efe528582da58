/**
 * The scripted faults that bend a real answer (docs/upstream.md, "Faults"): a dripped
 * body, an oversized answer, a duplicated record, an empty answer, a long Retry-After;
 * seen as raw HTTP, with no client in between. The sandbox's time is a clock the test
 * moves (test/helpers/manual-clock.ts): a dripped body comes a chunk per interval moved.
 */
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import { call, control } from './http.ts';

let sandbox: RunningSandbox;
let businessId: number;
const clock = manualClock();
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 9, accounts: 1, businessesPerAccount: 3, clock });
  businessId = (await call(me(), 'GET', '/businesses.json')).json.result[0].id;
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(() => {
  sandbox.setFaults(DEFAULT_FAULTS);
  sandbox.resetStats();
});

const me = () => sandbox.credentials[0]!;

/** Raw HTTP/1.1 over a socket, as events: the headers, the body as it grows, the end. */
function rawGet(path: string) {
  const url = new URL(`${me().baseUrl}/api/v2${path}`);
  url.searchParams.set('auth_token', me().authToken);
  url.searchParams.set('user_email', me().userEmail);
  let data = '';
  let ended = false;
  let failed: Error | undefined;
  const waiters: { ready: () => boolean; resolve: () => void; reject: (e: Error) => void }[] = [];
  const settle = () => {
    for (const waiter of [...waiters]) {
      if (waiter.ready()) waiter.resolve();
      else if (failed) waiter.reject(failed);
      else if (ended) waiter.reject(new Error(`the answer ended first: ${data}`));
      else continue;
      waiters.splice(waiters.indexOf(waiter), 1);
    }
  };
  const until = (ready: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      waiters.push({ ready, resolve, reject });
      settle();
    });
  const socket = net.connect(Number(url.port), url.hostname, () => {
    socket.write(
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`,
    );
  });
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    data += chunk;
    settle();
  });
  socket.on('end', () => {
    ended = true;
    settle();
  });
  socket.on('error', (error) => {
    failed = error;
    settle();
  });
  const headEnd = () => data.indexOf('\r\n\r\n');
  const body = () => (headEnd() < 0 ? '' : data.slice(headEnd() + 4));
  return {
    /** Resolves once the status line and headers are in. */
    headers: () => until(() => headEnd() >= 0),
    /** The body received so far. */
    body,
    /** Resolves once at least `bytes` of the body are in. */
    bodyBytes: (bytes: number) => until(() => Buffer.byteLength(body()) >= bytes),
    ended: () => ended,
    /** Resolves once the server ended the answer. */
    end: () => until(() => ended),
  };
}

describe('answer faults', () => {
  it('drips: headers at once, then the real answer a chunk per interval, padded to dripBytes', async () => {
    const plain = await call(me(), 'GET', `/businesses/${businessId}/keywords.json`);
    const size = Buffer.byteLength(plain.text);
    sandbox.setFaults({
      script: [
        {
          kind: 'drip',
          operation: 'list_keywords',
          dripBytes: size + 100,
          dripChunkBytes: Math.ceil((size + 100) / 10),
          dripIntervalMs: 30,
        },
      ],
    });
    const chunk = Math.ceil((size + 100) / 10);
    const before = clock.sleeps.length;
    const dripped = rawGet(`/businesses/${businessId}/keywords.json`);
    // The headers come before the clock moves at all, and no byte of the body with them:
    // the sandbox waits an interval for the first chunk.
    await dripped.headers();
    await clock.sleeping(1);
    expect(dripped.body()).toBe('');
    expect(clock.sleeps.slice(before)).toEqual([30]);
    // Each interval moved brings one chunk, and only one; the answer ends with the tenth.
    for (let ticks = 1; ticks < 10; ticks++) {
      clock.advance(30);
      await dripped.bodyBytes(ticks * chunk);
      await clock.sleeping(1);
      expect(Buffer.byteLength(dripped.body()), `after ${ticks} intervals`).toBe(ticks * chunk);
      expect(dripped.ended(), `after ${ticks} intervals`).toBe(false);
    }
    clock.advance(30);
    await dripped.end();
    expect(clock.sleeps.slice(before)).toEqual(Array.from({ length: 10 }, () => 30));
    expect(Buffer.byteLength(dripped.body())).toBe(size + 100);
    expect(JSON.parse(dripped.body())).toEqual(plain.json);
    expect(sandbox.stats().byOperation['list_keywords']).toEqual({ ok: 1, drip: 1 });
  });

  it('oversized: many keywords with many sites, many reviews or listings for one business', async () => {
    sandbox.setFaults({
      script: [
        { kind: 'oversized', operation: 'get_rankings', count: 1000, sitesPerKeyword: 7 },
        { kind: 'oversized', operation: 'list_listings', count: 500 },
        { kind: 'oversized', operation: 'list_reviews', count: 300 },
      ],
    });
    const ranks = await call(me(), 'GET', `/businesses/${businessId}/rankings.json`);
    expect(Object.keys(ranks.json.result)).toHaveLength(1000);
    expect(Object.keys(ranks.json.result['keyword 999'])).toHaveLength(7);
    const listings = await call(me(), 'GET', `/businesses/${businessId}/listings.json`);
    expect(listings.json.result).toHaveLength(500);
    expect(new Set(listings.json.result.map((l: { id: number }) => l.id)).size).toBe(500);
    const reviews = await call(me(), 'GET', `/businesses/${businessId}/reviews.json`, {
      query: { category: 'review' },
    });
    const sites = Object.values(reviews.json.result) as Array<Array<{ id: string }>>;
    expect(sites.flat()).toHaveLength(300);
    expect(new Set(sites.flat().map((r) => r.id)).size).toBe(300);
    expect(sandbox.stats().byOperation).toMatchObject({
      get_rankings: { oversized: 1 },
      list_listings: { oversized: 1 },
      list_reviews: { oversized: 1 },
    });
  });

  it('duplicate: the first record again, identical or disagreeing', async () => {
    const path = `/businesses/${businessId}/listings.json`;
    const plain = (await call(me(), 'GET', path)).json.result as Array<Record<string, unknown>>;
    sandbox.setFaults({
      script: [
        { kind: 'duplicate', operation: 'list_listings' },
        { kind: 'duplicate', operation: 'list_listings', copies: 'disagreeing' },
      ],
    });
    const same = (await call(me(), 'GET', path)).json.result as Array<Record<string, unknown>>;
    expect(same).toHaveLength(plain.length + 1);
    const copy = same.at(-1)!;
    expect(same.filter((l) => l['id'] === copy['id'])).toEqual([copy, copy]);
    const differ = (await call(me(), 'GET', path)).json.result as Array<Record<string, unknown>>;
    const twin = differ.at(-1)!;
    const original = differ.find((l) => l['id'] === twin['id'])!;
    expect(original).not.toBe(twin);
    expect({ ...original, status: twin['status'] }).toEqual(twin);
    expect(new Set([original['status'], twin['status']])).toEqual(
      new Set(['Accurate', 'Inaccurate']),
    );
  });

  it('empty: success with nothing, for listings and reviews', async () => {
    sandbox.setFaults({
      script: [
        { kind: 'empty', operation: 'list_listings' },
        { kind: 'empty', operation: 'list_reviews' },
      ],
    });
    const listings = await call(me(), 'GET', `/businesses/${businessId}/listings.json`);
    expect(listings.json).toEqual({ success: true, result: [] });
    const reviews = await call(me(), 'GET', `/businesses/${businessId}/reviews.json`, {
      query: { category: 'review' },
    });
    expect(reviews.json).toEqual({ success: true, result: [] });
    // An answer fault on an operation it does not reshape leaves the answer alone.
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_countries' }] });
    const countries = await call(me(), 'GET', '/countries.json');
    expect(countries.json.result.length).toBeGreaterThan(0);
  });

  it('a 429 with a day-long Retry-After', async () => {
    sandbox.setFaults({
      script: [{ kind: '429', operation: 'list_reviews', retryAfterSeconds: 86_400 }],
    });
    const answer = await call(me(), 'GET', `/businesses/${businessId}/reviews.json`, {
      query: { category: 'review' },
    });
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('86400');
  });

  it('refuses bad answer-fault keys over the control route', async () => {
    const bad = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', {
      script: [{ kind: 'duplicate', copies: 'twice' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ error: 'script[0].copies must be identical or disagreeing.' });
    const zero = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', {
      script: [{ kind: 'oversized', count: 0 }],
    });
    expect(zero.status).toBe(400);
    expect(zero.json).toEqual({ error: 'script[0].count must be a whole number of at least 1.' });
    const good = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', {
      script: [{ kind: 'drip', dripBytes: 10, dripIntervalMs: 5 }],
    });
    expect(good.status).toBe(200);
    expect(good.json.script).toEqual([{ kind: 'drip', dripBytes: 10, dripIntervalMs: 5 }]);
  });
});
