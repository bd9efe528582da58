import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/warehouse/database.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { writeBusinessSnapshot } from '../../src/warehouse/write/snapshot.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { ctx, DAY1, DAY1_LATER, DAY2, DAY3, keyword, rank, snapshot } from './fixtures.ts';
import { addAccount, write } from './helpers.ts';

describe.each(testBackends)('rank history (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
    await addAccount(wh);
  });
  afterAll(async () => {
    await wh.close();
  });

  const ranks = (google: number | null, bing: number | null) =>
    snapshot({
      rankings: [
        rank('dentist portland', 'Google', google),
        rank('dentist portland', 'Bing', bing),
      ],
    });

  const stored = () =>
    wh.db
      .selectFrom('rank_observations')
      .select(['observed_on', 'site', 'rank'])
      .orderBy('observed_on')
      .orderBy('site')
      .execute();

  /** The physical row versions of the rank tables: any write changes them. */
  const rowVersions = async () => {
    const { rows } = await sql<{ v: string }>`
      select concat_ws('|',
        (select string_agg(xmin::text || ctid::text, ',' order by series_id) from rank_series),
        (select string_agg(xmin::text || ctid::text, ',' order by series_id, month)
          from rank_months_past),
        (select string_agg(xmin::text || ctid::text, ',' order by series_id, month)
          from rank_months_current),
        (select string_agg(xmin::text || ctid::text, ',' order by series_id) from rank_latest)
      ) as v`.execute(wh.db);
    return rows[0]?.v;
  };

  it('a second run the same day overwrites only what changed, and an unchanged one writes nothing', async () => {
    await write(wh, ranks(3, null), ctx(DAY1));
    const afterFirst = await rowVersions();
    const same = await write(wh, ranks(3, null), ctx(DAY1_LATER));
    expect(same.stats['rank_observations']).toEqual({
      inserted: 0,
      updated: 0,
      unchanged: 2,
      deleted: 0,
    });
    expect(await rowVersions()).toBe(afterFirst);

    const result = await write(wh, ranks(2, null), ctx(DAY1_LATER));
    expect(result.stats['rank_observations']).toEqual({
      inserted: 0,
      updated: 1,
      unchanged: 1,
      deleted: 0,
    });
    expect(await stored()).toEqual([
      { observed_on: '2025-03-01', site: 'Bing', rank: null },
      { observed_on: '2025-03-01', site: 'Google', rank: 2 },
    ]);
  });

  it('the next day adds new rows, each linked to its previous observation', async () => {
    await write(wh, ranks(3, null), ctx(DAY1));
    const result = await write(wh, ranks(3, 9), ctx(DAY3));
    expect(result.stats['rank_observations']?.inserted).toBe(2);
    expect((await stored()).map((r) => [r.observed_on, r.site, r.rank])).toEqual([
      ['2025-03-01', 'Bing', null],
      ['2025-03-01', 'Google', 3],
      ['2025-03-03', 'Bing', 9],
      ['2025-03-03', 'Google', 3],
    ]);
    const { rows } = await sql`select s.site, h.observed_on, h.rank, h.previous_rank,
        h.days_since_previous
      from rank_history h join rank_series s using (series_id)
      order by s.site, h.observed_on`.execute(wh.db);
    expect(rows).toEqual([
      {
        site: 'Bing',
        observed_on: '2025-03-01',
        rank: null,
        previous_rank: null,
        days_since_previous: null,
      },
      {
        site: 'Bing',
        observed_on: '2025-03-03',
        rank: 9,
        previous_rank: null,
        days_since_previous: 2,
      },
      {
        site: 'Google',
        observed_on: '2025-03-01',
        rank: 3,
        previous_rank: null,
        days_since_previous: null,
      },
      {
        site: 'Google',
        observed_on: '2025-03-03',
        rank: 3,
        previous_rank: 3,
        days_since_previous: 2,
      },
    ]);
  });

  it('the calendar reaches the last day written, not the rest of its month (migration 0038)', async () => {
    const calendar = async () => {
      const { rows } = await sql<{ first: string; last: string; days: number }>`
        select min(observed_on)::text as first, max(observed_on)::text as last,
          count(*)::int as days from rank_days`.execute(wh.db);
      return rows[0];
    };
    await sql`delete from rank_days`.execute(wh.db);
    await write(wh, ranks(5, 5), ctx(DAY2));
    expect(await calendar()).toEqual({ first: '2025-03-01', last: '2025-03-02', days: 2 });
    await write(wh, ranks(6, 6), ctx(DAY3));
    expect(await calendar()).toEqual({ first: '2025-03-01', last: '2025-03-03', days: 3 });
    // A day dated before the stored ones, in a month the calendar did not hold.
    await write(wh, ranks(4, null), ctx(new Date('2025-02-27T03:00:00.000Z')));
    expect(await calendar()).toEqual({ first: '2025-02-01', last: '2025-03-03', days: 30 });
    const { rows } = await sql`select observed_on, rank from v_rank_daily
      where site = 'Google' order by observed_on`.execute(wh.db);
    expect(rows).toEqual([
      { observed_on: '2025-02-27', rank: 4 },
      { observed_on: '2025-03-02', rank: 5 },
      { observed_on: '2025-03-03', rank: 6 },
    ]);
  });

  it('a run dated before a stored day fills the gap and relinks the day after it', async () => {
    await write(wh, ranks(5, 5), ctx(DAY1));
    await write(wh, ranks(7, 7), ctx(DAY3));
    await write(wh, ranks(6, null), ctx(DAY2));
    const { rows } = await sql`select observed_on, rank, previous_observed_on, previous_rank,
        movement from v_rank_daily where site = 'Google' order by observed_on`.execute(wh.db);
    expect(rows).toEqual([
      {
        observed_on: '2025-03-01',
        rank: 5,
        previous_observed_on: null,
        previous_rank: null,
        movement: 'first',
      },
      {
        observed_on: '2025-03-02',
        rank: 6,
        previous_observed_on: '2025-03-01',
        previous_rank: 5,
        movement: 'down',
      },
      {
        observed_on: '2025-03-03',
        rank: 7,
        previous_observed_on: '2025-03-02',
        previous_rank: 6,
        movement: 'down',
      },
    ]);
    const latest = await sql`select site, observed_on, rank, previous_observed_on, previous_rank
      from v_rank_latest order by site`.execute(wh.db);
    expect(latest.rows).toEqual([
      {
        site: 'Bing',
        observed_on: '2025-03-03',
        rank: 7,
        previous_observed_on: '2025-03-02',
        previous_rank: null,
      },
      {
        site: 'Google',
        observed_on: '2025-03-03',
        rank: 7,
        previous_observed_on: '2025-03-02',
        previous_rank: 6,
      },
    ]);
  });

  it("keeps each series' latest month in rank_months_current and the months before in rank_months_past (migration 0040)", async () => {
    const at = (day: string) => ctx(new Date(`${day}T03:00:00.000Z`));
    const where = async () => {
      const { rows } = await sql<{ t: string; month: string; ranks: (number | null)[] }>`
        select 'current' as t, month::text, ranks from rank_months_current
        union all select 'past', month::text, ranks from rank_months_past
        order by 1, 2`.execute(wh.db);
      return rows.map((r) => `${r.t} ${r.month} ${JSON.stringify(r.ranks)}`);
    };
    await write(wh, ranks(5, 5), at('2025-03-30'));
    await write(wh, ranks(6, 6), at('2025-03-31'));
    // The first day of April: March's rows are copied to the past table, and the current
    // rows are rewritten in place (the same physical row) as April's.
    const before = await sql<{ ctid: string }>`
      select ctid::text from rank_months_current order by series_id`.execute(wh.db);
    await write(wh, ranks(7, null), at('2025-04-01'));
    const after = await sql<{ ctid: string }>`
      select ctid::text from rank_months_current order by series_id`.execute(wh.db);
    expect(after.rows.map((r) => r.ctid.split(',')[0])).toEqual(
      before.rows.map((r) => r.ctid.split(',')[0]),
    );
    const march = `[${Array(29).fill('null').join(',')},5,6]`;
    expect((await where()).sort()).toEqual(
      [
        'current 2025-04-01 [7]',
        'current 2025-04-01 [-1]',
        `past 2025-03-01 ${march}`,
        `past 2025-03-01 ${march}`,
      ].sort(),
    );
    // A run dated back into March writes the past row; one into April the current row.
    await write(wh, ranks(2, 2), at('2025-03-15'));
    await write(wh, ranks(8, 8), at('2025-04-03'));
    await write(wh, ranks(3, 3), at('2025-04-02'));
    const marchAgain = `[${Array(14).fill('null').join(',')},2,${Array(14).fill('null').join(',')},5,6]`;
    expect((await where()).sort()).toEqual(
      [
        'current 2025-04-01 [7,3,8]',
        'current 2025-04-01 [-1,3,8]',
        `past 2025-03-01 ${marchAgain}`,
        `past 2025-03-01 ${marchAgain}`,
      ].sort(),
    );
    // The view shows both, as one table did: the days of both months, each linked to the
    // observation before it across the month's end.
    const { rows } = await sql<{
      observed_on: string;
      rank: number | null;
      previous_rank: number | null;
    }>`
      select observed_on, rank, previous_rank from v_rank_daily where site = 'Google'
      order by observed_on`.execute(wh.db);
    expect(rows).toEqual([
      { observed_on: '2025-03-15', rank: 2, previous_rank: null },
      { observed_on: '2025-03-30', rank: 5, previous_rank: 2 },
      { observed_on: '2025-03-31', rank: 6, previous_rank: 5 },
      { observed_on: '2025-04-01', rank: 7, previous_rank: 6 },
      { observed_on: '2025-04-02', rank: 3, previous_rank: 7 },
      { observed_on: '2025-04-03', rank: 8, previous_rank: 3 },
    ]);
  });

  it('stores `-` (null) as NULL and a rank turning unranked as an update', async () => {
    await write(wh, ranks(3, 4), ctx(DAY1));
    await write(wh, ranks(null, 4), ctx(DAY1_LATER));
    const google = (await stored()).find((r) => r.site === 'Google');
    expect(google?.rank).toBeNull();
  });

  it('uses the UTC day of the observation', async () => {
    // 23:30 in New York on 28 Feb is 1 March in UTC.
    await write(wh, ranks(1, 1), ctx(new Date('2025-02-28T23:30:00-05:00')));
    expect((await stored())[0]?.observed_on).toBe('2025-03-01');
  });

  it('names each business, keyword and site once, with the keyword id where it resolves', async () => {
    await write(
      wh,
      snapshot({
        keywords: [keyword(41, 'dentist portland')],
        rankings: [
          rank('dentist portland', 'Google', 1),
          rank('dentist portland', 'Bing', 2),
          rank('emergency dentist', 'Google', null),
        ],
      }),
      ctx(DAY1),
    );
    await write(
      wh,
      snapshot({
        keywords: [keyword(41, 'dentist portland'), keyword(42, 'emergency dentist')],
        rankings: [rank('dentist portland', 'Google', 1), rank('emergency dentist', 'Google', 3)],
      }),
      ctx(DAY2),
    );
    const { rows } = await sql`select keyword, site, keyword_id from rank_series
      order by keyword, site`.execute(wh.db);
    expect(rows).toEqual([
      { keyword: 'dentist portland', site: 'Bing', keyword_id: 41 },
      { keyword: 'dentist portland', site: 'Google', keyword_id: 41 },
      { keyword: 'emergency dentist', site: 'Google', keyword_id: 42 },
    ]);
  });

  it('reads no history but the month row it rewrites on a night after the latest, however long the history', async () => {
    // 40 nights of history, through the writer.
    for (let n = 0; n < 40; n++) {
      await write(
        wh,
        ranks(1 + (n % 20), n % 5 === 0 ? null : 9),
        ctx(new Date(DAY1.getTime() + n * 86_400_000)),
      );
    }
    const night = new Date(DAY1.getTime() + 40 * 86_400_000);
    // This transaction's counters (index entries returned, heap rows fetched or scanned on
    // the two tables of rank_months), before and after the write: they may start with earlier transactions'
    // counts not yet flushed to the statistics, so the difference is what the write read.
    const readSoFar = async (trx: Transaction<Database>) => {
      const { rows } = await sql<{ n: number }>`select (
          pg_stat_get_xact_tuples_returned('rank_months_past'::regclass)
          + pg_stat_get_xact_tuples_fetched('rank_months_past'::regclass)
          + pg_stat_get_xact_tuples_returned('rank_months_pkey'::regclass)
          + pg_stat_get_xact_tuples_returned('rank_months_current'::regclass)
          + pg_stat_get_xact_tuples_fetched('rank_months_current'::regclass)
          + pg_stat_get_xact_tuples_returned('rank_months_current_pkey'::regclass))::int as n`.execute(
        trx,
      );
      return rows[0]?.n ?? 0;
    };
    const { write: read, control } = await wh.db.transaction().execute(async (trx) => {
      const before = await readSoFar(trx);
      await writeBusinessSnapshot(trx, ranks(2, 9), ctx(night));
      const after = await readSoFar(trx);
      // The counters do count: reading one series' month moves them.
      await sql`select count(*) from rank_history
        where series_id = (select min(series_id) from rank_series)
          and observed_on > date '2025-03-10'`.execute(trx);
      return { write: after - before, control: (await readSoFar(trx)) - after };
    });
    expect(control).toBeGreaterThan(0);
    // The month row of each of the two series it rewrites (the upsert's conflict), no other.
    expect(read).toBeLessThanOrEqual(2);
    const { rows } = await sql`select site, rank, observations_30d, compared_30d_on
      from v_rank_latest order by site`.execute(wh.db);
    expect(rows).toEqual([
      { site: 'Bing', rank: 9, observations_30d: 31, compared_30d_on: '2025-03-11' },
      { site: 'Google', rank: 2, observations_30d: 31, compared_30d_on: '2025-03-11' },
    ]);
  });
});
