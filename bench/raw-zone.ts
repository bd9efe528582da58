/**
 * `npm run bench:raw`: what the raw zone costs and what a replay gains (docs/benchmarks.md,
 * "The raw zone and replay"). In one process: a sandbox, a warehouse (PostgreSQL when
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
 * Then, at scale (`runReplayScaleBench`), for each size (1,000 and 10,000 businesses by
 * default): a sandbox process with one account of that many businesses (as bench/sync.ts
 * starts it, answers after 20 ms), every answer read once unmeasured (the sandbox builds an
 * answer on its first read), one live night synced by bench/run-sync.ts in a process of
 * its own, then its replay by bench/run-replay.ts in another, into a fresh schema; both
 * under the production node flags (the process entry's, bench/node-flags.ts; `BENCH_NODE_FLAGS` replaces
 * them). Per size: each one's wall seconds and peak RSS, replay wall ÷ live wall, and
 * whether the replay's peak RSS stays within the sync's (the bound of the issue "Replay runs
 * out of memory").
 *
 * Nothing asserts: it prints figures. `runRawZoneBench` is exported for bench/sync.ts.
 *
 *   npm run bench:raw                                   # 2 × 50 businesses, 30 nights; then 1,000 and 10,000
 *   npm run bench:raw -- --businesses 20 --nights 10    # quicker
 *   npm run bench:raw -- --latency 0                    # live nights without network delay
 *   npm run bench:raw -- --scale-only                   # the scale part alone
 *   npm run bench:raw -- --scale 1000                   # the scale part at these sizes only
 *   npm run bench:raw -- --no-scale                     # the month's figures alone
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { createApiClient } from '../src/api/client.ts';
import { silentLogger } from '../src/log.ts';
import { replay } from '../src/replay/replay.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { runSync } from '../src/sync/run.ts';
import { openWarehouse, type Warehouse } from '../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../src/warehouse/driver/migrate.ts';
import { CONTRACT_TABLES } from '../test/helpers/contract-tables.ts';
import { productionNodeFlags } from './node-flags.ts';

export interface RawZoneFigures {
  /** The sandbox's delay per answer in the live nights. */
  latencyMs: number;
  businesses: number;
  nights: number;
  firstNight: { rawBytes: number; tableBytes: number };
  unchangedNight: { rawBytes: number; tableBytes: number; shareOfFirst: number };
  month: { rawBytes: number; tableBytes: number; share: number };
  /** An unchanged night's reads: how many, and what one costs, column by column, per read. */
  readRow: {
    reads: number;
    /** `raw_read_sets` rows the reads are kept in (migration 0035). */
    sets: number;
    businesses: number;
    rowBytes: number;
    bodyHashBytes: number;
    lineBytes: number;
    indexBytesPerRead: number;
  };
  /** The raw zone at the month's end, relation by relation (heap with TOAST, each index). */
  relations: { name: string; bytes: number }[];
  /** The month's bodies: kept whole, and kept as deltas against a base (migration 0032). */
  bodies: { whole: number; wholeBytes: number; deltas: number; deltaBytes: number };
  /** The same three, counted as rows' bytes (no page rounding, no indexes). */
  rows: { firstRaw: number; unchangedRaw: number; monthRaw: number; monthTables: number };
  replay: { liveSecondsPerNight: number; replaySecondsPerNight: number; speedup: number };
}

/** The raw zone's tables (`raw_reads` is a view of `raw_read_sets` since migration 0035). */
const RAW_TABLES = ['raw_bodies', 'raw_read_sets'] as const;

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

/** Each raw zone table's heap (with its TOAST) and each of its indexes, largest first. */
async function rawRelations(warehouse: Warehouse): Promise<RawZoneFigures['relations']> {
  const { rows } = await sql<{ name: string; bytes: number }>`
    select c.relname as name, pg_table_size(c.oid)::float8 as bytes
      from pg_class c
     where c.oid = any (array[${sql.join(RAW_TABLES.map((t) => sql`${t}::regclass`))}])
    union all
    select i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)::float8
      from pg_index i
     where i.indrelid = any (array[${sql.join(RAW_TABLES.map((t) => sql`${t}::regclass`))}])
     order by 2 desc`.execute(warehouse.db);
  return rows;
}

/** The bodies kept whole and those kept as deltas, how many and their stored bytes. */
async function bodyKinds(warehouse: Warehouse): Promise<RawZoneFigures['bodies']> {
  const { rows } = await sql<{ delta: boolean; n: number; bytes: number }>`
    select base_hash is not null as delta, count(*)::int as n,
           sum(octet_length(bytes))::float8 as bytes
      from raw_bodies group by 1`.execute(warehouse.db);
  const whole = rows.find((r) => !r.delta);
  const deltas = rows.find((r) => r.delta);
  return {
    whole: whole?.n ?? 0,
    wholeBytes: whole?.bytes ?? 0,
    deltas: deltas?.n ?? 0,
    deltaBytes: deltas?.bytes ?? 0,
  };
}

/**
 * The latest run's reads (the unchanged night, when called right after it), as stored: one
 * `raw_read_sets` row per business and night (migration 0035), its bytes shared by its reads.
 */
async function unchangedReadRow(warehouse: Warehouse): Promise<RawZoneFigures['readRow']> {
  const { rows } = await sql<{
    reads: number;
    sets: number;
    businesses: number;
    row_bytes: number;
    hash_bytes: number;
    line_bytes: number;
  }>`
    select sum(octet_length(s.body_hashes) / 32)::int as reads, count(*)::int as sets,
           count(distinct business_id)::int as businesses,
           sum(pg_column_size(s.*))::float8 as row_bytes,
           sum(octet_length(s.body_hashes))::float8 as hash_bytes,
           sum(pg_column_size(s.reads))::float8 as line_bytes
      from raw_read_sets s
     where s.run_id = (select run_id from sync_runs order by started_at desc limit 1)`.execute(
    warehouse.db,
  );
  const { rows: index } = await sql<{ bytes: number; reads: number }>`
    select (select sum(pg_relation_size(i.indexrelid))::float8 from pg_index i
             where i.indrelid = 'raw_read_sets'::regclass) as bytes,
           (select sum(octet_length(body_hashes) / 32)::float8 from raw_read_sets) as reads`.execute(
    warehouse.db,
  );
  const r = rows[0]!;
  const reads = Math.max(1, r.reads);
  return {
    reads: r.reads,
    sets: r.sets,
    businesses: r.businesses,
    rowBytes: r.row_bytes / reads,
    bodyHashBytes: r.hash_bytes / reads,
    lineBytes: r.line_bytes / reads,
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
    const relations = await rawRelations(warehouse);
    const bodies = await bodyKinds(warehouse);
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
      bodies,
      month: {
        rawBytes: month.raw - empty.raw,
        tableBytes: month.tables - empty.tables,
        share: (month.raw - empty.raw) / (month.tables - empty.tables),
      },
      readRow,
      relations,
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
    `  the raw zone at the month's end: ${f.relations.map((r) => `${r.name} ${kib(r.bytes)}`).join(', ')}`,
    `  the month's bodies: ${f.bodies.whole} kept whole, ${kib(f.bodies.wholeBytes)}; ${f.bodies.deltas} kept as deltas, ${kib(f.bodies.deltaBytes)}`,
    `  unchanged night's reads: ${f.readRow.reads} for ${f.readRow.businesses} businesses in ${f.readRow.sets} rows; a read ${f.readRow.rowBytes.toFixed(0)} B of row (body hash ${f.readRow.bodyHashBytes.toFixed(0)}, its line ${f.readRow.lineBytes.toFixed(0)}) + ${f.readRow.indexBytesPerRead.toFixed(0)} B of indexes`,
    `  as rows' bytes (pg_column_size, no pages or indexes): first night raw ${kib(f.rows.firstRaw)}, unchanged ${kib(f.rows.unchangedRaw)} = ${pct(f.rows.unchangedRaw / f.rows.firstRaw)}, the month raw ${kib(f.rows.monthRaw)} of tables' ${kib(f.rows.monthTables)}: ${pct(f.rows.monthRaw / f.rows.monthTables)}`,
    `  replay: ${f.replay.replaySecondsPerNight.toFixed(2)} s a night against ${f.replay.liveSecondsPerNight.toFixed(2)} s live (sandbox latency ${f.latencyMs} ms): ${f.replay.speedup.toFixed(1)}× (target ≥ 5×)`,
    '',
  ].join('\n');
}

const ROOT = join(import.meta.dirname, '..');
/** The scale part's sizes: businesses of the one account. */
const SCALE_SIZES = [1000, 10_000];
/** As bench/sync.ts: the API client's requests in flight, overall and per account. */
const CONCURRENCY = 16;
const ACCOUNT_CONCURRENCY = 8;
/** The V8 flags of both children: production's, or `BENCH_NODE_FLAGS` (as bench/sync.ts). */
const CHILD_NODE_FLAGS =
  process.env['BENCH_NODE_FLAGS']?.split(/\s+/).filter(Boolean) ?? productionNodeFlags();

/** What one child process (a sync or a replay) measured of itself. */
export interface ChildFigures {
  /** False when the process failed (a heap out of memory, say): then only `peakRssMb` is known. */
  ok: boolean;
  /** How it failed: its exit code or signal and the last line of its stderr. */
  failure?: string;
  wallSeconds: number;
  cpuSeconds: number;
  /**
   * The process's peak resident set: its own `maxRSS` at exit; of a process that failed,
   * the highest VmHWM read from /proc while it ran (polled every 100 ms: a lower bound).
   */
  peakRssMb: number;
  out: Record<string, unknown>;
}

export interface ReplayScaleFigures {
  businesses: number;
  latencyMs: number;
  nodeFlags: string[];
  warehouse: 'postgres' | 'pglite';
  live: ChildFigures & { requests: number };
  replay: ChildFigures & { runs: number; reads: number };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(),
      );
    });
  });
}

/** The sandbox in a process of its own (src/cli/main.ts sandbox), as bench/sync.ts starts it. */
async function startSandboxProcess(
  businesses: number,
  latencyMs: number,
  dir: string,
): Promise<{ stop: () => void; credentialsFile: string }> {
  const port = await freePort();
  const credentialsFile = join(dir, `credentials-${businesses}.json`);
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'src/cli/main.ts'),
      'sandbox',
      '--port',
      String(port),
      '--seed',
      '42',
      '--accounts',
      '1',
      '--businesses',
      String(businesses),
      '--latency',
      String(latencyMs),
      '--credentials-out',
      credentialsFile,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'warn' },
    },
  );
  const stop = () => {
    child.kill('SIGTERM');
  };
  // Up to two minutes: it builds its world first, slowly on a loaded machine.
  for (let i = 0; i < 2400 && !existsSync(credentialsFile) && child.exitCode === null; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 200));
  if (!existsSync(credentialsFile)) {
    stop();
    throw new Error('the sandbox did not start');
  }
  return { stop, credentialsFile };
}

/** VmHWM of a running process, MB; undefined once it has gone. */
function highWaterMb(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `script` in a process of its own under `nodeFlags`: its last stdout line (JSON), or, when
 * it fails, how (its stderr passes through to this process's).
 */
async function runChild(script: string, nodeFlags: string[], args: object): Promise<ChildFigures> {
  const child = spawn(process.execPath, [...nodeFlags, join(ROOT, script), JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderrTail = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    process.stderr.write(chunk);
    stderrTail = (stderrTail + chunk).slice(-4000);
  });
  let polledMb = 0;
  const poll = setInterval(() => {
    const mb = child.pid === undefined ? undefined : highWaterMb(child.pid);
    if (mb !== undefined) polledMb = Math.max(polledMb, mb);
  }, 100);
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ code, signal }));
    },
  );
  clearInterval(poll);
  if (exit.code === 0) {
    const out = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    return {
      ok: true,
      wallSeconds: Number(out['wallSeconds']),
      cpuSeconds: Number(out['cpuSeconds']),
      peakRssMb: Number(out['peakRssMb']),
      out,
    };
  }
  const lastLine =
    stderrTail
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .find((line) => /out of memory|Error/i.test(line)) ??
    stderrTail.trim().split('\n').pop() ??
    '';
  return {
    ok: false,
    failure: `${script} exited with ${exit.code ?? exit.signal}: ${lastLine}`,
    wallSeconds: Number.NaN,
    cpuSeconds: Number.NaN,
    peakRssMb: polledMb,
    out: {},
  };
}

async function withClient<T>(url: string, f: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}

/**
 * One size of the scale part: a sandbox of one account of `businesses`, its answers read
 * once unmeasured, one live night, its replay; the warehouse in schemas of its own on
 * PostgreSQL (dropped after), or in a PGlite data directory under `dir`.
 */
async function scaleSize(
  businesses: number,
  latencyMs: number,
  dir: string,
  databaseUrl: string | undefined,
): Promise<ReplayScaleFigures> {
  const stamp = `${businesses}_${process.pid}`;
  const live = `bench_rawscale_${stamp}`;
  const into = `${live}_replay`;
  const where = databaseUrl
    ? { databaseUrl, searchPath: live }
    : { pgliteDataDir: join(dir, `pglite-${businesses}`) };
  const sandbox = await startSandboxProcess(businesses, latencyMs, dir);
  try {
    if (databaseUrl) await withClient(databaseUrl, (c) => c.query(`create schema ${live}`));
    const common = {
      credentialsFile: sandbox.credentialsFile,
      concurrency: CONCURRENCY,
      accountConcurrency: ACCOUNT_CONCURRENCY,
    };
    // The sandbox builds each answer on its first read and serves it from its cache after:
    // every read once first, unmeasured, so that the live night does not pay for the build.
    // On PostgreSQL the plain loader's reads alone (as bench/sync.ts); it needs PostgreSQL
    // even then, so on PGlite an unmeasured sync into a data directory of its own.
    process.stderr.write(`bench:raw: ${businesses} businesses, warming the sandbox …\n`);
    const warm = databaseUrl
      ? await runChild('bench/plain-loader.ts', [], {
          ...common,
          databaseUrl,
          searchPath: live,
          readsOnly: true,
        })
      : await runChild('bench/run-sync.ts', [], {
          ...common,
          pgliteDataDir: join(dir, `pglite-warm-${businesses}`),
        });
    if (!warm.ok) throw new Error(`the warming pass failed: ${warm.failure}`);
    process.stderr.write(
      `bench:raw: ${businesses} businesses, live night (${CHILD_NODE_FLAGS.join(' ')}) …\n`,
    );
    const synced = await runChild('bench/run-sync.ts', CHILD_NODE_FLAGS, { ...common, ...where });
    if (!synced.ok) throw new Error(`the live night failed: ${synced.failure}`);
    if (synced.out['status'] !== 'succeeded') {
      process.stderr.write(`bench:raw: the live night ended ${String(synced.out['status'])}\n`);
    }
    process.stderr.write(`bench:raw: ${businesses} businesses, replay into ${into} …\n`);
    const replayed = await runChild('bench/run-replay.ts', CHILD_NODE_FLAGS, {
      ...where,
      into,
      sampleMemoryMs: 250,
    });
    const stats = synced.out['stats'] as { requests?: number } | undefined;
    return {
      businesses,
      latencyMs,
      nodeFlags: CHILD_NODE_FLAGS,
      warehouse: databaseUrl ? 'postgres' : 'pglite',
      live: { ...synced, requests: stats?.requests ?? 0 },
      replay: {
        ...replayed,
        runs: Number(replayed.out['runs'] ?? 0),
        reads: Number(replayed.out['reads'] ?? 0),
      },
    };
  } finally {
    sandbox.stop();
    if (databaseUrl) {
      await withClient(databaseUrl, async (c) => {
        await c.query(`drop schema if exists ${into} cascade`);
        await c.query(`drop schema if exists ${live} cascade`);
      });
    }
  }
}

/**
 * The scale part: for each size, a live night and its replay, each in a process of its own
 * under the production flags. `onSize` gets each size's figures as soon as they are known.
 */
export async function runReplayScaleBench(
  options: {
    sizes?: readonly number[];
    databaseUrl?: string;
    latencyMs?: number;
    onSize?: (figures: ReplayScaleFigures) => void;
  } = {},
): Promise<ReplayScaleFigures[]> {
  const sizes = options.sizes ?? SCALE_SIZES;
  const latencyMs = options.latencyMs ?? LATENCY_MS;
  const dir = mkdtempSync(join(tmpdir(), 'listings-sync-bench-raw-'));
  const all: ReplayScaleFigures[] = [];
  try {
    for (const businesses of sizes) {
      const figures = await scaleSize(businesses, latencyMs, dir, options.databaseUrl);
      all.push(figures);
      options.onSize?.(figures);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return all;
}

export function renderReplayScaleFigures(f: ReplayScaleFigures): string {
  const s = (x: number) => `${x.toFixed(2)} s`;
  const mb = (x: number) => `${x.toFixed(1)} MB`;
  const replay = f.replay.ok
    ? `${s(f.replay.wallSeconds)} (CPU ${s(f.replay.cpuSeconds)}), ${f.replay.runs} run, ${f.replay.reads} reads`
    : `FAILED: ${f.replay.failure}`;
  const sampled = f.replay.out['sampledPeaksMb'] as Record<string, number> | undefined;
  // A replay that failed (out of memory, say) is not within the bound, whatever it reached.
  const within = f.replay.ok && f.replay.peakRssMb <= f.live.peakRssMb;
  return [
    `Replay at scale: 1 account of ${f.businesses} businesses, one night (${f.warehouse}, sandbox latency ${f.latencyMs} ms, node ${f.nodeFlags.join(' ') || '(no flags)'})`,
    `  live night: ${s(f.live.wallSeconds)} (CPU ${s(f.live.cpuSeconds)}), ${f.live.requests} requests; peak RSS ${mb(f.live.peakRssMb)}`,
    `  replay: ${replay}; peak RSS ${f.replay.ok ? '' : '≥ '}${mb(f.replay.peakRssMb)}` +
      (sampled
        ? ` (sampled peaks: heap used ${mb(sampled['heapUsed'] ?? 0)}, heap total ${mb(sampled['heapTotal'] ?? 0)}, external ${mb(sampled['external'] ?? 0)})`
        : ''),
    `  replay wall ÷ live wall: ${f.replay.ok ? (f.replay.wallSeconds / f.live.wallSeconds).toFixed(2) : 'n/a'}`,
    `  replay peak RSS ≤ sync peak RSS: ${within ? 'yes' : 'NO'} (${mb(f.replay.peakRssMb)} against ${mb(f.live.peakRssMb)})`,
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
  const scaleAt = args.indexOf('--scale');
  const sizes =
    scaleAt >= 0 ? (args[scaleAt + 1] ?? '').split(',').map((n) => Number(n.trim())) : undefined;
  if (sizes && (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1))) {
    throw new Error(`--scale takes sizes separated by commas, e.g. 1000,10000`);
  }
  const databaseUrl = process.env['BENCH_DATABASE_URL']?.trim() || undefined;
  if (!args.includes('--scale-only')) {
    const figures = await runRawZoneBench({
      ...(businesses ? { businessesPerAccount: businesses } : {}),
      ...(nights ? { nights } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {}),
      ...(databaseUrl ? { databaseUrl } : {}),
    });
    process.stdout.write(renderRawZoneFigures(figures));
  }
  if (!args.includes('--no-scale')) {
    await runReplayScaleBench({
      ...(sizes ? { sizes } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {}),
      ...(databaseUrl ? { databaseUrl } : {}),
      onSize: (f) => process.stdout.write(renderReplayScaleFigures(f)),
    });
  }
}
