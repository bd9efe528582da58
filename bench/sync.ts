/**
 * `npm run bench`: how close a full sync comes to the floors it cannot beat.
 *
 * - API floor: requests × added latency ÷ requests in flight. The sandbox adds 20 ms to
 *   every request, so no client can finish faster than this at the given concurrency.
 * - COPY floor: the time PostgreSQL's COPY takes to load the same rows into tables of the
 *   same shape (indexes and foreign keys included: the sync pays for both on every row),
 *   measured here, in the same run, on the same database.
 *
 * The ratio of the sync's wall time to the larger floor is the figure to watch (target
 * ≤ 1.5). Then a second sync with no upstream change (target: 0 rows written) and a
 * 10,000-business sync (target: peak RSS ≤ 256 MB). The sandbox runs in its own process
 * so that the sync's peak RSS is its own. Nothing here asserts: it prints figures.
 *
 *   npm run bench                      # 1,000 and 10,000 businesses
 *   npm run bench -- --small           # 1,000 only
 *   BENCH_DATABASE_URL=postgres://… npm run bench   # default: local PostgreSQL if it answers, else PGlite
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { renderTable } from '../src/cli/table.ts';
import { CONTRACT_TABLES } from '../src/warehouse/tables.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src/cli/main.ts');
const LATENCY_MS = 20;
const CONCURRENCY = 16;
const ACCOUNT_CONCURRENCY = 8;
const ACCOUNTS = 2;
/**
 * The V8 flags production runs the sync with (the Dockerfile's ENTRYPOINT), so that the
 * peak RSS measured here is the one a pod sees. The sync's live heap stays near 30 MB, but
 * it allocates fast, and unbounded V8 let the young generation grow to 128 MB and the old
 * one to about as much again before collecting. An 8 MB semi-space measured no slower
 * (peak RSS 250 MB at 1,000 businesses, 300 MB at 10,000); the 256 MB old-space limit,
 * eight times the live heap, makes V8 collect the old generation sooner: peak RSS about
 * 160 MB, for about 1.5 s more CPU in a first sync of 1,000 businesses.
 */
const SYNC_NODE_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=256'];

interface SyncFigures {
  status: string;
  wallSeconds: number;
  peakRssMb: number;
  stats: {
    requests: number;
    retries: number;
    tables: Record<
      string,
      { inserted: number; updated: number; unchanged: number; deleted: number }
    >;
  };
}

interface Target {
  kind: 'postgres' | 'pglite';
  describe: string;
  args: Record<string, string>;
  cleanup(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    import('node:net').then(({ createServer }) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() =>
          typeof address === 'object' && address ? resolve(address.port) : reject(),
        );
      });
    });
  });
}

async function startSandboxProcess(
  businesses: number,
  dir: string,
): Promise<{ child: ChildProcess; credentialsFile: string }> {
  const port = await freePort();
  const credentialsFile = join(dir, `credentials-${businesses}.json`);
  const child = spawn(
    process.execPath,
    [
      CLI,
      'sandbox',
      '--port',
      String(port),
      '--seed',
      '42',
      '--accounts',
      String(ACCOUNTS),
      '--businesses',
      String(businesses / ACCOUNTS),
      '--latency',
      String(LATENCY_MS),
      '--credentials-out',
      credentialsFile,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'warn' },
    },
  );
  for (let i = 0; i < 200 && !existsSync(credentialsFile); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 200));
  if (!existsSync(credentialsFile)) throw new Error('the sandbox did not start');
  return { child, credentialsFile };
}

async function runSyncProcess(target: Target, credentialsFile: string): Promise<SyncFigures> {
  const { stdout } = await run(
    process.execPath,
    [
      ...SYNC_NODE_FLAGS,
      join(ROOT, 'bench/run-sync.ts'),
      JSON.stringify({
        ...target.args,
        credentialsFile,
        concurrency: CONCURRENCY,
        accountConcurrency: ACCOUNT_CONCURRENCY,
      }),
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as SyncFigures;
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function chooseTarget(dir: string, name: string): Promise<Target> {
  const url = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await postgresAnswers(url)) {
    const schema = `bench_${name}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    return {
      kind: 'postgres',
      describe: `PostgreSQL (${new URL(url).host}, schema ${schema})`,
      args: { databaseUrl: url, searchPath: schema },
      async cleanup() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      },
    };
  }
  const pgliteDataDir = join(dir, `pglite-${name}`);
  return {
    kind: 'pglite',
    describe: `PGlite (${pgliteDataDir})`,
    args: { pgliteDataDir },
    async cleanup() {
      rmSync(pgliteDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The foreign keys of `table`, re-pointed at the `copy_` tables: `LIKE … INCLUDING ALL`
 * copies indexes and checks but not foreign keys, and the sync pays for its foreign keys
 * on every row it writes, so a fair floor pays for them too.
 */
async function copyForeignKeys(
  query: (text: string) => Promise<{ rows: { def: string }[] }>,
  table: string,
): Promise<string[]> {
  const { rows } = await query(
    `select pg_get_constraintdef(oid) as def from pg_constraint
     where conrelid = '${table}'::regclass and contype = 'f'`,
  );
  return rows.map(
    ({ def }) =>
      `alter table copy_${table} add ${def.replace(/REFERENCES (\w+)\(/, 'REFERENCES copy_$1(')}`,
  );
}

/**
 * Seconds COPY takes to load every data table's rows into an empty table of the same
 * shape, parents before children (CONTRACT_TABLES is in dependency order).
 */
async function copyFloorSeconds(target: Target): Promise<{ seconds: number; rows: number }> {
  const tables = CONTRACT_TABLES.filter((t) => t !== 'sync_runs');
  let seconds = 0;
  let rows = 0;
  if (target.kind === 'postgres') {
    const client = new pg.Client({ connectionString: target.args['databaseUrl'] });
    await client.connect();
    await client.query(`set search_path = ${target.args['searchPath']}`);
    for (const table of tables) {
      const chunks: Buffer[] = [];
      const out = client.query(copyTo(`copy ${table} to stdout`));
      for await (const chunk of out) chunks.push(chunk as Buffer);
      const data = Buffer.concat(chunks);
      rows += (await client.query(`select count(*)::int as n from ${table}`)).rows[0].n as number;
      await client.query(`create table copy_${table} (like ${table} including all)`);
      for (const statement of await copyForeignKeys((text) => client.query(text), table)) {
        await client.query(statement);
      }
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        const input = client.query(copyFrom(`copy copy_${table} from stdin`));
        input.on('finish', resolve);
        input.on('error', reject);
        input.end(data);
      });
      seconds += (performance.now() - started) / 1000;
    }
    await client.end();
  } else {
    const db = await PGlite.create(target.args['pgliteDataDir']);
    for (const table of tables) {
      const exported = await db.query(`copy ${table} to '/dev/blob'`);
      rows +=
        (await db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]?.n ?? 0;
      await db.query(`create table copy_${table} (like ${table} including all)`);
      for (const statement of await copyForeignKeys((text) => db.query(text), table)) {
        await db.query(statement);
      }
      const started = performance.now();
      if (exported.blob)
        await db.query(`copy copy_${table} from '/dev/blob'`, [], { blob: exported.blob });
      seconds += (performance.now() - started) / 1000;
    }
    await db.close();
  }
  return { seconds, rows };
}

function written(figures: SyncFigures): number {
  return Object.values(figures.stats.tables).reduce(
    (sum, c) => sum + c.inserted + c.updated + c.deleted,
    0,
  );
}

async function benchSize(
  businesses: number,
  dir: string,
  withFloors: boolean,
): Promise<string[][]> {
  const target = await chooseTarget(dir, String(businesses));
  const sandbox = await startSandboxProcess(businesses, dir);
  const rows: string[][] = [];
  try {
    process.stderr.write(`bench: ${businesses} businesses into ${target.describe} …\n`);
    const first = await runSyncProcess(target, sandbox.credentialsFile);
    const apiFloor = (first.stats.requests * LATENCY_MS) / 1000 / CONCURRENCY;
    const rowsWritten = written(first);
    rows.push([`${businesses} businesses: full sync`, first.status]);
    rows.push(['  requests', String(first.stats.requests)]);
    rows.push(['  wall seconds', first.wallSeconds.toFixed(2)]);
    rows.push(['  API floor seconds (requests × 20 ms ÷ 16)', apiFloor.toFixed(2)]);
    if (withFloors) {
      const copy = await copyFloorSeconds(target);
      const floor = Math.max(apiFloor, copy.seconds);
      rows.push([
        '  COPY floor seconds (same rows, same-shaped tables, indexes and foreign keys)',
        copy.seconds.toFixed(2),
      ]);
      rows.push([
        '  ratio wall ÷ max(floors) (target ≤ 1.5)',
        (first.wallSeconds / floor).toFixed(2),
      ]);
      rows.push(['  rows in the warehouse', String(copy.rows)]);
    }
    rows.push(['  rows written per second', (rowsWritten / first.wallSeconds).toFixed(0)]);
    rows.push(['  peak RSS MB (target ≤ 256)', first.peakRssMb.toFixed(1)]);
    if (withFloors) {
      const second = await runSyncProcess(target, sandbox.credentialsFile);
      rows.push(['  unchanged sync: rows written (target 0)', String(written(second))]);
      rows.push(['  unchanged sync: wall seconds', second.wallSeconds.toFixed(2)]);
    }
  } finally {
    sandbox.child.kill('SIGTERM');
    await target.cleanup();
  }
  return rows;
}

const small = process.argv.includes('--small');
const dir = mkdtempSync(join(tmpdir(), 'listings-sync-bench-'));
try {
  const rows = await benchSize(1000, dir, true);
  if (!small) rows.push(...(await benchSize(10_000, dir, false)));
  process.stdout.write(`${renderTable(['figure', 'value'], rows)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
