import { describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { NIGHTLY_LOCK_KEY, runSync, SyncLockedError } from '../../src/sync/run.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { type SyncLockKeys, tryAcquireSyncLock } from '../../src/warehouse/runs/sync-lock.ts';
import { createTestWarehouse, skipOnPglite, testBackends } from '../helpers/database.ts';

const FULL: SyncLockKeys = { exclusive: [NIGHTLY_LOCK_KEY] };
const shard = (i: number, n: number): SyncLockKeys => ({
  shared: [NIGHTLY_LOCK_KEY],
  exclusive: [`${NIGHTLY_LOCK_KEY}:shard:${i}/${n}`],
});

/** Whether a run with these options is refused for the lock (it never reaches the API). */
async function refusedForLock(
  warehouse: Warehouse,
  shardOption?: { index: number; count: number },
): Promise<boolean> {
  const api = createApiClient({ logger: silentLogger() });
  try {
    await runSync({
      warehouse,
      api,
      credentials: [],
      logger: silentLogger(),
      ...(shardOption ? { shard: shardOption } : {}),
    });
    return false;
  } catch (error) {
    if (error instanceof SyncLockedError) return true;
    throw error;
  } finally {
    await api.close();
  }
}

describe.each(testBackends)('sync lock (%s)', (backend) => {
  it('excludes a second holder until released', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      const first = await tryAcquireSyncLock(wh);
      expect(first).not.toBeNull();
      expect(await tryAcquireSyncLock(wh)).toBeNull();
      // Another key is another lock.
      const other = await tryAcquireSyncLock(wh, 'reference-data');
      expect(other).not.toBeNull();
      await first?.release();
      await first?.release(); // idempotent
      const again = await tryAcquireSyncLock(wh);
      expect(again).not.toBeNull();
      await again?.release();
      await other?.release();
      // The lock holds no Kysely connection: queries still run while it is held.
      const held = await tryAcquireSyncLock(wh);
      await wh.db.selectFrom('accounts').selectAll().execute();
      await held?.release();
    } finally {
      await wh.close();
    }
  });

  it('a full run and shards exclude each other; shards run side by side', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      const full = await tryAcquireSyncLock(wh, FULL);
      expect(full).not.toBeNull();
      expect(await tryAcquireSyncLock(wh, shard(0, 4))).toBeNull();
      await full?.release();

      const zero = await tryAcquireSyncLock(wh, shard(0, 4));
      const one = await tryAcquireSyncLock(wh, shard(1, 4));
      expect(zero).not.toBeNull();
      expect(one).not.toBeNull();
      expect(await tryAcquireSyncLock(wh, shard(1, 4))).toBeNull();
      expect(await tryAcquireSyncLock(wh, FULL)).toBeNull();
      await zero?.release();
      expect(await tryAcquireSyncLock(wh, FULL)).toBeNull();
      await one?.release();
      const after = await tryAcquireSyncLock(wh, FULL);
      expect(after).not.toBeNull();
      await after?.release();
    } finally {
      await wh.close();
    }
  });

  it('runSync: a shard is refused while a full run holds the lock, and the reverse', async () => {
    const wh = await createTestWarehouse(backend);
    try {
      const full = await tryAcquireSyncLock(wh, FULL);
      expect(await refusedForLock(wh, { index: 2, count: 4 })).toBe(true);
      await full?.release();
      const held = await tryAcquireSyncLock(wh, shard(2, 4));
      expect(await refusedForLock(wh)).toBe(true);
      // Another shard of the same night is not refused.
      expect(await refusedForLock(wh, { index: 3, count: 4 })).toBe(false);
      await held?.release();
      expect(await refusedForLock(wh)).toBe(false);
    } finally {
      await wh.close();
    }
  });

  it('a full run in one process excludes a shard in another, and the reverse', async (context) => {
    skipOnPglite(context, backend, 'one process, one connection per data directory');
    const wh = await createTestWarehouse(backend);
    const otherProcess = await openWarehouse({
      databaseUrl: wh.databaseUrl,
      searchPath: wh.searchPath,
    });
    try {
      const full = await tryAcquireSyncLock(wh, FULL);
      expect(await tryAcquireSyncLock(otherProcess, shard(0, 2))).toBeNull();
      await full?.release();
      const zero = await tryAcquireSyncLock(otherProcess, shard(0, 2));
      const one = await tryAcquireSyncLock(wh, shard(1, 2));
      expect(zero).not.toBeNull();
      expect(one).not.toBeNull();
      expect(await tryAcquireSyncLock(wh, FULL)).toBeNull();
      await zero?.release();
      await one?.release();
      const again = await tryAcquireSyncLock(otherProcess, FULL);
      expect(again).not.toBeNull();
      await again?.release();
    } finally {
      await otherProcess.close();
      await wh.close();
    }
  });

  it('excludes another process (pool) on the same warehouse, not other schemas', async (context) => {
    skipOnPglite(context, backend, 'one process, one connection per data directory');
    const wh = await createTestWarehouse(backend);
    const otherProcess = await openWarehouse({
      databaseUrl: wh.databaseUrl,
      searchPath: wh.searchPath,
    });
    const otherSchema = await createTestWarehouse(backend, { beside: wh });
    try {
      const lock = await tryAcquireSyncLock(wh);
      expect(lock).not.toBeNull();
      expect(await tryAcquireSyncLock(otherProcess)).toBeNull();
      const elsewhere = await tryAcquireSyncLock(otherSchema);
      expect(elsewhere).not.toBeNull();
      await elsewhere?.release();
      await lock?.release();
      const taken = await tryAcquireSyncLock(otherProcess);
      expect(taken).not.toBeNull();
      await taken?.release();
    } finally {
      await otherProcess.close();
      await otherSchema.close();
      await wh.close();
    }
  });
});
