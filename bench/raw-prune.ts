/**
 * `node bench/raw-prune.ts [nights] [businesses]`: what retention's two statements take on a
 * large raw zone (docs/benchmarks.md, "Retention"). In a schema of its own
 * (`bench_raw_prune_<pid>`, dropped at the end) on BENCH_DATABASE_URL (default the local
 * PostgreSQL), a synthetic raw zone as migration 0035 keeps it: one account, `nights`
 * nights (64) of `businesses` businesses (2,250), each business's 6 reads of a night in one
 * set, its rankings body new every night; then `RAW_RETENTION_DAYS` of nights − 2, so the
 * oldest night ages out. Prints the reads, and each statement's wall time and counts.
 * Nothing asserts.
 */
import { sql } from 'kysely';
import { deleteUnreadBodies, pruneRawReads } from '../src/raw/prune.ts';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../src/warehouse/driver/migrate.ts';

const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const nights = Number(process.argv[2] ?? 64);
const businesses = Number(process.argv[3] ?? 2250);
const schema = `bench_raw_prune_${process.pid}`;

const admin = await openWarehouse({ databaseUrl: url });
await sql`create schema ${sql.id(schema)}`.execute(admin.db);
await admin.close();
const wh = await openWarehouse({ databaseUrl: url, searchPath: schema });
try {
  await migrateToLatest(wh.db);
  // Body k of business b on night n: the rankings (k = 4) new every night, the rest as on
  // night 0; the account's list new every night.
  await sql`
    insert into raw_bodies (body_hash, encoding, size, bytes, base_hash)
    select sha256(convert_to(n || ' ' || b || ' ' || k, 'UTF8')), 'br', 10, '\\x00'::bytea, null::bytea
      from generate_series(0, ${nights} - 1) n, generate_series(1, ${businesses}) b,
           generate_series(0, 5) k
     where k = 4 or n = 0
    union all
    select sha256(convert_to('list ' || n, 'UTF8')), 'br', 10, '\\x00'::bytea, null::bytea
      from generate_series(0, ${nights} - 1) n`.execute(wh.db);
  await sql`
    insert into raw_read_sets (run_id, account_name, business_id, observed_at, reads, body_hashes)
    select md5('run' || n)::uuid, 'east', null,
           timestamptz '2026-01-01 03:00Z' + make_interval(days => n), '0 /businesses.json',
           sha256(convert_to('list ' || n, 'UTF8'))
      from generate_series(0, ${nights} - 1) n
    union all
    select md5('run' || n)::uuid, 'east', b,
           timestamptz '2026-01-01 03:00:01Z' + make_interval(days => n, secs => b / 100.0),
           '2 ~.json?type=all' || E'\\n3 ~/listings.json' || E'\\n4 ~/reviews.json?category=review'
             || E'\\n4 ~/reviews.json?category=social' || E'\\n6 ~/rankings.json'
             || E'\\n7 ~/keywords.json',
           (select string_agg(sha256(convert_to((case when k = 4 then n else 0 end) || ' ' || b
                                                || ' ' || k, 'UTF8')), ''::bytea order by k)
              from generate_series(0, 5) k)
      from generate_series(0, ${nights} - 1) n, generate_series(1, ${businesses}) b
     order by 4`.execute(wh.db);
  await sql`vacuum analyze raw_read_sets`.execute(wh.db);
  await sql`vacuum analyze raw_bodies`.execute(wh.db);
  const { rows } = await sql<{ reads: number; bodies: number }>`
    select (select count(*)::int from raw_reads) as reads,
           (select count(*)::int from raw_bodies) as bodies`.execute(wh.db);
  console.log(`raw zone: ${rows[0]?.reads} reads, ${rows[0]?.bodies} bodies, ${nights} nights`);
  let started = performance.now();
  const reads = await pruneRawReads(wh.db, nights - 2);
  console.log(
    `reads: ${reads.deleted} deleted, ${reads.agedOut} aged out, in ${((performance.now() - started) / 1000).toFixed(2)} s`,
  );
  started = performance.now();
  const bodies = await deleteUnreadBodies(wh.db);
  console.log(
    `bodies: ${bodies} deleted in ${((performance.now() - started) / 1000).toFixed(2)} s`,
  );
} finally {
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(wh.db);
  await wh.close();
}
