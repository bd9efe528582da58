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
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiClient, createApiClient } from '../../src/api/index.ts';
import { memoryLogger, silentLogger } from '../../src/log.ts';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { Ticker } from '../../src/sync/in-flight.ts';
import { renderSyncSummary } from '../../src/sync/summary.ts';
import { BusinessLockTimeoutError, lockBusiness } from '../../src/warehouse/businesses.ts';
import { openWarehouse } from '../../src/warehouse/connection.ts';
import {
  createTestWarehouse,
  skipOnPglite,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';
import { count, sync, testApiClient } from './harness.ts';

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
  let sandbox: RunningSandbox;
  let api: ApiClient;
  let warehouse: TestWarehouse | undefined;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 41, accounts: 2, businessesPerAccount: 6, port: 0 });
    api = testApiClient();
  });
  afterEach(async () => {
    sandbox.setFaults({ ...DEFAULT_FAULTS, script: [] });
    await warehouse?.close();
    warehouse = undefined;
  });
  afterAll(async () => {
    await api?.close();
    await sandbox?.close();
  });

  it('says it is still working while a dripped answer holds the run; a stop aborts it and records interrupted', async () => {
    warehouse = await createTestWarehouse(backend);
    const { logger, lines } = memoryLogger('info');
    const manual = manualTicker();
    // A body of 100000 bytes, a byte a second: only the stop can end this run soon.
    sandbox.setFaults({
      script: [{ kind: 'drip', operation: 'list_listings', dripBytes: 100_000 }],
    });
    const stop = new AbortController();
    const running = sync(warehouse, api, sandbox.credentials.slice(0, 1), {
      logger,
      businessConcurrency: 1,
      overallBusinessConcurrency: 1,
      ticker: manual.ticker,
      signal: stop.signal,
    });
    await vi.waitFor(() => expect(sandbox.stats().byOperation['list_listings']?.['drip']).toBe(1), {
      timeout: 20_000,
      interval: 20,
    });
    manual.advance(14_000);
    const still = lines().filter((line) => line.includes('still working'));
    expect(still).toHaveLength(1);
    expect(still[0]).toMatch(
      /still working: 0 of 6 businesses done, [1-6] requests in flight, oldest for 14 s/,
    );

    const stoppedAt = performance.now();
    stop.abort();
    const result = await running;
    // The dripped body would take 100000 s; the stop aborts it at once.
    expect(performance.now() - stoppedAt).toBeLessThan(10_000);
    expect(result.status).toBe('interrupted');
    expect(await runRow(warehouse, result.runId)).toMatchObject({ status: 'interrupted' });
    // The business whose read was cut short is not written, nor counted as failed.
    expect(await count(warehouse, 'businesses')).toBe(0);
    expect(result.stats.businesses.failed).toBe(0);
    expect(lines().filter((line) => line.includes('stream failed'))).toEqual([]);
    // The line stops with the run.
    expect(manual.running()).toBe(0);
  });
});
