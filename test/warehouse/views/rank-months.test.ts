/**
 * Migration 0030 packs rank history by month (docs/warehouse.md, "Rank history"): every
 * documented view, and `rank_history` itself (a view since 0030), must read the same rows
 * before and after it, and after nights written into the packed rows. The "before" is
 * built independently of the new code: a warehouse at 0022 holding the same observations
 * as day rows of the old table (each with its previous observation by a window function,
 * as 0005 converted them), `rank_latest` recomputed from them and `visibility_days` summed
 * from them, the way the writers of that release left them.
 *
 * History: 100 days over four calendar months, days not collected, days not ranked, a
 * series silent for a whole month, a series with one observation. Nights after the
 * migration: a month boundary, second runs the same day, a run dated back into the
 * previous month and one into a month the series has no row for.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveRankHistory } from '../../../migrations/0030_rank_months.ts';
import type { RankObservation } from '../../../src/api/index.ts';
import { addDays } from '../../../src/calendar-day.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, type TestBackend, testBackends } from '../../helpers/database.ts';
import { ctx, rank, snapshot, summary } from '../fixtures.ts';
import { write } from '../helpers.ts';
import {
  DAY_ROWS_SCHEMA as BEFORE,
  loadBusinesses,
  loadDayRows,
  outputs,
  RANK_RELATIONS,
  random,
  type Served,
  serve,
} from './day-rows.ts';

const BUSINESSES = [701, 702, 703];
const KEYWORDS = ['dentist', 'dentist near me'];
const SITES = ['Google', 'Bing', 'Google_new.local'];
const FIRST_DAY = '2026-01-15';
const HISTORY_DAYS = 100;
const NIGHTS = 40;

/** The history before the migration, day by day. */
function history(next: () => number): Served {
  const served: Served = new Map();
  for (let d = 0; d < HISTORY_DAYS; d++) {
    const day = addDays(FIRST_DAY, d);
    for (const businessId of BUSINESSES) {
      const ranks: RankObservation[] = [];
      for (const keyword of KEYWORDS) {
        for (const site of SITES) {
          if (next() < 1 / 6) continue; // not collected
          // 702's Bing series is silent through February; 703's keeps one day only.
          if (businessId === 702 && site === 'Bing' && day.startsWith('2026-02')) continue;
          if (businessId === 703 && site === 'Bing' && keyword === 'dentist' && d !== 3) continue;
          ranks.push(rank(keyword, site, next() < 0.2 ? null : 1 + Math.floor(next() * 40)));
        }
      }
      serve(served, businessId, day, ranks);
    }
  }
  return served;
}

/**
 * A warehouse at 0022 holding `history`'s day rows, read through every view (`before`),
 * with a copy of the day rows (to move again as an interrupted move would), then migrated
 * to the latest.
 */
async function prepared(backend: TestBackend) {
  const served = history(random(30));
  const wh = await createTestWarehouse(backend, { migrate: false });
  await migrateTo(wh.db, BEFORE);
  await loadBusinesses(wh.db, BUSINESSES);
  await loadDayRows(wh.db, served);
  const before = await outputs(wh.db, true);
  await sql`create table rank_history_copy as select * from rank_history`.execute(wh.db);
  await migrateToLatest(wh.db);
  return { wh, served, before };
}

describe.each(testBackends)('rank history packed by month (%s)', (backend) => {
  let wh: Warehouse;
  let before: Record<string, string[]>;
  let afterMigration: Record<string, string[]>;
  let packed: { months: number; days: number; longest: number };

  beforeAll(async () => {
    ({ wh, before } = await prepared(backend));
    afterMigration = await outputs(wh.db, true);
    const { rows } = await sql<{ months: number; days: number; longest: number }>`
      select count(*)::int as months,
        sum((select count(*) from unnest(ranks) r where r is not null))::int as days,
        max(cardinality(ranks))::int as longest
      from rank_months`.execute(wh.db);
    packed = rows[0] ?? { months: 0, days: 0, longest: 0 };
  });
  afterAll(async () => {
    await wh.close();
  });

  it('migration 0030: every documented view and rank_history read the same rows', () => {
    // The views of ranks hold rows (an empty comparison would prove nothing); the others,
    // over tables this test leaves empty, must still exist and read the same.
    for (const name of Object.keys(RANK_RELATIONS)) {
      expect(before[name]?.length, name).toBeGreaterThan(0);
    }
    for (const [name, rows] of Object.entries(before)) {
      expect(afterMigration[name], name).toEqual(rows);
    }
    // One row per series and month, each at most a month long, holding every day.
    expect(packed.days).toBe(before['rank_history']?.length);
    expect(packed.longest).toBeLessThanOrEqual(31);
    expect(packed.months).toBeLessThan(packed.days / 10);
  });

  it('moves again from any point: what was moved stays, the rest follows, in any batch size', async () => {
    const all = await sql`select * from rank_months order by series_id, month`.execute(wh.db);
    // 0030's table, as it was before 0040 split it (0040's down puts it back).
    await migrateTo(wh.db, '0039_rank_daily_collected_test');
    await sql`delete from rank_months where series_id % 3 <> 0`.execute(wh.db);
    await moveRankHistory(wh.db as never, 'rank_history_copy', 4);
    const again = await sql`select * from rank_months order by series_id, month`.execute(wh.db);
    expect(again.rows).toEqual(all.rows);
    await sql`drop table rank_history_copy`.execute(wh.db);
    await migrateToLatest(wh.db);
    const split = await sql`select * from rank_months order by series_id, month`.execute(wh.db);
    expect(split.rows).toEqual(all.rows);
  });

  it('nights written into the month rows read as the day rows would, and down() restores them', async () => {
    // A warehouse of its own: this test writes nights and migrates down.
    const own = await prepared(backend);
    try {
      await nightsAndDown(own);
    } finally {
      await own.wh.close();
    }
  });

  async function nightsAndDown({ wh, served, before }: Awaited<ReturnType<typeof prepared>>) {
    const next = random(31);
    const night = (d: number, hour = 3) =>
      new Date(Date.parse(`${addDays(FIRST_DAY, HISTORY_DAYS + d)}T0${hour}:00:00Z`));
    const sync = async (businessId: number, at: Date) => {
      const ranks: RankObservation[] = [];
      for (const keyword of KEYWORDS) {
        for (const site of SITES) {
          if (next() < 1 / 6) continue;
          ranks.push(rank(keyword, site, next() < 0.2 ? null : 1 + Math.floor(next() * 40)));
        }
      }
      await write(
        wh,
        snapshot({
          businessId,
          summary: summary({ id: businessId }),
          listings: [],
          reviews: [],
          keywords: [],
          rankings: ranks,
        }),
        ctx(at),
      );
      serve(served, businessId, at.toISOString().slice(0, 10), ranks);
    };
    for (let d = 0; d < NIGHTS; d++) {
      for (const businessId of BUSINESSES) {
        // 701's last night of April is synced only later (below).
        if (businessId === 701 && d === 5) continue;
        await sync(businessId, night(d));
        if (d % 6 === 0) await sync(businessId, night(d, 9));
      }
      // A clock set back: 701 into the last day of April (May's rows then carry it in),
      // 703 into February, a month its one-day Bing series has no row for.
      if (d === 25) await sync(701, night(5));
      if (d === 30) await sync(703, new Date('2026-02-20T03:00:00Z'));
    }
    const written = await outputs(wh.db, false);

    const oracle = await createTestWarehouse(backend, { migrate: false });
    try {
      await migrateTo(oracle.db, BEFORE);
      await loadBusinesses(oracle.db, BUSINESSES);
      await loadDayRows(oracle.db, served);
      const expected = await outputs(oracle.db, false);
      expect(expected['rank_history']?.length).toBeGreaterThan(
        (before['rank_history']?.length ?? 0) + NIGHTS * 10,
      );
      for (const [name, rows] of Object.entries(expected)) {
        expect(rows.length, name).toBeGreaterThanOrEqual(before[name]?.length ?? 0);
        expect(written[name], name).toEqual(rows);
      }

      await migrateTo(wh.db, BEFORE);
      const { rows: kind } = await sql<{ kind: string }>`select table_type as kind
        from information_schema.tables
        where table_schema = current_schema() and table_name = 'rank_history'`.execute(wh.db);
      expect(kind).toEqual([{ kind: 'BASE TABLE' }]);
      expect(await outputs(wh.db, false)).toEqual(expected);
    } finally {
      await oracle.close();
    }
  }
});
