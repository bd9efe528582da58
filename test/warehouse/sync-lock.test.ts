import { describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/connection.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/sync-lock.ts';
import { createTestWarehouse, skipOnPglite, testBackends } from '../helpers/database.ts';

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
