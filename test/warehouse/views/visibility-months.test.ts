/**
 * Migration 0033 packs visibility by month (docs/warehouse.md, "visibility_days,
 * visibility_months"): every documented view, and `visibility_days` itself (a view since
 * 0033), must read the same rows before and after it, after nights written into the packed
 * rows, and after `down`. The "before" is built independently of the code under test: a
 * warehouse at 0022 holding the same ranks as day rows, `visibility_days` summed from them
 * by the test's own SQL (day-rows.ts), then migrated to 0031 (the last schema with the
 * table) or to the latest.
 *
 * History: 70 days over three calendar months, series not collected on some days, a site
 * of a business never ranked (its days are zeros, not gaps), a site not collected for a
 * week. Nights after the migration: a month boundary, second runs the same day, a run dated
 * back into the previous month, and one more than 31 days back (summed from the month rows).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveVisibilityDays } from '../../../migrations/0033_visibility_months.ts';
import type { RankObservation } from '../../../src/api/index.ts';
import { addDays } from '../../../src/calendar-day.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, type TestBackend, testBackends } from '../../helpers/database.ts';
import { ctx, rank, snapshot, summary } from '../fixtures.ts';
import { write } from '../helpers.ts';
import {
  DAY_ROWS_SCHEMA,
  loadBusinesses,
  loadDayRows,
  outputs,
  random,
  type Served,
  serve,
} from './day-rows.ts';

/** The last schema with the table `visibility_days`. */
const BEFORE = '0031_read_models_without_fk_checks';
const BUSINESSES = [801, 802, 803, 804];
const KEYWORDS = ['plumber', 'plumber near me', 'emergency plumber'];
const SITES = ['Google', 'Bing', 'Google_new.organic'];
const FIRST_DAY = '2026-03-10';
const HISTORY_DAYS = 70;
const NIGHTS = 35;

/** One business's ranks of a day: 802 never ranks on Bing; 803's Google is silent a week a month. */
function ranksOf(next: () => number, businessId: number, day: string): RankObservation[] {
  const ranks: RankObservation[] = [];
  for (const keyword of KEYWORDS) {
    for (const site of SITES) {
      if (next() < 1 / 6) continue; // not collected
      if (businessId === 803 && site === 'Google' && Number(day.slice(8, 10)) <= 7) continue;
      const unranked = (businessId === 802 && site === 'Bing') || next() < 0.2;
      ranks.push(rank(keyword, site, unranked ? null : 1 + Math.floor(next() * 25)));
    }
  }
  return ranks;
}

function history(next: () => number): Served {
  const served: Served = new Map();
  for (let d = 0; d < HISTORY_DAYS; d++) {
    const day = addDays(FIRST_DAY, d);
    for (const businessId of BUSINESSES)
      serve(served, businessId, day, ranksOf(next, businessId, day));
  }
  return served;
}

/** A warehouse at 0022 holding `served` as day rows (day-rows.ts), read through every view. */
async function dayRows(backend: TestBackend, served: Served) {
  const wh = await createTestWarehouse(backend, { migrate: false });
  await migrateTo(wh.db, DAY_ROWS_SCHEMA);
  await loadBusinesses(wh.db, BUSINESSES);
  await loadDayRows(wh.db, served);
  return wh;
}

/** `history` at 0031 read through every view (`before`), with a copy of its day rows, then migrated. */
async function prepared(backend: TestBackend) {
  const served = history(random(33));
  const wh = await dayRows(backend, served);
  await migrateTo(wh.db, BEFORE);
  // What an operator set on the relations the migration replaces, which it must keep.
  await sql`grant select on visibility_days, v_location_scorecard to public`.execute(wh.db);
  await sql`comment on view v_visibility_daily is 'visibility for the agency dashboard'`.execute(
    wh.db,
  );
  const before = await outputs(wh.db, true);
  await sql`create table visibility_days_copy as select * from visibility_days`.execute(wh.db);
  await migrateToLatest(wh.db);
  return { wh, served, before };
}

/** The kind of relation `visibility_days` is: a table before 0033, a view after. */
async function kindOfVisibilityDays(wh: Warehouse): Promise<string | undefined> {
  const { rows } = await sql<{ kind: string }>`select table_type as kind
    from information_schema.tables
    where table_schema = current_schema() and table_name = 'visibility_days'`.execute(wh.db);
  return rows[0]?.kind;
}

/** The grants to PUBLIC and the comments `prepared` set, as they read now. */
async function operatorSettings(wh: Warehouse): Promise<unknown[]> {
  const { rows } = await sql`
    select c.relname as relation,
      (select string_agg(a.privilege_type, ',') from aclexplode(c.relacl) a
        where a.grantee = 0) as public_grants,
      obj_description(c.oid, 'pg_class') as comment
    from pg_class c
    where c.relnamespace = current_schema()::regnamespace
      and c.relname in ('visibility_days', 'v_visibility_daily', 'v_location_scorecard')
    order by 1`.execute(wh.db);
  return rows;
}

const OPERATOR_SETTINGS = [
  { relation: 'v_location_scorecard', public_grants: 'SELECT', comment: null },
  {
    relation: 'v_visibility_daily',
    public_grants: null,
    comment: 'visibility for the agency dashboard',
  },
  { relation: 'visibility_days', public_grants: 'SELECT', comment: null },
];

/** The scorecard's visibility (the rest of the row reads the business's profile and reviews). */
async function scorecardVisibility(wh: Warehouse): Promise<unknown[]> {
  const { rows } = await sql`select business_id, visibility_pct, visibility_change_30d
    from v_location_scorecard order by business_id`.execute(wh.db);
  return rows;
}

describe.each(testBackends)('visibility packed by month (%s)', (backend) => {
  let wh: Warehouse;
  let before: Record<string, string[]>;
  let afterMigration: Record<string, string[]>;
  // The day rows' counts, read before any test runs (the move test drops their copy).
  let source: { days: number; months: number }[];

  beforeAll(async () => {
    ({ wh, before } = await prepared(backend));
    afterMigration = await outputs(wh.db, true);
    ({ rows: source } = await sql<{ days: number; months: number }>`
      select count(*)::int as days,
        count(distinct (business_id, date_trunc('month', day), site))::int as months
      from visibility_days_copy`.execute(wh.db));
  });
  afterAll(async () => {
    await wh.close();
  });

  it('migration 0033: every documented view and visibility_days read the same rows', async () => {
    // Visibility and the scorecard hold rows (an empty comparison would prove nothing).
    for (const name of ['visibility_days', 'v_visibility_daily', 'v_location_scorecard']) {
      expect(before[name]?.length, name).toBeGreaterThan(0);
    }
    for (const [name, rows] of Object.entries(before)) {
      expect(afterMigration[name], name).toEqual(rows);
    }
    expect(await kindOfVisibilityDays(wh)).toBe('VIEW');
    expect(await operatorSettings(wh)).toEqual(OPERATOR_SETTINGS);
    // One row per business, month and site, each at most a month long, holding every day.
    const { rows } = await sql<{
      months: number;
      days: number;
      longest: number;
      gaps: number;
      zeros: number;
      even: boolean;
    }>`
      select count(*)::int as months,
        sum((select count(*) from unnest(keywords_tracked) k where k is not null))::int as days,
        max(cardinality(keywords_tracked))::int as longest,
        sum((select count(*) from unnest(keywords_tracked) k where k is null))::int as gaps,
        sum((select count(*) from unnest(clicks_per_1000) c where c = 0))::int as zeros,
        bool_and(cardinality(keywords_tracked) = cardinality(clicks_per_1000)
          and cardinality(keywords_tracked) = cardinality(top3)) as even
      from visibility_months`.execute(wh.db);
    expect(rows[0]).toMatchObject({ months: source[0]?.months, days: source[0]?.days, even: true });
    expect(rows[0]?.longest).toBeLessThanOrEqual(31);
    // Days not collected are NULL elements; days collected with nothing ranked are zeros.
    expect(rows[0]?.gaps).toBeGreaterThan(0);
    expect(rows[0]?.zeros).toBeGreaterThan(0);
  });

  it('moves again from any point: what was moved stays, the rest follows, in any batch size', async () => {
    const all =
      await sql`select * from visibility_months order by business_id, month, site`.execute(wh.db);
    await sql`delete from visibility_months
      where business_id <> 802 and (site <> 'Bing' or month = '2026-04-01')`.execute(wh.db);
    await moveVisibilityDays(wh.db as never, 'visibility_days_copy', 1);
    const again = await sql`
      select * from visibility_months order by business_id, month, site`.execute(wh.db);
    expect(again.rows).toEqual(all.rows);
    await sql`drop table visibility_days_copy`.execute(wh.db);
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

  async function nightsAndDown({ wh, served }: Awaited<ReturnType<typeof prepared>>) {
    const next = random(34);
    const night = (d: number, hour = 3) =>
      new Date(Date.parse(`${addDays(FIRST_DAY, HISTORY_DAYS + d)}T0${hour}:00:00Z`));
    const sync = async (businessId: number, at: Date) => {
      const day = at.toISOString().slice(0, 10);
      const ranks = ranksOf(next, businessId, day);
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
      serve(served, businessId, day, ranks);
    };
    for (let d = 0; d < NIGHTS; d++) {
      for (const businessId of BUSINESSES) {
        // 801's night 3 is synced only later (below).
        if (businessId === 801 && d === 3) continue;
        await sync(businessId, night(d));
        if (d % 5 === 0) await sync(businessId, night(d, 9));
      }
      // A clock set back: 801 into night 3 (in the month before, by then), 804 more than
      // 31 days back, which sums that day from the month rows.
      if (d === 28) await sync(801, night(3));
      if (d === 30) await sync(804, night(-20));
    }
    const written = await outputs(wh.db, false);
    const writtenScores = await scorecardVisibility(wh);

    // The same ranks stored as day rows at 0022, read through every view; migrated to
    // the latest (0030 and 0033 moving them), read again.
    const oracle = await dayRows(backend, served);
    try {
      const expected = await outputs(oracle.db, true);
      const expectedScores = await scorecardVisibility(oracle);
      await migrateToLatest(oracle.db);
      expect(await outputs(oracle.db, true)).toEqual(expected);
      expect(await scorecardVisibility(oracle)).toEqual(expectedScores);

      expect(expected['visibility_days']?.length).toBeGreaterThan(
        (before['visibility_days']?.length ?? 0) + NIGHTS * 10,
      );
      for (const [name, rows] of Object.entries(written)) {
        expect(rows, name).toEqual(expected[name]);
      }
      expect(writtenScores).toEqual(expectedScores);
      expect(
        writtenScores.some((s) => (s as { visibility_pct: unknown }).visibility_pct !== null),
      ).toBe(true);

      await migrateTo(wh.db, BEFORE);
      expect(await kindOfVisibilityDays(wh)).toBe('BASE TABLE');
      expect(await operatorSettings(wh)).toEqual(OPERATOR_SETTINGS);
      const down = await outputs(wh.db, false);
      for (const [name, rows] of Object.entries(down)) {
        expect(rows, name).toEqual(expected[name]);
      }
      expect(await scorecardVisibility(wh)).toEqual(expectedScores);
    } finally {
      await oracle.close();
    }
  }
});
