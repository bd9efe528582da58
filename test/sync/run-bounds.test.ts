/**
 * A run that ends and counts honestly (issue 19), against the sandbox over real HTTP:
 * - a `still working` line while nothing completes, and a stop that aborts a dripped
 *   answer and records the run `interrupted`;
 * - a `Retry-After` longer than a run waits ends that credential's work with one line and
 *   one error, the run partial;
 * - shards of different counts side by side write each business once;
 * - identical copies collapsed by the client are counted, and failures counted once.
 */
import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { apiStats, createApiClient } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { ANSWER_READS } from '../../src/streams/index.ts';
import type { Ticker } from '../../src/sync/in-flight.ts';
import { NIGHTLY_LOCK_KEY } from '../../src/sync/run.ts';
import { renderSyncSummary } from '../../src/sync/summary.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/runs/sync-lock.ts';
import { BusinessLockTimeoutError, lockBusiness } from '../../src/warehouse/tables/businesses.ts';
import { skipOnPglite, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { sandboxRequests } from '../helpers/sandbox-requests.ts';
import { count, sandboxSuite, sync, testApiClient } from './harness.ts';

/** A ticker that moves and ticks only when the test says so. */
function manualTicker() {
  let now = 0;
  const ticks = new Set<() => void>();
  const ticker: Ticker = {
    now: () => now,
    every(_ms, tick) {
      ticks.add(tick);
      return () => ticks.delete(tick);
    },
  };
  return {
    ticker,
    advance(ms: number) {
      now += ms;
      for (const tick of ticks) tick();
    },
    running: () => ticks.size,
  };
}

async function runRow(warehouse: TestWarehouse, runId: string) {
  return warehouse.db
    .selectFrom('sync_runs')
    .select(['status', 'error', 'finished_at'])
    .where('run_id', '=', runId)
    .executeTakeFirstOrThrow();
}

describe.each(testBackends)('run bounds (%s)', (backend) => {
  // The sandbox's requests as events, and its time a clock no test here moves: a dripped
  // body stays at its headers.
  const requests = sandboxRequests();
  const clock = manualClock();
  const suite = sandboxSuite({
    seed: 41,
    accounts: 2,
    businessesPerAccount: 6,
    logger: requests.logger,
    clock,
  });

  it('says it is still working while a dripped answer holds the run; a stop aborts it and records interrupted', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const { logger, lines } = memoryLogger('info');
    const manual = manualTicker();
    // A body of 100000 bytes, a byte a second of a clock that does not move: only the stop
    // can end this run.
    suite.sandbox.setFaults({
      script: [{ kind: 'drip', operation: 'list_listings', dripBytes: 100_000 }],
    });
    const drips = requests.count({ operation: 'list_listings', outcome: 'drip' });
    const aborted = apiStats(suite.api).byOperation['list_listings']?.['aborted'] ?? 0;
    const mark = clock.sleeps.length;
    const stop = new AbortController();
    const running = sync(warehouse, suite.api, suite.sandbox.credentials.slice(0, 1), {
      logger,
      businessConcurrency: 1,
      overallBusinessConcurrency: 1,
      ticker: manual.ticker,
      signal: stop.signal,
    });
    // Held: the sandbox has sent the headers and drips the body.
    await requests.when({ operation: 'list_listings', outcome: 'drip' }, drips + 1);
    expect(clock.sleeps.slice(mark)).toEqual([1000]);
    manual.advance(14_000);
    const still = lines().filter((line) => line.includes('still working'));
    expect(still).toHaveLength(1);
    // One business at a time: at most its reads in flight.
    const inFlight =
      /still working: 0 of 6 businesses done, (\d+) requests in flight, oldest for 14 s/;
    expect(still[0]).toMatch(inFlight);
    const held = Number(inFlight.exec(still[0]!)?.[1]);
    expect(held).toBeGreaterThanOrEqual(1);
    expect(held).toBeLessThanOrEqual(ANSWER_READS.length);

    stop.abort();
    // The run ends on its own once stopped (a hang fails at the test's timeout): the stop
    // aborted the dripped request, whose body the sandbox was still waiting to send.
    const result = await running;
    expect(lines().filter((line) => line.includes('stopping: no new work starts'))).toHaveLength(1);
    expect(apiStats(suite.api).byOperation['list_listings']?.['aborted']).toBe(aborted + 1);
    // The sandbox saw the connection close, before its first tick.
    await clock.idle();
    expect(result.status).toBe('interrupted');
    expect(await runRow(warehouse, result.runId)).toMatchObject({ status: 'interrupted' });
    // The business whose read was cut short is not written, nor counted as failed.
    expect(await count(warehouse, 'businesses')).toBe(0);
    expect(result.stats.businesses.failed).toBe(0);
    expect(lines().filter((line) => line.includes('stream failed'))).toEqual([]);
    // The line stops with the run.
    expect(manual.running()).toBe(0);
  });

  it('a Retry-After longer than a run waits ends that credential at once: one line, one error, the run partial', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const { logger, lines } = memoryLogger('info');
    suite.sandbox.setFaults({
      script: [{ kind: '429', operation: 'list_reviews', retryAfterSeconds: 86_400 }],
    });
    // A client of its own: the pause it learns lasts a day.
    const paused86400 = testApiClient();
    const result = await sync(warehouse, paused86400, suite.sandbox.credentials, {
      logger,
    }).finally(() => paused86400.close());
    expect(result.status).toBe('partial');
    const stopped = result.stats.credentials.filter((c) => c.error !== undefined);
    expect(stopped).toHaveLength(1);
    const [paused] = stopped;
    expect(paused?.status).toBe('partial');
    expect(paused?.error).toContain(`credential "${paused?.name}" stopped`);
    expect(paused?.error).toContain('86400 s');
    // The other credential is whole.
    expect(result.stats.credentials.find((c) => c !== paused)?.status).toBe('succeeded');
    expect(result.error).toBe(paused?.error);
    // One failure, one line: not one per business or stream.
    expect(result.stats.failures).toEqual([
      expect.objectContaining({ credential: paused?.name, businessId: null, stream: 'credential' }),
    ]);
    expect(result.stats.failureCount).toBe(1);
    expect(lines().filter((line) => line.includes('stream failed'))).toEqual([]);
    expect(lines().filter((line) => line.includes('pause longer than a run waits'))).toHaveLength(
      1,
    );
    // Recorded as it ended.
    expect(await runRow(warehouse, result.runId)).toMatchObject({
      status: 'partial',
      error: paused?.error,
    });
    // The summary names it once, with no phantom "more failures".
    const summary = renderSyncSummary(result, { warehouse: 'test' });
    expect(summary).toContain('86400 s');
    expect(summary).not.toContain('more failure');
  });

  it('counts identical copies collapsed from the business list and the streams', async () => {
    const warehouse = await suite.createWarehouse(backend);
    suite.sandbox.setFaults({
      script: [
        { kind: 'duplicate', operation: 'list_businesses', copies: 'identical' },
        { kind: 'duplicate', operation: 'list_listings', copies: 'identical' },
      ],
    });
    const result = await sync(warehouse, suite.api, suite.sandbox.credentials.slice(0, 1));
    expect(result.status).toBe('succeeded');
    expect(result.stats.duplicates).toBe(2);
    expect(result.stats.businesses).toMatchObject({ listed: 6, inShard: 6, synced: 6 });
    expect(renderSyncSummary(result, { warehouse: 'test' })).toContain(
      '6 of 6 businesses synced, 2 duplicate record(s) collapsed,',
    );
    const stored = await runRow(warehouse, result.runId);
    expect(stored.status).toBe('succeeded');
    const row = await warehouse.db
      .selectFrom('sync_runs')
      .select('stats')
      .where('run_id', '=', result.runId)
      .executeTakeFirstOrThrow();
    const stats = typeof row.stats === 'string' ? JSON.parse(row.stats) : row.stats;
    expect(stats).toMatchObject({ duplicates: 2, failureCount: 0 });
  });

  it('a business with a failed stream is one failure in the summary, not two', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const bounded = createApiClient({
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 5000 },
      // Above any sandbox business's keywords, below the oversized answer's.
      bounds: { keywordsPerBusiness: 100 },
      logger: silentLogger(),
    });
    try {
      suite.sandbox.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count: 200, sitesPerKeyword: 1 }],
      });
      const result = await sync(warehouse, bounded, suite.sandbox.credentials.slice(0, 1));
      expect(result.status).toBe('partial');
      expect(result.stats.streamFailures).toBe(1);
      expect(result.stats.businesses.failed).toBe(1);
      expect(result.stats.failures).toHaveLength(1);
      expect(result.stats.failureCount).toBe(1);
      const summary = renderSyncSummary(result, { warehouse: 'test' });
      expect(summary).toContain('What failed');
      expect(summary).not.toContain('more failure');
    } finally {
      await bounded.close();
    }
  });

  it('shards of different counts side by side write each business once', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const [half, quarter] = await Promise.all([
      sync(warehouse, suite.api, suite.sandbox.credentials, { shard: { index: 0, count: 2 } }),
      sync(warehouse, suite.api, suite.sandbox.credentials, { shard: { index: 0, count: 4 } }),
    ]);
    expect(half.status).toBe('succeeded');
    expect(quarter.status).toBe('succeeded');
    // Shard 0/4 is inside shard 0/2: every one of its businesses was written by both runs.
    expect(quarter.stats.businesses.inShard).toBeGreaterThan(0);
    const doubled = await sql<{ business_id: number; n: number }>`
      select business_id, count(*)::int as n from business_versions
      group by business_id, content_hash having count(*) > 1`.execute(warehouse.db);
    expect(doubled.rows).toEqual([]);
    expect(await count(warehouse, 'business_versions')).toBe(half.stats.businesses.inShard);
  });

  it('the business lock covers a business with no row yet, and its wait is bounded', async (context) => {
    skipOnPglite(context, backend, 'one connection: no two transactions at once');
    const warehouse = await suite.createWarehouse(backend);
    // Two connections of the pool: two runs' business transactions.
    const db = warehouse.db;
    {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked = () => {};
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const first = db.transaction().execute(async (trx) => {
        expect(await lockBusiness(trx, 987_654_321)).toBeUndefined();
        locked();
        await held;
      });
      await isLocked;
      const waited = await db
        .transaction()
        .execute(async (trx) => {
          await sql`set local lock_timeout = 200`.execute(trx);
          return lockBusiness(trx, 987_654_321);
        })
        .catch((error: unknown) => error);
      release();
      await first;
      expect(waited).toBeInstanceOf(BusinessLockTimeoutError);
      expect((waited as Error).message).toContain('business 987654321');
      expect((waited as Error).message).toContain('DATABASE_LOCK_TIMEOUT_MS');
      // Once the first commits, the lock is free again.
      await db.transaction().execute((trx) => lockBusiness(trx, 987_654_321));
    }
  });

  it('a stopped run waits for a business transaction in flight only its grace, and a second stop ends the grace at once; it leaves the raw zone unpruned', async (context) => {
    skipOnPglite(
      context,
      backend,
      'one connection: no transaction can hold a business beside the run',
    );
    const warehouse = await suite.createWarehouse(backend);
    const db = warehouse.db;
    const [first] = (
      await sync(warehouse, suite.api, suite.sandbox.credentials.slice(0, 1), {
        streams: ['businesses'],
      })
    ).stats.credentials;
    expect(first?.status).toBe('succeeded');
    const ids = (await db.selectFrom('businesses').select('business_id').execute()).map(
      (r) => r.business_id,
    );

    // A shard never prunes (another shard may be writing): it says nothing of pruning.
    for (const ending of ['grace', 'second stop', 'second stop, a shard'] as const) {
      // Another transaction holds every business: the run's writes wait on their locks.
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked = () => {};
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const holder = db.transaction().execute(async (trx) => {
        for (const id of ids) await lockBusiness(trx, id);
        locked();
        await held;
      });
      await isLocked;
      const stop = new AbortController();
      const stopNow = new AbortController();
      const { logger, lines } = memoryLogger('info');
      const running = sync(warehouse, suite.api, suite.sandbox.credentials.slice(0, 1), {
        logger,
        streams: ['businesses'],
        // Every answer written: an answer as its rows already are takes no lock.
        reapply: true,
        signal: stop.signal,
        stopNow: stopNow.signal,
        stopGraceMs: ending === 'grace' ? 300 : 600_000,
        // A transaction still in flight may yet write reads of a body pruning would delete.
        rawRetentionDays: 1,
        ...(ending === 'second stop, a shard' ? { shard: { index: 0, count: 1 } } : {}),
      });
      // A business transaction of the run is waiting for its lock.
      await vi.waitFor(
        async () => {
          const waiting = await sql<{ n: number }>`
            select count(*)::int as n from pg_locks
            where locktype = 'advisory' and not granted`.execute(db);
          expect(waiting.rows[0]?.n).toBeGreaterThan(0);
        },
        { timeout: 20_000, interval: 20 },
      );
      stop.abort();
      if (ending !== 'grace') stopNow.abort();
      const result = await running;
      // The run ended without the business it left waiting: the grace (300 ms), or the
      // second stop (before a grace of ten minutes), ended it, not the lock timeout
      // (DATABASE_LOCK_TIMEOUT_MS), since its transaction still waits for the lock.
      expect(
        lines().filter((line) => line.includes('stopped: work still in flight after the grace')),
        ending,
      ).toHaveLength(1);
      expect(
        lines().filter((line) => line.includes('raw zone: not pruned, work still in flight')),
        ending,
      ).toHaveLength(ending === 'second stop, a shard' ? 0 : 1);
      expect(
        lines().filter((line) => line.includes('raw zone pruned')),
        ending,
      ).toEqual([]);
      const stillWaiting = await sql<{ n: number }>`
        select count(*)::int as n from pg_locks
        where locktype = 'advisory' and not granted`.execute(db);
      expect(stillWaiting.rows[0]?.n, ending).toBeGreaterThan(0);
      expect(result.status).toBe('interrupted');
      expect(await runRow(warehouse, result.runId)).toMatchObject({ status: 'interrupted' });
      // The run has returned, but its transaction may still commit: no other run may start.
      const nightly = { exclusive: [NIGHTLY_LOCK_KEY] };
      const early = await tryAcquireSyncLock(warehouse, nightly);
      await early?.release();
      expect(early, ending).toBeNull();
      release();
      await holder;
      // Once that transaction is done, the run lets its lock go and says so.
      const released = 'sync lock released: the work a stopped run left in flight has ended';
      await vi.waitFor(
        () =>
          expect(
            lines().filter((line) => line.includes(released)),
            ending,
          ).toHaveLength(1),
        { timeout: 20_000, interval: 20 },
      );
      const lock = await tryAcquireSyncLock(warehouse, nightly);
      expect(lock, ending).not.toBeNull();
      await lock?.release();
    }
  });
});
