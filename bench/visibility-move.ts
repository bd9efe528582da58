/**
 * `node bench/visibility-move.ts [--businesses 200] [--days 365]`: how long migration 0033
 * (visibility packed by month) takes to move a year of `visibility_days` rows, and its
 * `down` to move them back (docs/benchmarks.md, "Warehouse at a year").
 *
 * Builds the table at migration 0031 (9 sites per business, a row per business, site and
 * day), then times `up` and `down`, in a schema of its own (`bench_visibility_<pid>`),
 * dropped at the end. BENCH_DATABASE_URL: default, the local PostgreSQL.
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { migrateTo } from '../src/warehouse/driver/migrate.ts';

const { values } = parseArgs({
  options: {
    businesses: { type: 'string', default: '200' },
    days: { type: 'string', default: '365' },
  },
});
const BUSINESSES = Number(values.businesses);
const DAYS = Number(values.days);
const SITES = 9;
const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `bench_visibility_${process.pid}`;

const admin = await openWarehouse({ databaseUrl: url });
await sql`create schema ${sql.id(schema)}`.execute(admin.db);
const wh = await openWarehouse({ databaseUrl: url, searchPath: schema });
try {
  await migrateTo(wh.db, '0031_read_models_without_fk_checks');
  await sql`insert into visibility_days (business_id, day, site, keywords_tracked,
      keywords_ranked, position_sum, top3, top10, clicks_per_1000)
    select 100000 + b, date '2025-01-01' + d, 'Site' || s, 10, 8, 300, 2, 5, 900
    from generate_series(0, ${DAYS - 1}) d, generate_series(0, ${BUSINESSES - 1}) b,
      generate_series(1, ${SITES}) s
    order by d, b, s`.execute(wh.db);
  await sql`vacuum analyze visibility_days`.execute(wh.db);
  const rows = BUSINESSES * DAYS * SITES;
  const up = performance.now();
  await migrateTo(wh.db, '0033_visibility_months');
  const upSeconds = (performance.now() - up) / 1000;
  const down = performance.now();
  await migrateTo(wh.db, '0031_read_models_without_fk_checks');
  const downSeconds = (performance.now() - down) / 1000;
  process.stdout.write(
    `${BUSINESSES} businesses × ${SITES} sites × ${DAYS} days = ${rows} visibility_days rows: ` +
      `up ${upSeconds.toFixed(1)} s, down ${downSeconds.toFixed(1)} s\n`,
  );
} finally {
  await wh.close();
  await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
  await admin.close();
}
