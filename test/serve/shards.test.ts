/**
 * Scale-out: `--shard I/N` runs for I = 0..N-1 into one warehouse land the same content as
 * one unsharded run into another, on the first day and after a sandbox day in which
 * businesses were archived upstream. Shards run one after another, and (on PostgreSQL,
 * where separate pods would run them) all at once.
 *
 * Every run gets the same clock (`now`), so times that enter content (alert dedupe keys
 * name the previous status's start) match between the warehouses.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, archiveBusiness, listBusinesses } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { SyncResult } from '../../src/sync/run.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { contentDigest, count, sync, testApiClient } from '../sync/harness.ts';

const N = 3;

describe.each(testBackends)('sharded runs (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let api: ApiClient;
  let whole: TestWarehouse;
  let sequential: TestWarehouse;
  let concurrent: TestWarehouse | undefined;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 21, accounts: 2, businessesPerAccount: 9, port: 0 });
    api = testApiClient();
    whole = await createTestWarehouse(backend);
    sequential = await createTestWarehouse(backend);
    if (backend === 'postgres') concurrent = await createTestWarehouse(backend);
  });
  afterAll(async () => {
    await api?.close();
    await whole?.close();
    await sequential?.close();
    await concurrent?.close();
    await sandbox?.close();
  });

  const clock = () => {
    const at = new Date(`${sandbox.today()}T03:00:00Z`);
    return () => at;
  };

  async function loadDay(): Promise<void> {
    const now = clock();
    const one = await sync(whole, api, sandbox.credentials, { now });
    expect(one.status).toBe('succeeded');

    const shards: SyncResult[] = [];
    for (let index = 0; index < N; index++) {
      shards.push(
        await sync(sequential, api, sandbox.credentials, { now, shard: { index, count: N } }),
      );
    }
    if (concurrent) {
      shards.push(
        ...(await Promise.all(
          Array.from({ length: N }, (_, index) =>
            sync(concurrent!, api, sandbox.credentials, { now, shard: { index, count: N } }),
          ),
        )),
      );
    }
    for (const shard of shards) expect(shard.status).toBe('succeeded');
    // Each business is synced by exactly one shard.
    const inShards = shards.slice(0, N).reduce((sum, s) => sum + s.stats.businesses.inShard, 0);
    expect(inShards).toBe(one.stats.businesses.inShard);
    expect(shards.slice(0, N).every((s) => s.stats.businesses.inShard > 0)).toBe(true);

    const expected = await contentDigest(whole);
    expect(await contentDigest(sequential)).toEqual(expected);
    if (concurrent) expect(await contentDigest(concurrent)).toEqual(expected);
  }

  it('land the same content as one unsharded run', async () => {
    await loadDay();
    expect(await count(whole, 'businesses')).toBe(18);
  });

  it('still do after a day in which businesses were archived upstream', async () => {
    // Archive one business per account upstream, then let a day pass.
    for (const credential of sandbox.credentials) {
      const list = await listBusinesses(api, credential);
      await archiveBusiness(api, credential, list.records[0]!.id);
    }
    sandbox.advanceDays(1);
    await loadDay();
    expect(await count(whole, 'businesses', sql`archived_at is not null`)).toBeGreaterThanOrEqual(
      2,
    );
    expect(await count(sequential, 'businesses', sql`archived_at is not null`)).toBe(
      await count(whole, 'businesses', sql`archived_at is not null`),
    );
    expect(await count(whole, 'listing_status_history')).toBeGreaterThan(
      await count(whole, 'listings'),
    );
  });
});
