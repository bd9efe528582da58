/**
 * A run stopped by kill -9 or SIGTERM replays as what it committed (docs/replay.md,
 * "Replay in place"): the business list is kept as soon as it is read, so a killed run's
 * committed businesses replay; reads of businesses that never committed are kept marked
 * and not replayed as written. A real process, because the stop is the point.
 */
import { rmSync } from 'node:fs';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { replay } from '../../src/sync/replay.ts';
import type { Warehouse } from '../../src/warehouse/connection.ts';
import {
  type SyncCommandFixture,
  spawnCli as start,
  startSyncFixture,
  waitForStderr as waitForOutput,
} from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';

const BUSINESSES = 2 * 12;

describe.each(testBackends)('replay of a stopped run (%s)', (backend) => {
  let fixture: SyncCommandFixture;

  beforeEach(async () => {
    fixture = await startSyncFixture(
      backend,
      {
        seed: 37,
        accounts: 2,
        businessesPerAccount: 12,
        faults: { latencyMs: 60 },
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

  /** Stops a sync with `signal` some time after it listed; retried until it stopped mid-run. */
  async function stopMidRun(signal: 'SIGKILL' | 'SIGTERM'): Promise<Warehouse> {
    for (const delayMs of [250, 500, 900, 1500]) {
      // Each try on a warehouse of its own.
      await fixture.target?.close();
      fixture.target = undefined;
      rmSync(fixture.pgliteDir, { recursive: true, force: true });
      const env = await fixture.prepare({ migrate: true });
      const { child, done } = start(['sync'], env);
      await waitForOutput(child, '"msg":"businesses listed"');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      child.kill(signal);
      await done;
      const warehouse = await fixture.open();
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from businesses`.execute(warehouse.db);
      const n = rows[0]?.n ?? 0;
      if (n > 0 && n < BUSINESSES) return warehouse;
      await warehouse.close();
    }
    throw new Error(`${signal} never landed mid-run`);
  }

  it('after kill -9: the list was kept, and the replay holds exactly what the night committed', {
    timeout: 120_000,
  }, async () => {
    const warehouse = await stopMidRun('SIGKILL');
    try {
      const { committed, replayed, lists } = await committedAndReplayed(warehouse);
      expect(lists).toBe(2);
      expect(replayed).toEqual(committed);
    } finally {
      await warehouse.close();
    }
  });

  it('after SIGTERM: reads of businesses never written are marked and not replayed', {
    timeout: 120_000,
  }, async () => {
    const warehouse = await stopMidRun('SIGTERM');
    try {
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
    } finally {
      await warehouse.close();
    }
  });
});
