/**
 * Migration 0040 (docs/warehouse.md, "Rank history"): `rank_months` becomes a view over
 * `rank_months_past` and `rank_months_current`, and what an operator built on the table
 * stays: the rows every view over it returns, a view of their own, a grant and a comment,
 * both ways. The month rows are written straight into 0039's table (the writer of this
 * release writes the two tables), two series over three months.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import {
  createTestWarehouse,
  relationKind,
  type TestWarehouse,
  testBackends,
} from '../../helpers/database.ts';

const BEFORE = '0039_rank_daily_collected_test';

async function rows(db: Kysely<unknown>, query: string): Promise<unknown[]> {
  const { rows } = await sql.raw(query).execute(db);
  return rows;
}

describe.each(testBackends)('migration 0040, the current month apart (%s)', (backend) => {
  let wh: TestWarehouse | undefined;
  afterEach(async () => {
    await wh?.close();
    wh = undefined;
  });

  it("moves each series' latest month to its own table and keeps every view, grant and comment, both ways", async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    const db = wh.db as unknown as Kysely<unknown>;
    await migrateTo(wh.db, BEFORE);
    await sql`insert into rank_series (business_id, keyword, site)
      values (7, 'dentist', 'Google'), (7, 'dentist', 'Bing')`.execute(db);
    // Series 1 over October to December, series 2 over October and November only: its
    // latest month is November, which stays its current row.
    await sql`insert into rank_months (series_id, month, ranks, previous_on, previous_rank)
      select s.series_id, m.month, array[3, null, -1, 4]::smallint[],
        case when m.month > date '2026-10-01' then m.month - 28 end,
        case when m.month > date '2026-10-01' then 4 end
      from rank_series s
      cross join (values (date '2026-10-01'), (date '2026-11-01'), (date '2026-12-01')) m(month)
      where s.site = 'Google' or m.month < date '2026-12-01'`.execute(db);
    await sql`insert into rank_days (observed_on, month, day)
      select g::date, date_trunc('month', g)::date, extract(day from g)::smallint
      from generate_series(date '2026-10-01', date '2026-12-04', interval '1 day') g
      where extract(day from g) <= 4`.execute(db);
    const role = `ls_bi_${randomUUID().slice(0, 8)}`;
    await sql`create role ${sql.id(role)}`.execute(db);
    try {
      await sql`grant select on rank_months to ${sql.id(role)}`.execute(db);
      await sql`comment on table rank_months is 'ranks, for the dashboards'`.execute(db);
      await sql`create view my_months as
        select series_id, month, cardinality(ranks) as days from rank_months`.execute(db);
      const outputs = async () => ({
        months: await rows(db, 'select * from rank_months order by series_id, month'),
        mine: await rows(db, 'select * from my_months order by series_id, month'),
        history: await rows(db, 'select * from rank_history order by series_id, observed_on'),
        daily: await rows(
          db,
          'select * from v_rank_daily order by business_id, keyword, site, observed_on',
        ),
        observations: await rows(
          db,
          'select * from rank_observations order by business_id, keyword, site, observed_on',
        ),
        kept: await rows(
          db,
          `select has_table_privilege('${role}', 'rank_months', 'SELECT') as granted,
             obj_description('rank_months'::regclass, 'pg_class') as comment`,
        ),
      });
      const before = await outputs();
      expect(before.months).toHaveLength(5);
      expect(before.daily.length).toBeGreaterThan(0);
      expect(before.kept).toEqual([{ granted: true, comment: 'ranks, for the dashboards' }]);

      // As `listings-sync migrate` runs it: the migrator keeps the grant and the comment.
      await migrateToLatest(wh.db);
      expect(await relationKind(db, 'rank_months')).toBe('v');
      expect(await outputs()).toEqual(before);
      expect(
        await rows(db, 'select series_id, month::text from rank_months_current order by 1'),
      ).toEqual([
        { series_id: 1, month: '2026-12-01' },
        { series_id: 2, month: '2026-11-01' },
      ]);
      expect(
        await rows(db, 'select series_id, month::text from rank_months_past order by 1, 2'),
      ).toEqual([
        { series_id: 1, month: '2026-10-01' },
        { series_id: 1, month: '2026-11-01' },
        { series_id: 2, month: '2026-10-01' },
      ]);
      // A deleted series takes its rows from both tables (the trigger 0040 redefines).
      await sql`delete from rank_series where series_id = 2`.execute(db);
      expect(await rows(db, 'select distinct series_id from rank_months')).toEqual([
        { series_id: 1 },
      ]);
      await sql`insert into rank_series (series_id, business_id, keyword, site)
        overriding system value values (2, 7, 'dentist', 'Bing')`.execute(db);
      await sql`insert into rank_months_past select 2, month, array[3, null, -1, 4]::smallint[],
          case when month > date '2026-10-01' then month - 28 end,
          case when month > date '2026-10-01' then 4::smallint end
        from (values (date '2026-10-01')) m(month)`.execute(db);
      await sql`insert into rank_months_current values
        (2, date '2026-11-01', array[3, null, -1, 4]::smallint[], date '2026-10-04', 4)`.execute(
        db,
      );
      expect(await outputs()).toEqual(before);

      await migrateTo(wh.db, BEFORE);
      expect(await relationKind(db, 'rank_months')).toBe('r');
      expect(await relationKind(db, 'rank_months_current')).toBeUndefined();
      expect(await outputs()).toEqual(before);
    } finally {
      await sql`drop view if exists my_months`.execute(db);
      await sql`drop owned by ${sql.id(role)}`.execute(db);
      await sql`drop role ${sql.id(role)}`.execute(db);
    }
  });

  it("refuses, naming it and the way round, a view of an operator's own that cannot stand over the view", async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    const db = wh.db as unknown as Kysely<unknown>;
    await migrateTo(wh.db, BEFORE);
    // Its group by leans on the table's primary key: over a view it is not enough.
    await sql`create view latest_ranks as
      select series_id, month, ranks from rank_months group by series_id, month`.execute(db);
    const error = await migrateToLatest(wh.db).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(
      'The view latest_ranks reads rank_months, which this migration makes a view over two tables',
    );
    expect((error as Error).message).toContain(
      'Nothing was changed: drop latest_ranks, run the migration, and create latest_ranks again over rank_months',
    );
    expect(await relationKind(db, 'rank_months')).toBe('r');
    expect(await relationKind(db, 'rank_months_current')).toBeUndefined();
    expect(await relationKind(db, 'latest_ranks')).toBe('v');
    // The way round it names.
    await sql`drop view latest_ranks`.execute(db);
    await migrateToLatest(wh.db);
    await sql`create view latest_ranks as
      select series_id, month, ranks from rank_months group by series_id, month, ranks`.execute(db);
    expect(await relationKind(db, 'rank_months')).toBe('v');
  });
});
