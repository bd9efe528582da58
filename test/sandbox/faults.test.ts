/**
 * Faults: latency, 5xx, 429 with Retry-After, resets, hangs, malformed records, the
 * scripted queue, the control endpoint for settings, and the stats. The sandbox's time is
 * a clock the tests move (test/helpers/manual-clock.ts): latency holds a request until the
 * clock passes it, and the rate limit refills only as the clock moves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import { sandboxRequests } from '../helpers/sandbox-requests.ts';
import { call, control } from './http.ts';

let sandbox: RunningSandbox;
const clock = manualClock();
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 9, accounts: 2, businessesPerAccount: 6, clock });
});
afterAll(async () => {
  await sandbox.close();
});
afterEach(() => {
  sandbox.setFaults(DEFAULT_FAULTS);
});

const me = () => sandbox.credentials[0]!;

describe('faults', () => {
  it('adds latency: the answer waits latencyMs plus up to jitterMs of the clock', async () => {
    sandbox.setFaults({ latencyMs: 150, jitterMs: 20 });
    const before = clock.sleeps.length;
    let answered = false;
    const answer = call(me(), 'GET', '/countries').finally(() => {
      answered = true;
    });
    await clock.sleeping(1);
    const asked = clock.sleeps.slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThanOrEqual(150);
    expect(asked[0]).toBeLessThanOrEqual(170);
    // Held: the control surface (never delayed) answers a request sent after it, and a
    // clock short of the latency leaves it waiting.
    expect((await control(sandbox.baseUrl, 'GET', '/__sandbox/clock')).status).toBe(200);
    clock.advance(149);
    expect(clock.pending()).toBe(1);
    expect(answered).toBe(false);
    clock.advance(21);
    expect((await answer).status).toBe(200);
  });

  it("dates an answer when it answers: one held across the sandbox's midnight carries the new day", async () => {
    // Its own clock at 23:59:59: the day turns while the latency holds the request.
    const late = manualClock(Date.parse('2026-01-01T23:59:59Z'));
    const held = await startSandbox({
      port: 0,
      seed: 9,
      accounts: 1,
      businessesPerAccount: 1,
      clock: late,
    });
    try {
      const credential = held.credentials[0]!;
      const [business] = (await call(credential, 'GET', '/businesses')).json.result;
      held.setFaults({ latencyMs: 2_000 });
      const path = `/businesses/${business.id}/rankings`;
      const answer = call(credential, 'GET', path);
      await late.sleeping(1);
      held.advanceDays(1);
      late.advance(2_000);
      const answered = await answer;
      expect(answered.status).toBe(200);
      expect(answered.headers.get('date')).toBe('Fri, 02 Jan 2026 00:00:01 GMT');
      // The new day's ranks, asked for on the new day.
      held.setFaults({ latencyMs: 0 });
      expect(answered.text).toBe((await call(credential, 'GET', path)).text);
    } finally {
      await held.close();
    }
  });

  it('answers 500 with JSON and 502/503 with non-JSON bodies at the error rate', async () => {
    sandbox.setFaults({ errorRate: 1 });
    const seen = new Map<number, string>();
    for (let i = 0; i < 40; i++) {
      const answer = await call(me(), 'GET', '/countries');
      seen.set(answer.status, answer.text);
    }
    expect([...seen.keys()].sort()).toEqual([500, 502, 503]);
    expect(JSON.parse(seen.get(500)!)).toEqual({
      success: false,
      message: 'Internal Server Error',
    });
    expect(() => JSON.parse(seen.get(502)!)).toThrow();
    expect(() => JSON.parse(seen.get(503)!)).toThrow();
    // The control surface is never faulted.
    expect((await control(sandbox.baseUrl, 'GET', '/__sandbox/clock')).status).toBe(200);
  });

  it('answers 429 with Retry-After above the per-account rate', async () => {
    sandbox.setFaults({ rateLimitPerSecond: 2, retryAfterSeconds: 3 });
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 8; i++) {
      const answer = await call(me(), 'GET', '/countries');
      statuses.push(answer.status);
      if (answer.status === 429) retryAfter = answer.headers.get('retry-after');
    }
    // The clock stands still: a burst of two, then nothing until it moves.
    expect(statuses).toEqual([200, 200, 429, 429, 429, 429, 429, 429]);
    expect(retryAfter).toBe('3');
    // Another account has its own budget.
    expect((await call(sandbox.credentials[1]!, 'GET', '/countries')).status).toBe(200);
    // Half a second of the clock brings one request back.
    clock.advance(500);
    expect((await call(me(), 'GET', '/countries')).status).toBe(200);
    expect((await call(me(), 'GET', '/countries')).status).toBe(429);
  });

  it('resets connections', async () => {
    sandbox.setFaults({ resetRate: 1 });
    await expect(call(me(), 'GET', '/countries')).rejects.toThrow();
    sandbox.setFaults({ resetRate: 0 });
    expect((await call(me(), 'GET', '/countries')).status).toBe(200);
  });

  it('hangs until the client gives up, and still closes promptly', async () => {
    const requests = sandboxRequests();
    const own = await startSandbox({ port: 0, faults: { hangRate: 1 }, logger: requests.logger });
    const gaveUp = await call(own.credentials[0]!, 'GET', '/countries', { timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    // No answer came: the client's own timeout ended the request, while the sandbox held it.
    expect(gaveUp).toBeInstanceOf(Error);
    expect((gaveUp as Error).name).toBe('TimeoutError');
    expect(requests.count({ operation: 'list_countries', outcome: 'hang' })).toBe(1);
    // A second hung request left open: close must not wait for it.
    const pending = call(own.credentials[0]!, 'GET', '/countries', { timeoutMs: 25_000 }).catch(
      (e) => e,
    );
    await requests.when({ operation: 'list_countries', outcome: 'hang' }, 2);
    // close() resolves while the hung request is still open (its client would wait 25 s):
    // the request fails because the server cut it, not because its client gave up.
    await own.close();
    const failure = await pending;
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).name).not.toBe('TimeoutError');
    expect(own.stats().byOperation['list_countries']?.['hang']).toBe(2);
  });

  it('follows the script in order, matching operations', async () => {
    sandbox.setFaults({
      script: [
        { kind: '503', operation: 'list_listings' },
        { kind: '429', retryAfterSeconds: 7 },
        { kind: 'non-json' },
        { kind: '500' },
      ],
    });
    const first = await call(me(), 'GET', '/countries');
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('7');
    const second = await call(me(), 'GET', '/countries');
    expect(second.status).toBe(200);
    expect(second.json).toBeUndefined();
    expect((await call(me(), 'GET', '/countries')).status).toBe(500);
    expect((await call(me(), 'GET', '/countries')).status).toBe(200);
    const id = (await call(me(), 'GET', '/businesses')).json.result[0].id;
    expect((await call(me(), 'GET', `/businesses/${id}/listings`)).status).toBe(503);
    expect((await call(me(), 'GET', `/businesses/${id}/listings`)).status).toBe(200);
    expect((await control(sandbox.baseUrl, 'GET', '/__sandbox/faults')).json.script).toEqual([]);
  });

  it('sets faults at run time with a partial PUT returning the full settings', async () => {
    const answer = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', { errorRate: 0.25 });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      latencyMs: 0,
      jitterMs: 0,
      errorRate: 0.25,
      rateLimitPerSecond: null,
      retryAfterSeconds: 1,
      resetRate: 0,
      hangRate: 0,
      malformedRate: 0,
      errorsWith200: false,
      script: [],
    });
    expect(
      (await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', { errorRate: 2 })).status,
    ).toBe(400);
    expect((await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', { nope: 1 })).status).toBe(
      400,
    );
  });
});

type Item = Record<string, unknown>;
const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const good: Record<string, (x: Item) => boolean> = {
  business: (x) => isNumber(x.id) && typeof x.name === 'string',
  listing: (x) => isNumber(x.id) && typeof x.site_name === 'string' && typeof x.status === 'string',
  review: (x) =>
    typeof x.id === 'string' &&
    typeof x.content === 'string' &&
    (x.rating === null || isNumber(x.rating)),
  keyword: (x) =>
    isNumber(x.id) && typeof x.keyword === 'string' && typeof x.archived === 'boolean',
  reference: (x) => isNumber(x.id) && typeof x.name === 'string',
};

describe('malformed records', () => {
  it('are extra records beside all the real ones, and counted', async () => {
    const id = (await call(me(), 'GET', '/businesses')).json.result[0].id;
    const lists: Array<[string, string, Record<string, string>?]> = [
      ['business', '/businesses'],
      ['listing', `/businesses/${id}/listings`],
      ['keyword', `/businesses/${id}/keywords`],
      ['reference', '/countries'],
      ['reference', '/countries/1/states'],
      ['reference', '/sub_categories'],
    ];
    const clean = new Map<string, Item[]>();
    for (const [, path] of lists) clean.set(path, (await call(me(), 'GET', path)).json.result);
    const cleanReviews = (await call(me(), 'GET', `/businesses/${id}/reviews`)).json.result;
    sandbox.resetStats();
    sandbox.setFaults({ malformedRate: 0.3 });
    let extra = 0;
    for (const [kind, path] of lists) {
      const served: Item[] = (await call(me(), 'GET', path)).json.result;
      extra += served.length - clean.get(path)!.length;
      expect(served.filter(good[kind]!), path).toEqual(clean.get(path));
      expect(served.length, path).toBeGreaterThan(clean.get(path)!.length);
    }
    const reviews = (await call(me(), 'GET', `/businesses/${id}/reviews`)).json.result as Record<
      string,
      Item[]
    >;
    const filtered = Object.fromEntries(
      Object.entries(reviews)
        .map(([site, items]) => [site, items.filter(good.review!)] as const)
        .filter(([, items]) => items.length > 0),
    );
    expect(filtered).toEqual(cleanReviews);
    extra += Object.values(reviews).flat().length - Object.values(cleanReviews).flat().length;
    expect(
      Object.values(reviews)
        .flat()
        .some((r) => r.rating === 'five' || r.id === undefined || typeof r.id === 'object'),
    ).toBe(true);
    expect(sandbox.stats().malformedRecordsServed).toBe(extra);
  });
});

describe('stats', () => {
  it('counts requests by operation and outcome, and resets', async () => {
    const reset = await control(sandbox.baseUrl, 'POST', '/__sandbox/stats/reset');
    expect(reset.json).toEqual({ requests: 0, byOperation: {}, malformedRecordsServed: 0 });
    await call(me(), 'GET', '/businesses');
    await call(me(), 'GET', '/businesses.json');
    await call({ ...me(), authToken: 'bad' }, 'GET', '/businesses');
    await call(me(), 'GET', '/businesses/1');
    await call(me(), 'GET', '/businesses/1', { query: { type: 'all' } });
    await call(me(), 'POST', '/businesses', { body: { business: {} } });
    sandbox.setFaults({ script: [{ kind: '500' }] });
    await call(me(), 'GET', '/sub_categories');
    const stats = (await control(sandbox.baseUrl, 'GET', '/__sandbox/stats')).json;
    expect(stats).toEqual({
      requests: 7,
      byOperation: {
        list_businesses: { ok: 2, auth_failure: 1 },
        get_business: { not_found: 1 },
        get_business_full: { not_found: 1 },
        create_business: { validation: 1 },
        list_sub_categories: { '500': 1 },
      },
      malformedRecordsServed: 0,
    });
    expect(sandbox.stats()).toEqual(stats);
  });

  it('logs requests at debug level without tokens', async () => {
    const { memoryLogger } = await import('../helpers/memory-logger.ts');
    const { logger, lines } = memoryLogger('debug');
    const own = await startSandbox({ port: 0, logger });
    try {
      const c = own.credentials[0]!;
      await call(c, 'GET', '/businesses');
      const text = lines().join('\n');
      expect(text).toContain('list_businesses');
      expect(text).not.toContain(c.authToken);
    } finally {
      await own.close();
    }
  });
});
