/**
 * Scale-out: `--shard I/N` runs for I = 0..N-1 into one warehouse land the same content as
 * one unsharded run into another, on the first day and after a sandbox day in which
 * businesses were archived upstream. Shards run one after another, and all at once (as
 * separate pods would run them), on each backend.
 *
 * Every run gets the same clock (`now`), so times that enter content (alert dedupe keys
 * name the previous status's start) match between the warehouses.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
  let sharded: TestWarehouse;

  // Each test starts from a sandbox on its first day and two empty warehouses.
  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 21, accounts: 2, businessesPerAccount: 9, port: 0 });
    api = testApiClient();
    whole = await createTestWarehouse(backend);
    sharded = await createTestWarehouse(backend);
  });
  afterEach(async () => {
    await api?.close();
    await whole?.close();
    await sharded?.close();
    await sandbox?.close();
  });

  const clock = () => {
    const at = new Date(`${sandbox.today()}T03:00:00Z`);
    return () => at;
  };

  /**
   * One unsharded run into `whole`, N shard runs into `sharded`: one after another, or all
   * at once (PostgreSQL gives each its own connections; PGlite, one connection, interleaves
   * their transactions), then the two warehouses compared.
   */
  async function loadDay(mode: 'one after another' | 'all at once'): Promise<void> {
    const now = clock();
    const one = await sync(whole, api, sandbox.credentials, { now });
    expect(one.status).toBe('succeeded');

    const runShard = (index: number) =>
      sync(sharded, api, sandbox.credentials, { now, shard: { index, count: N } });
    const shards: SyncResult[] = [];
    if (mode === 'all at once') {
      shards.push(...(await Promise.all(Array.from({ length: N }, (_, index) => runShard(index)))));
    } else {
      for (let index = 0; index < N; index++) shards.push(await runShard(index));
    }
    expect(shards.map((s) => s.status)).toEqual(Array(N).fill('succeeded'));
    // Each business is synced by exactly one shard.
    const inShards = shards.reduce((sum, s) => sum + s.stats.businesses.inShard, 0);
    expect(inShards).toBe(one.stats.businesses.inShard);
    expect(shards.every((s) => s.stats.businesses.inShard > 0)).toBe(true);

    expect(await contentDigest(sharded)).toEqual(await contentDigest(whole));
  }

  it('one after another land the same content as one unsharded run', async () => {
    await loadDay('one after another');
    expect(await count(whole, 'businesses')).toBe(18);
  });

  it('all at once land the same content as one unsharded run', async () => {
    await loadDay('all at once');
    expect(await count(sharded, 'businesses')).toBe(18);
  });

  it('still do after a day in which businesses were archived upstream', async () => {
    await loadDay('one after another');
    // Archive one business per account upstream, then let a day pass.
    for (const credential of sandbox.credentials) {
      const list = await listBusinesses(api, credential);
      await archiveBusiness(api, credential, list.records[0]!.id);
    }
    sandbox.advanceDays(1);
    await loadDay('all at once');
    expect(await count(whole, 'businesses', sql`archived_at is not null`)).toBeGreaterThanOrEqual(
      2,
    );
    expect(await count(sharded, 'businesses', sql`archived_at is not null`)).toBe(
      await count(whole, 'businesses', sql`archived_at is not null`),
    );
    expect(await count(whole, 'listing_status_history')).toBeGreaterThan(
      await count(whole, 'listings'),
    );
  });
});
