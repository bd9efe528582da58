/**
 * `replay --in-place` over nights that cross a month's end (docs/replay.md, "Replay in
 * place"; migration 0040): the rebuild writes each series' months as the live nights did,
 * the earlier month in `rank_months_past` and the latest in `rank_months_current`, so the
 * merge finds both tables as they were, and a second replay changes nothing. The world is
 * one account of two businesses: what is compared does not depend on its size.
 */
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { replayInPlace } from '../../src/replay/in-place.ts';
import { testBackends } from '../helpers/database.ts';
import { documentedContent } from '../raw/documented-content.ts';
import { nightOf, sync, type WorldShape, worldPerTest } from '../sync/harness.ts';

const WORLD: WorldShape = {
  seed: 41,
  accounts: 1,
  businessesPerAccount: 2,
  startDate: '2026-04-29',
};

// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
async function monthRows(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ row: string }>`
    select t || ' ' || series_id || ' ' || month || ' ' || ranks::text || ' '
      || coalesce(previous_on::text, '-') || ' ' || coalesce(previous_rank::text, '-') as row
    from (select 'past' t, * from rank_months_past
      union all select 'current', * from rank_months_current) m
    order by 1`.execute(db);
  return rows.map((r) => r.row);
}

describe.each(testBackends)('replay --in-place across a month (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  it('rebuilds both tables of rank_months as the nights wrote them, and again changes nothing', async () => {
    // 29 and 30 April, 1 and 2 May.
    for (let night = 0; night < 4; night++) {
      if (night > 0) world.sandbox.advanceDays(1);
      const at = nightOf(world.sandbox);
      const run = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        now: () => at,
      });
      expect(run.status).toBe('succeeded');
    }
    const before = await documentedContent(world.warehouse.db);
    const months = await monthRows(world.warehouse.db);
    expect(months.filter((r) => r.startsWith('past ')).length).toBeGreaterThan(0);
    expect(
      months.filter((r) => r.startsWith('past ')).every((r) => r.includes(' 2026-04-01 ')),
    ).toBe(true);
    expect(months.filter((r) => r.startsWith('current ')).length).toBeGreaterThan(0);
    expect(
      months.filter((r) => r.startsWith('current ')).every((r) => r.includes(' 2026-05-01 ')),
    ).toBe(true);

    const replay = () =>
      replayInPlace({
        warehouse: world.warehouse,
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
        logger: silentLogger(),
      });
    expect((await replay()).runs).toBe(4);
    expect(await monthRows(world.warehouse.db)).toEqual(months);
    expect(await documentedContent(world.warehouse.db)).toEqual(before);
    await replay();
    expect(await monthRows(world.warehouse.db)).toEqual(months);
    expect(await documentedContent(world.warehouse.db)).toEqual(before);
  });
});
