/**
 * A run stopped by kill -9 or SIGTERM replays as what it committed (docs/replay.md,
 * "Replay in place"): the business list is kept as soon as it is read, so a killed run's
 * committed businesses replay; reads of businesses that never committed are kept marked
 * and not replayed as written. A real process, because the stop is the point.
 *
 * The stop lands mid-run by construction, not by timing: the run syncs two businesses at
 * once (SYNC_CONCURRENCY=2), the sandbox drips the first listings answer (a byte a second
 * of 100000: it never ends here) so that business holds one place, and the other place
 * takes the businesses one after the other. Once the sandbox has answered a third
 * business's listings read, the second business has committed, and the first never can.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { replay } from '../../src/replay/replay.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { type SyncCommandFixture, spawnCli as start, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { type SandboxRequests, sandboxRequests } from '../helpers/sandbox-requests.ts';

const BUSINESSES = 2 * 12;

describe.each(testBackends)('replay of a stopped run (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let requests: SandboxRequests;

  beforeEach(async () => {
    requests = sandboxRequests();
    fixture = await startSyncFixture(
      backend,
      {
        seed: 37,
        accounts: 2,
        businessesPerAccount: 12,
        faults: { script: [{ kind: 'drip', operation: 'list_listings', dripBytes: 100_000 }] },
        logger: requests.logger,
      },
      { directory: true },
    );
  });
  afterEach(async () => {
    await fixture?.close();
  });

  /** The committed businesses, and those a replay of the raw zone writes. */
  async function committedAndReplayed(
    warehouse: Warehouse,
  ): Promise<{ committed: number[]; replayed: number[]; lists: number }> {
    const ids = async (schema: string) =>
      (
        await sql<{
          id: string;
        }>`select business_id::text as id from ${sql.id(schema, 'businesses')}
          order by 1`.execute(warehouse.db)
      ).rows.map((r) => Number(r.id));
    const committed = await ids('public');
    const { rows } = await sql<{ lists: number }>`
      select count(*) filter (where operation = 'list_businesses')::int as lists
        from raw_reads`.execute(warehouse.db);
    const databaseUrl = fixture.target?.databaseUrl;
    await replay({
      warehouse,
      ...(databaseUrl ? { databaseUrl } : {}),
      into: 'replayed',
      logger: silentLogger(),
    });
    return { committed, replayed: await ids('replayed'), ...rows[0]! };
  }

  /**
   * Stops a sync with `signal` once a third business's listings answer is out: one
   * business committed at least, the one held by the drip never.
   */
  async function stopMidRun(signal: 'SIGKILL' | 'SIGTERM') {
    const env = await fixture.prepare({ migrate: true });
    const { child, done } = start(['sync'], { ...env, SYNC_CONCURRENCY: '2' });
    const exited = done.then((ended) => {
      throw new Error(`the sync exited (${ended.code}) before it was stopped: ${ended.stderr}`);
    });
    await Promise.race([requests.when({ operation: 'list_listings' }, 3), exited]);
    child.kill(signal);
    const ended = await done;
    const warehouse = await fixture.open();
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from businesses`.execute(warehouse.db);
    return { ended, warehouse, committed: rows[0]?.n ?? 0 };
  }

  it('after kill -9: the list was kept, and the replay holds exactly what the night committed', async () => {
    const { ended, warehouse, committed: n } = await stopMidRun('SIGKILL');
    try {
      expect(ended.signal, ended.stderr).toBe('SIGKILL');
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThan(BUSINESSES);
      const { committed, replayed, lists } = await committedAndReplayed(warehouse);
      expect(lists).toBe(2);
      expect(replayed).toEqual(committed);
    } finally {
      await warehouse.close();
    }
  });

  it('after SIGTERM: reads of businesses never written are marked and not replayed', async () => {
    const { ended, warehouse, committed: n } = await stopMidRun('SIGTERM');
    try {
      // Stopped, the run ends on its own: partial (docs/running.md, "Exit codes").
      expect(ended.code, ended.stderr).toBe(3);
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThan(BUSINESSES);
      const { committed, replayed } = await committedAndReplayed(warehouse);
      expect(replayed).toEqual(committed);
      // Every marked read is of a business the night did not write; every read of a
      // business it did not write is marked.
      const { rows } = await sql<{ id: string; uncommitted: boolean }>`
        select distinct business_id::text as id, uncommitted from raw_reads
         where business_id is not null and operation <> 'get_response_status'`.execute(
        warehouse.db,
      );
      for (const { id, uncommitted } of rows) {
        expect(committed.includes(Number(id)), `business ${id}`).toBe(!uncommitted);
      }
      // The business held by the drip had other reads answered: kept, and marked.
      expect(rows.filter((r) => r.uncommitted).length).toBeGreaterThan(0);
    } finally {
      await warehouse.close();
    }
  });
});
