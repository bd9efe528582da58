/**
 * Every read carries its own observation time (docs/warehouse.md, "Raw zone"): the
 * credential's reads (its business list, reference data, operation-10 polls) are stamped
 * when they are read, on the credential's clock, not all at the moment it finished; a
 * business's reads carry the time its rows were written at.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { testBackends } from '../helpers/database.ts';
import { sync, worldPerTest } from '../sync/harness.ts';

describe.each(testBackends)('raw read times (%s)', (backend) => {
  const world = worldPerTest(backend, {
    seed: 41,
    accounts: 1,
    businessesPerAccount: 2,
    startDate: '2026-06-01',
  });

  it('stamps each account read when it is read, and each business read with its rows', async () => {
    // A clock that moves a minute each time it is asked: every stamp shows when it was taken.
    let ticks = 0;
    const start = Date.parse('2026-06-01T23:58:00Z');
    const result = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => new Date(start + 60_000 * ticks++),
    });
    expect(result.status).toBe('succeeded');
    const { rows } = await sql<{ operation: string; business_id: string | null; at: Date }>`
      select operation, business_id::text as business_id, observed_at as at
        from raw_reads order by read_id`.execute(world.warehouse.db);
    const list = rows.find((r) => r.operation === 'list_businesses')!;
    const reference = rows.filter(
      (r) => r.business_id === null && r.operation !== 'list_businesses',
    );
    expect(reference.length).toBeGreaterThan(0);
    // The list was read first: stamped before any reference read, which are each their own.
    for (const read of reference) expect(new Date(read.at) > new Date(list.at)).toBe(true);
    expect(new Set(reference.map((r) => new Date(r.at).toISOString())).size).toBe(reference.length);
    // A business's reads share the time its rows were written at.
    const { rows: businesses } = await sql<{ id: string; first: Date }>`
      select business_id::text as id, first_seen_at as first from businesses`.execute(
      world.warehouse.db,
    );
    for (const business of businesses) {
      const times = new Set(
        rows.filter((r) => r.business_id === business.id).map((r) => new Date(r.at).toISOString()),
      );
      expect([...times]).toEqual([new Date(business.first).toISOString()]);
    }
  });
});
