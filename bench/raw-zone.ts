/**
 * `npm run bench:raw`: what the raw zone costs and what a replay gains (docs/operations.md,
 * "Benchmark: the raw zone"). In one process: a sandbox, a warehouse (PostgreSQL when
 * BENCH_DATABASE_URL is set, else an in-memory PGlite), then
 *
 * - a first night: the raw zone's bytes, against the warehouse tables' growth;
 * - the same night again (an unchanged night): its raw bytes, as a share of the first's
 *   (target ≤ 5 %);
 * - a month of nights with the sandbox's daily changes: the raw zone's growth against the
 *   tables' (target ≤ 25 %);
 * - a replay of all those nights into a fresh schema: its wall time per night against the
 *   live nights' (target ≥ 5× faster).
 *
 * Nothing asserts: it prints figures. `runRawZoneBench` is exported for bench/sync.ts.
 *
 *   npm run bench:raw                                   # 2 × 50 businesses, 30 nights
 *   npm run bench:raw -- --businesses 20 --nights 10    # quicker
 *   npm run bench:raw -- --latency 0                    # live nights without network delay
 */
import { sql } from 'kysely';
import { createApiClient } from '../src/api/client.ts';
import { silentLogger } from '../src/log.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { replay } from '../src/sync/replay.ts';
import { runSync } from '../src/sync/run.ts';
import { openWarehouse, type Warehouse } from '../src/warehouse/connection.ts';
import { migrateToLatest } from '../src/warehouse/migrate.ts';
import { CONTRACT_TABLES } from '../src/warehouse/tables.ts';

export interface RawZoneFigures {
  /** The sandbox's delay per answer in the live nights. */
  latencyMs: number;
  businesses: number;
  nights: number;
  firstNight: { rawBytes: number; tableBytes: number };
  unchangedNight: { rawBytes: number; tableBytes: number; shareOfFirst: number };
  month: { rawBytes: number; tableBytes: number; share: number };
  /** An unchanged night's `raw_reads` rows: how many, and what one costs, column by column. */
  readRow: {
    reads: number;
    businesses: number;
    rowBytes: number;
    paramsBytes: number;
    bodyHashBytes: number;
    requestBytes: number;
    indexBytesPerRead: number;
  };
  /** The same three, counted as rows' bytes (no page rounding, no indexes). */
  rows: { firstRaw: number; unchangedRaw: number; monthRaw: number; monthTables: number };
  replay: { liveSecondsPerNight: number; replaySecondsPerNight: number; speedup: number };
}

const RAW_TABLES = ['raw_bodies', 'raw_reads'] as const;

/**
 * Each sandbox answer's delay, ms: the network a live night waits on and a replay does
 * not. The same as `npm run bench`'s sandbox (bench/sync.ts).
 */
const LATENCY_MS = 20;

async function relationBytes(warehouse: Warehouse, tables: readonly string[]): Promise<number> {
  let total = 0;
  for (const table of tables) {
    // Only these tables: a bare VACUUM would walk every schema of a shared database.
    await sql`vacuum ${sql.table(table)}`.execute(warehouse.db);
    const { rows } = await sql<{ n: number }>`
      select pg_total_relation_size(${table}::regclass)::bigint as n`.execute(warehouse.db);
    total += Number(rows[0]?.n ?? 0);
  }
  return total;
}

/** Logical bytes: the rows' own size (`pg_column_size` of each row), no pages, no indexes. */
async function rowBytes(warehouse: Warehouse, tables: readonly string[]): Promise<number> {
  let total = 0;
  for (const table of tables) {
    const { rows } = await sql<{ n: number }>`
      select coalesce(sum(pg_column_size(t.*)), 0)::bigint as n from ${sql.table(table)} t`.execute(
      warehouse.db,
    );
    total += Number(rows[0]?.n ?? 0);
  }
  return total;
}

const WAREHOUSE_TABLES = CONTRACT_TABLES.filter((t) => t !== 'sync_runs');

interface Sizes {
  /** Counted as stored: pages, indexes and TOAST, after a VACUUM of each table. */
  raw: number;
  tables: number;
  /** Counted as rows: `pg_column_size` of each row (compressed bodies as stored). */
  rawRows: number;
  tableRows: number;
}

/** Raw zone bytes and warehouse table bytes now. */
async function sizes(warehouse: Warehouse): Promise<Sizes> {
  return {
    raw: await relationBytes(warehouse, RAW_TABLES),
    tables: await relationBytes(warehouse, WAREHOUSE_TABLES),
    rawRows: await rowBytes(warehouse, RAW_TABLES),
    tableRows: await rowBytes(warehouse, WAREHOUSE_TABLES),
  };
}

/** The latest run's reads (the unchanged night, when called right after it). */
async function unchangedReadRow(warehouse: Warehouse): Promise<RawZoneFigures['readRow']> {
  const { rows } = await sql<{
    reads: number;
    businesses: number;
    row_bytes: number;
    params_bytes: number;
    hash_bytes: number;
    request_bytes: number;
  }>`
    select count(*)::int as reads, count(distinct business_id)::int as businesses,
           avg(pg_column_size(r.*))::float8 as row_bytes,
           avg(pg_column_size(r.params))::float8 as params_bytes,
           avg(pg_column_size(r.body_hash))::float8 as hash_bytes,
           avg(pg_column_size(r.request))::float8 as request_bytes
      from raw_reads r
     where r.run_id = (select run_id from sync_runs order by started_at desc limit 1)`.execute(
    warehouse.db,
  );
  const { rows: index } = await sql<{ bytes: number; reads: number }>`
    select (select sum(pg_relation_size(i.indexrelid))::float8 from pg_index i
             where i.indrelid = 'raw_reads'::regclass) as bytes,
           (select count(*)::float8 from raw_reads) as reads`.execute(warehouse.db);
  const r = rows[0]!;
  return {
    reads: r.reads,
    businesses: r.businesses,
    rowBytes: r.row_bytes,
    paramsBytes: r.params_bytes,
    bodyHashBytes: r.hash_bytes,
    requestBytes: r.request_bytes,
    indexBytesPerRead: (index[0]?.bytes ?? 0) / Math.max(1, index[0]?.reads ?? 1),
  };
}

export async function runRawZoneBench(
  options: {
    businessesPerAccount?: number;
    nights?: number;
    databaseUrl?: string;
    latencyMs?: number;
  } = {},
): Promise<RawZoneFigures> {
  const businessesPerAccount = options.businessesPerAccount ?? 50;
  const nights = options.nights ?? 30;
  const latencyMs = options.latencyMs ?? LATENCY_MS;
  const sandbox = await startSandbox({
    seed: 42,
    accounts: 2,
    businessesPerAccount,
    startDate: '2026-01-01',
    port: 0,
    faults: { latencyMs },
  });
  const schema = `bench_raw_${process.pid}`;
  let warehouse: Warehouse;
  if (options.databaseUrl) {
    const admin = await openWarehouse({ databaseUrl: options.databaseUrl });
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
    await admin.close();
    warehouse = await openWarehouse({ databaseUrl: options.databaseUrl, searchPath: schema });
  } else {
    warehouse = await openWarehouse({ memory: true });
  }
  const api = createApiClient({ concurrency: 16, accountConcurrency: 8 });
  const night = async () => {
    const at = new Date(`${sandbox.today()}T04:00:00Z`);
    const started = performance.now();
    await runSync({
      warehouse,
      api,
      credentials: sandbox.credentials,
      logger: silentLogger(),
      trigger: 'bench',
      now: () => at,
    });
    return (performance.now() - started) / 1000;
  };
  try {
    await migrateToLatest(warehouse.db);
    const empty = await sizes(warehouse);
    let liveSeconds = await night();
    const first = await sizes(warehouse);
    liveSeconds += await night();
    const unchanged = await sizes(warehouse);
    const readRow = await unchangedReadRow(warehouse);
    for (let n = 1; n < nights; n++) {
      sandbox.advanceDays(1);
      liveSeconds += await night();
    }
    const month = await sizes(warehouse);
    const replayed = await replay({
      warehouse,
      ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
      into: `${schema}_replay`,
      logger: silentLogger(),
    });
    const liveNights = nights + 1;
    const firstRaw = first.raw - empty.raw;
    const unchangedRaw = unchanged.raw - first.raw;
    const liveSecondsPerNight = liveSeconds / liveNights;
    const replaySecondsPerNight = replayed.seconds / replayed.runs;
    return {
      latencyMs,
      businesses: 2 * businessesPerAccount,
      nights: liveNights,
      firstNight: { rawBytes: firstRaw, tableBytes: first.tables - empty.tables },
      unchangedNight: {
        rawBytes: unchangedRaw,
        tableBytes: unchanged.tables - first.tables,
        shareOfFirst: unchangedRaw / firstRaw,
      },
      month: {
        rawBytes: month.raw - empty.raw,
        tableBytes: month.tables - empty.tables,
        share: (month.raw - empty.raw) / (month.tables - empty.tables),
      },
      readRow,
      rows: {
        firstRaw: first.rawRows - empty.rawRows,
        unchangedRaw: unchanged.rawRows - first.rawRows,
        monthRaw: month.rawRows - empty.rawRows,
        monthTables: month.tableRows - empty.tableRows,
      },
      replay: {
        liveSecondsPerNight,
        replaySecondsPerNight,
        speedup: liveSecondsPerNight / replaySecondsPerNight,
      },
    };
  } finally {
    await api.close();
    if (options.databaseUrl) {
      await sql`drop schema if exists ${sql.id(`${schema}_replay`)} cascade`.execute(warehouse.db);
      await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(warehouse.db);
    }
    await warehouse.close();
    await sandbox.close();
  }
}

export function renderRawZoneFigures(f: RawZoneFigures): string {
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  return [
    `Raw zone (${f.businesses} businesses, ${f.nights} nights)`,
    `  first night: raw ${kib(f.firstNight.rawBytes)}, tables grew ${kib(f.firstNight.tableBytes)} (raw = ${pct(f.firstNight.rawBytes / f.firstNight.tableBytes)})`,
    `  unchanged night: raw ${kib(f.unchangedNight.rawBytes)} = ${pct(f.unchangedNight.shareOfFirst)} of the first (target ≤ 5 %); tables grew ${kib(f.unchangedNight.tableBytes)}`,
    `  the month: raw ${kib(f.month.rawBytes)}, tables grew ${kib(f.month.tableBytes)}: ${pct(f.month.share)} (target ≤ 25 %)`,
    `  unchanged night's reads: ${f.readRow.reads} for ${f.readRow.businesses} businesses; a read row ${f.readRow.rowBytes.toFixed(0)} B (params ${f.readRow.paramsBytes.toFixed(0)}, body_hash ${f.readRow.bodyHashBytes.toFixed(0)}, request ${f.readRow.requestBytes.toFixed(0)}) + ${f.readRow.indexBytesPerRead.toFixed(0)} B of indexes`,
    `  as rows' bytes (pg_column_size, no pages or indexes): first night raw ${kib(f.rows.firstRaw)}, unchanged ${kib(f.rows.unchangedRaw)} = ${pct(f.rows.unchangedRaw / f.rows.firstRaw)}, the month raw ${kib(f.rows.monthRaw)} of tables' ${kib(f.rows.monthTables)}: ${pct(f.rows.monthRaw / f.rows.monthTables)}`,
    `  replay: ${f.replay.replaySecondsPerNight.toFixed(2)} s a night against ${f.replay.liveSecondsPerNight.toFixed(2)} s live (sandbox latency ${f.latencyMs} ms): ${f.replay.speedup.toFixed(1)}× (target ≥ 5×)`,
    '',
  ].join('\n');
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const businesses = value('--businesses');
  const nights = value('--nights');
  const latencyMs = value('--latency');
  const databaseUrl = process.env['BENCH_DATABASE_URL']?.trim() || undefined;
  const figures = await runRawZoneBench({
    ...(businesses ? { businessesPerAccount: businesses } : {}),
    ...(nights ? { nights } : {}),
    ...(latencyMs !== undefined ? { latencyMs } : {}),
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  process.stdout.write(renderRawZoneFigures(figures));
}
