/**
 * Under faults the warehouse ends equal to a fault-free run's, plus one quarantine row
 * per malformed record the sandbox served. Both sandboxes run in each mode (docs/upstream.md,
 * Errors): with HTTP statuses, and with every error of the contract answered HTTP 200;
 * transport faults (5xx, 429, resets) are the same in both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { contentDigest, count, sync, testApiClient } from './harness.ts';

const WORLD = { seed: 23, accounts: 2, businessesPerAccount: 5, port: 0 } as const;

const cases = testBackends.flatMap((backend) => [
  { backend, mode: 'statuses', errorsWith200: false },
  { backend, mode: 'every error with HTTP 200', errorsWith200: true },
]);

describe.each(cases)('sync under faults ($backend) with $mode', ({ backend, errorsWith200 }) => {
  let clean: RunningSandbox;
  let faulty: RunningSandbox;
  let reference: TestWarehouse;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeAll(async () => {
    clean = await startSandbox({ ...WORLD, faults: { errorsWith200 } });
    faulty = await startSandbox({
      ...WORLD,
      faults: {
        errorRate: 0.1,
        resetRate: 0.03,
        malformedRate: 0.05,
        rateLimitPerSecond: 150,
        retryAfterSeconds: 1,
        errorsWith200,
      },
    });
    reference = await createTestWarehouse(backend);
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await Promise.all([reference?.close(), warehouse?.close()]);
    await Promise.all([clean?.close(), faulty?.close()]);
  });

  it('retries through 5xx, resets and 429 bursts and quarantines each malformed record', async () => {
    const expected = await sync(reference, api, clean.credentials);
    expect(expected.status).toBe('succeeded');

    faulty.resetStats();
    const result = await sync(warehouse, api, faulty.credentials);
    const stats = faulty.stats();
    expect(stats.malformedRecordsServed).toBeGreaterThan(0);
    expect(result.stats.retries).toBeGreaterThan(0);
    // Faults were served, and every one was retried through: only the malformed records failed.
    const outcomes = Object.values(stats.byOperation).flatMap((byOutcome) =>
      Object.keys(byOutcome),
    );
    expect(outcomes).toEqual(expect.arrayContaining(['ok']));
    expect(result.status).toBe('partial');
    expect(result.stats.businesses.failed).toBe(0);
    expect(result.stats.streamFailures).toBe(0);

    expect(await contentDigest(warehouse)).toEqual(await contentDigest(reference));
    expect(await count(warehouse, 'quarantine')).toBe(stats.malformedRecordsServed);
    expect(result.stats.quarantined).toBe(stats.malformedRecordsServed);
  });
});
