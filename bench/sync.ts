/**
 * `npm run bench`: the sync side by side with a plain loader (`bench/plain-loader.ts`),
 * in one run, against the same sandbox and the same local PostgreSQL.
 *
 * For each size (1,000 businesses, and 10,000 unless `--small`) it first reads every
 * answer once, unmeasured (the loader's reads alone, nothing written), because
 * the sandbox builds an answer on its first read and caches it: no measured run pays for
 * that build. Then it runs, in this order: the sync's first sync, its unchanged sync, the loader's first load and the loader's
 * unchanged pass (`bench/plain-loader.ts`: same requests, rows built and compared with the
 * stored content hashes, nothing written); each in a process of its own, each into a fresh migrated schema of its
 * own (loader and sync never share one). For each it measures:
 *
 * - wall seconds, start to finish of the work (not of the process);
 * - the process's CPU (`process.cpuUsage()` at exit: the whole process, module loading
 *   and migrations included) and its peak RSS;
 * - PostgreSQL's CPU: utime + stime of the backends that served the process, read from
 *   `/proc/<pid>/stat`; the pids come from `pg_stat_activity`, polled every 100 ms for
 *   the process's `application_name` (set through `PGAPPNAME`). Background processes
 *   (WAL writer, checkpointer, autovacuum) are not counted, nor is anyone else's work on
 *   a shared server;
 * - the sandbox's CPU: it runs in its own process, whose `/proc/<pid>/stat` is read
 *   before and after.
 *
 * The figures to watch: the sync's total CPU (process + PostgreSQL + sandbox) ÷ the
 * loader's (target ≤ 1.3 for a first sync), and wall ÷ wall (target ≤ 1.3), and the sync's peak RSS (target ≤ 256 MB at
 * 10,000 businesses). Then the raw zone's figures (`bench/raw-zone.ts`, 2 × 50 businesses,
 * 31 nights in-process): first and unchanged night's raw bytes against the tables' growth,
 * the month's, and a replay's wall time against the live nights'. Nothing here asserts:
 * it prints figures.
 *
 *   npm run bench                      # 1,000 and 10,000 businesses
 *   npm run bench -- --small           # 1,000 only
 *   npm run bench -- --small --sync-only   # the sync's figures alone (no loader, no raw zone)
 *   npm run bench -- --small --sync-only --traces   # and a first sync exporting its traces
 *                                       # to an OTLP receiver in this process (what traces cost)
 *   npm run bench -- --against 8e49e40 [--pairs 2]   # this tree's sync against a revision's:
 *                                       # 500 businesses, first and unchanged syncs alternated,
 *                                       # machine CPU (process + PostgreSQL, sandbox excluded)
 *   BENCH_DATABASE_URL=postgres://… npm run bench   # default: postgres://postgres@127.0.0.1:5432/postgres
 *   BENCH_NODE_FLAGS='--max-old-space-size=512' npm run bench -- --small   # other V8 flags for the sync
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { renderTable } from '../src/text-table.ts';
import { productionNodeFlags } from './node-flags.ts';
import { renderRawZoneFigures, runRawZoneBench } from './raw-zone.ts';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src/cli/main.ts');
const LATENCY_MS = 20;
const CONCURRENCY = 16;
const ACCOUNT_CONCURRENCY = 8;
const ACCOUNTS = 2;
/** Clock ticks per second of /proc's utime and stime (`getconf CLK_TCK`; 100 on Linux). */
const CLK_TCK = 100;
/**
 * The V8 flags the sync runs with: production's (`productionNodeFlags`), so that the peak
 * RSS measured here is the one a pod sees; docs/benchmarks.md has the measurements behind
 * them. `BENCH_NODE_FLAGS` replaces them.
 */
const SYNC_NODE_FLAGS =
  process.env['BENCH_NODE_FLAGS']?.split(/\s+/).filter(Boolean) ?? productionNodeFlags();
/** The tables both write, for the row-count comparison. */
const TABLES = [
  'accounts',
  'businesses',
  'business_versions',
  'listings',
  'listing_status_history',
  'listing_accuracy_days',
  'reviews',
  'review_versions',
  'review_responses',
  'keywords',
  'rank_series',
  'rank_history',
  'rank_latest',
  'countries',
  'states',
  'sub_categories',
  'alerts',
  'quarantine',
];

interface Measured {
  wallSeconds: number;
  processCpu: number;
  postgresCpu: number;
  sandboxCpu: number;
  peakRssMb: number;
  requests: number;
  written: number;
  status: string;
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

/** utime + stime of a process, in seconds; undefined once it has gone. */
function cpuSecondsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
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
  // Up to two minutes: it builds its world first, slowly on a loaded machine.
  for (let i = 0; i < 2400 && !existsSync(credentialsFile); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 200));
  if (!existsSync(credentialsFile)) throw new Error('the sandbox did not start');
  return { child, credentialsFile };
}

/**
 * Runs `script` in a process of its own under `applicationName` and returns its last
 * stdout line (JSON) with the CPU its PostgreSQL backends and the sandbox spent meanwhile.
 */
async function runMeasured(
  url: string,
  sandboxPid: number,
  applicationName: string,
  nodeFlags: string[],
  script: string,
  args: object,
  env: Record<string, string> = {},
  root = ROOT,
): Promise<{ out: Record<string, unknown>; postgresCpu: number; sandboxCpu: number }> {
  const monitor = new pg.Client({ connectionString: url });
  await monitor.connect();
  const backends = new Map<number, number>();
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const { rows } = await monitor.query<{ pid: number }>(
        'select pid from pg_stat_activity where application_name = $1',
        [applicationName],
      );
      for (const { pid } of rows) {
        const seconds = cpuSecondsOf(pid);
        if (seconds !== undefined) backends.set(pid, seconds);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const sandboxBefore = cpuSecondsOf(sandboxPid) ?? 0;
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeFlags, join(root, script), JSON.stringify(args)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, ...env, PGAPPNAME: applicationName },
      },
    );
    let text = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      text += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${script} exited with ${code}`)),
    );
  });
  const sandboxCpu = (cpuSecondsOf(sandboxPid) ?? 0) - sandboxBefore;
  polling = false;
  await poll;
  await monitor.end();
  const postgresCpu = [...backends.values()].reduce((a, b) => a + b, 0);
  return {
    out: JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>,
    postgresCpu,
    sandboxCpu,
  };
}

/** An OTLP/HTTP receiver that counts the spans posted to it and answers 200. */
async function startSpanReceiver(): Promise<{
  url: string;
  spans: () => number;
  close: () => Promise<void>;
}> {
  let spans = 0;
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      spans += (body.match(/"spanId"/g) ?? []).length;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
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

async function withAdmin<T>(url: string, f: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}

async function rowCounts(url: string, schema: string): Promise<Record<string, number>> {
  return withAdmin(url, async (client) => {
    const counts: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows } = await client.query<{ n: number }>(
        `select count(*)::int as n from ${schema}.${table}`,
      );
      counts[table] = rows[0]?.n ?? 0;
    }
    return counts;
  });
}

type SyncTables = Record<string, { inserted: number; updated: number; deleted: number }>;

function syncFigures(run: Awaited<ReturnType<typeof runMeasured>>): Measured {
  const stats = run.out['stats'] as { requests: number; tables: SyncTables };
  return {
    status: String(run.out['status']),
    wallSeconds: run.out['wallSeconds'] as number,
    processCpu: run.out['cpuSeconds'] as number,
    postgresCpu: run.postgresCpu,
    sandboxCpu: run.sandboxCpu,
    peakRssMb: run.out['peakRssMb'] as number,
    requests: stats.requests,
    written: Object.values(stats.tables).reduce(
      (sum, c) => sum + c.inserted + c.updated + c.deleted,
      0,
    ),
  };
}

function loaderFigures(run: Awaited<ReturnType<typeof runMeasured>>): Measured {
  return {
    status:
      run.out['changedRows'] === undefined ? 'loaded' : `${run.out['changedRows']} rows changed`,
    wallSeconds: run.out['wallSeconds'] as number,
    processCpu: run.out['cpuSeconds'] as number,
    postgresCpu: run.postgresCpu,
    sandboxCpu: run.sandboxCpu,
    peakRssMb: run.out['peakRssMb'] as number,
    requests: run.out['requests'] as number,
    written: run.out['written'] as number,
  };
}

const total = (m: Measured) => m.processCpu + m.postgresCpu + m.sandboxCpu;

function figureTable(businesses: number, runs: [string, Measured][]): string {
  const line = (label: string, f: (m: Measured) => string) => [label, ...runs.map(([, m]) => f(m))];
  return renderTable(
    [`${businesses} businesses`, ...runs.map(([name]) => name)],
    [
      line('status', (m) => m.status),
      line('requests', (m) => String(m.requests)),
      line('rows written', (m) => String(m.written)),
      line('wall seconds', (m) => m.wallSeconds.toFixed(2)),
      line('process CPU seconds', (m) => m.processCpu.toFixed(2)),
      line('PostgreSQL backends CPU seconds', (m) => m.postgresCpu.toFixed(2)),
      line('sandbox CPU seconds', (m) => m.sandboxCpu.toFixed(2)),
      line('total CPU seconds', (m) => total(m).toFixed(2)),
      line('process peak RSS MB', (m) => m.peakRssMb.toFixed(1)),
    ],
  );
}

async function benchSize(url: string, businesses: number, dir: string): Promise<string> {
  const stamp = `${businesses}_${process.pid}`;
  const syncSchema = `bench_sync_${stamp}`;
  const loaderSchema = `bench_loader_${stamp}`;
  const warmSchema = `bench_warm_${stamp}`;
  const sandbox = await startSandboxProcess(businesses, dir);
  await withAdmin(url, async (c) => {
    await c.query(`create schema ${syncSchema}`);
    await c.query(`create schema ${loaderSchema}`);
    await c.query(`create schema ${warmSchema}`);
  });
  const sandboxPid = sandbox.child.pid as number;
  const common = {
    credentialsFile: sandbox.credentialsFile,
    databaseUrl: url,
    concurrency: CONCURRENCY,
    accountConcurrency: ACCOUNT_CONCURRENCY,
  };
  try {
    // The sandbox builds each answer on its first read and serves it from its cache after:
    // one unmeasured pass of every read first (the loader's reads, nothing written), so
    // that no measured run pays for the sandbox's first build, whichever goes first.
    process.stderr.write(`bench: ${businesses} businesses, warming the sandbox …\n`);
    await runMeasured(url, sandboxPid, `bench-warm-${stamp}`, [], 'bench/plain-loader.ts', {
      ...common,
      searchPath: warmSchema,
      readsOnly: true,
    });
    warmCompileCache(ROOT);
    const syncArgs = { ...common, searchPath: syncSchema };
    process.stderr.write(
      `bench: ${businesses} businesses, sync (${SYNC_NODE_FLAGS.join(' ')}) …\n`,
    );
    const first = syncFigures(
      await runMeasured(
        url,
        sandboxPid,
        `bench-sync-${stamp}`,
        SYNC_NODE_FLAGS,
        'bench/run-sync.ts',
        syncArgs,
      ),
    );
    process.stderr.write(`bench: ${businesses} businesses, unchanged sync …\n`);
    const second = syncFigures(
      await runMeasured(
        url,
        sandboxPid,
        `bench-sync2-${stamp}`,
        SYNC_NODE_FLAGS,
        'bench/run-sync.ts',
        syncArgs,
      ),
    );
    if (syncOnly) {
      const runs: [string, Measured][] = [
        ['sync first', first],
        ['sync unchanged', second],
      ];
      if (traces) {
        // The same first sync into a fresh schema, exporting every span to a receiver here.
        const receiver = await startSpanReceiver();
        const tracedSchema = `bench_traced_${stamp}`;
        await withAdmin(url, (c) => c.query(`create schema ${tracedSchema}`));
        try {
          process.stderr.write(`bench: ${businesses} businesses, first sync with traces …\n`);
          const traced = syncFigures(
            await runMeasured(
              url,
              sandboxPid,
              `bench-traced-${stamp}`,
              SYNC_NODE_FLAGS,
              'bench/run-sync.ts',
              { ...common, searchPath: tracedSchema },
              { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
            ),
          );
          runs.push(['sync first, traced', traced]);
          const ratio = renderTable(
            ['traces', 'value'],
            [
              ['spans received', String(receiver.spans())],
              ['traced ÷ untraced process CPU', (traced.processCpu / first.processCpu).toFixed(2)],
              ['traced ÷ untraced wall', (traced.wallSeconds / first.wallSeconds).toFixed(2)],
            ],
          );
          return `${figureTable(businesses, runs)}\n\n${ratio}\n`;
        } finally {
          await receiver.close();
          await withAdmin(url, (c) => c.query(`drop schema if exists ${tracedSchema} cascade`));
        }
      }
      return `${figureTable(businesses, runs)}\n`;
    }
    process.stderr.write(`bench: ${businesses} businesses, plain loader (after the sync) …\n`);
    const loaderArgs = { ...common, searchPath: loaderSchema };
    const loader = loaderFigures(
      await runMeasured(
        url,
        sandboxPid,
        `bench-loader-${stamp}`,
        [],
        'bench/plain-loader.ts',
        loaderArgs,
      ),
    );
    process.stderr.write(`bench: ${businesses} businesses, plain loader unchanged …\n`);
    const loaderUnchanged = loaderFigures(
      await runMeasured(url, sandboxPid, `bench-loader2-${stamp}`, [], 'bench/plain-loader.ts', {
        ...loaderArgs,
        unchanged: true,
      }),
    );
    const [syncRows, loaderRows] = [
      await rowCounts(url, syncSchema),
      await rowCounts(url, loaderSchema),
    ];
    const figures = figureTable(businesses, [
      ['sync first', first],
      ['loader first', loader],
      ['sync unchanged', second],
      ['loader unchanged', loaderUnchanged],
    ]);
    const apiFloor = (first.requests * LATENCY_MS) / 1000 / CONCURRENCY;
    const ratios = renderTable(
      ['ratio', 'first', 'unchanged'],
      [
        [
          'sync total CPU ÷ loader total CPU (target ≤ 1.3 first)',
          (total(first) / total(loader)).toFixed(2),
          (total(second) / total(loaderUnchanged)).toFixed(2),
        ],
        [
          'sync wall ÷ loader wall (target ≤ 1.3)',
          (first.wallSeconds / loader.wallSeconds).toFixed(2),
          (second.wallSeconds / loaderUnchanged.wallSeconds).toFixed(2),
        ],
        [
          `sync wall ÷ API floor (${apiFloor.toFixed(2)} s: requests × 20 ms ÷ 16)`,
          (first.wallSeconds / apiFloor).toFixed(2),
          (second.wallSeconds / apiFloor).toFixed(2),
        ],
        [
          'sync peak RSS MB (target ≤ 256)',
          first.peakRssMb.toFixed(1),
          second.peakRssMb.toFixed(1),
        ],
      ],
    );
    const rows = renderTable(
      ['table', 'rows (sync)', 'rows (loader)'],
      [
        ...TABLES.map((t) => [t, String(syncRows[t]), String(loaderRows[t])]),
        [
          'all',
          String(Object.values(syncRows).reduce((a, b) => a + b, 0)),
          String(Object.values(loaderRows).reduce((a, b) => a + b, 0)),
        ],
      ],
    );
    return `${figures}\n\n${ratios}\n\n${rows}\n`;
  } finally {
    sandbox.child.kill('SIGTERM');
    await withAdmin(url, async (c) => {
      await c.query(`drop schema if exists ${syncSchema} cascade`);
      await c.query(`drop schema if exists ${loaderSchema} cascade`);
      await c.query(`drop schema if exists ${warmSchema} cascade`);
    });
  }
}

/**
 * One unmeasured start of a tree's `bench/run-sync.ts` that only loads what a first sync
 * loads (`{"warmOnly": true}`), so that no measured run writes the compile cache: a tree
 * that turns one on (this one; a revision from 7fc4d01 on) has it written before its first
 * measured run. A revision from before either has no cache or fails at once on its missing
 * credentials file, starting no sync: its outcome is not looked at.
 */
function warmCompileCache(root: string): void {
  spawnSync(
    process.execPath,
    [...SYNC_NODE_FLAGS, join(root, 'bench/run-sync.ts'), JSON.stringify({ warmOnly: true })],
    { stdio: root === ROOT ? 'inherit' : 'ignore' },
  );
}

/** A tree to run: this one, or a git revision checked out beside it. */
interface Tree {
  name: string;
  root: string;
}

/**
 * `git worktree add` of `revision` in `dir`, sharing this tree's node_modules (a revision
 * whose dependencies differ from this tree's is not comparable here).
 */
function checkOut(revision: string, dir: string): Tree {
  const root = join(dir, `tree-${revision.replace(/[^\w.-]/g, '_')}`);
  const git = spawnSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', root, revision], {
    encoding: 'utf8',
  });
  if (git.status !== 0) {
    throw new Error(`bench: git worktree add ${revision} failed: ${git.stderr.trim()}`);
  }
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  return { name: revision, root };
}

function removeTree(tree: Tree): void {
  spawnSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', tree.root], { stdio: 'ignore' });
}

/** Machine CPU of a sync: its process and its PostgreSQL backends (the sandbox's excluded). */
const machineCpu = (m: Measured) => m.processCpu + m.postgresCpu;

/**
 * `--against <revision>`: this tree's sync against `revision`'s, in one sitting, against
 * one sandbox and one PostgreSQL: `pairs` rounds, each a first and an unchanged sync of
 * each tree into a fresh schema, the trees' order alternating from round to round. Prints
 * each run's machine CPU and the ratios this tree ÷ the revision's, per round and over all.
 */
async function benchAgainst(
  url: string,
  businesses: number,
  dir: string,
  revision: string,
  pairs: number,
): Promise<string> {
  const base = checkOut(revision, dir);
  const head: Tree = { name: 'this tree', root: ROOT };
  const sandbox = await startSandboxProcess(businesses, dir);
  const sandboxPid = sandbox.child.pid as number;
  const common = {
    credentialsFile: sandbox.credentialsFile,
    databaseUrl: url,
    concurrency: CONCURRENCY,
    accountConcurrency: ACCOUNT_CONCURRENCY,
  };
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  const loadBefore = load();
  const rows: string[][] = [];
  const sums = new Map<string, { first: number; unchanged: number }>();
  const perRound: { first: number; unchanged: number }[] = [];
  try {
    const warm = `bench_warm_${process.pid}`;
    await withAdmin(url, (c) => c.query(`create schema ${warm}`));
    try {
      process.stderr.write(`bench: ${businesses} businesses, warming the sandbox …\n`);
      await runMeasured(url, sandboxPid, `bench-warm-${process.pid}`, [], 'bench/plain-loader.ts', {
        ...common,
        searchPath: warm,
        readsOnly: true,
      });
    } finally {
      await withAdmin(url, (c) => c.query(`drop schema if exists ${warm} cascade`));
    }
    for (const tree of [base, head]) warmCompileCache(tree.root);
    for (let round = 0; round < pairs; round++) {
      const order = round % 2 === 0 ? [base, head] : [head, base];
      const figures = new Map<string, { first: number; unchanged: number }>();
      for (const tree of order) {
        const schema = `bench_against_${process.pid}_${round}_${tree === head ? 'head' : 'base'}`;
        await withAdmin(url, (c) => c.query(`create schema ${schema}`));
        try {
          const run = async (label: string) => {
            process.stderr.write(`bench: round ${round + 1}, ${tree.name}, ${label} sync …\n`);
            return syncFigures(
              await runMeasured(
                url,
                sandboxPid,
                `bench-against-${process.pid}-${round}`,
                SYNC_NODE_FLAGS,
                'bench/run-sync.ts',
                { ...common, searchPath: schema },
                {},
                tree.root,
              ),
            );
          };
          const first = await run('first');
          const unchanged = await run('unchanged');
          figures.set(tree.name, { first: machineCpu(first), unchanged: machineCpu(unchanged) });
          for (const [label, m] of [
            ['first', first],
            ['unchanged', unchanged],
          ] as const) {
            rows.push([
              String(round + 1),
              tree.name,
              label,
              m.status,
              m.processCpu.toFixed(2),
              m.postgresCpu.toFixed(2),
              machineCpu(m).toFixed(2),
              m.sandboxCpu.toFixed(2),
            ]);
          }
          const sum = sums.get(tree.name) ?? { first: 0, unchanged: 0 };
          sums.set(tree.name, {
            first: sum.first + machineCpu(first),
            unchanged: sum.unchanged + machineCpu(unchanged),
          });
        } finally {
          await withAdmin(url, (c) => c.query(`drop schema if exists ${schema} cascade`));
        }
      }
      const h = figures.get(head.name);
      const b = figures.get(base.name);
      if (h && b) perRound.push({ first: h.first / b.first, unchanged: h.unchanged / b.unchanged });
    }
  } finally {
    sandbox.child.kill('SIGTERM');
    removeTree(base);
  }
  const h = sums.get(head.name);
  const b = sums.get(base.name);
  const runs = renderTable(
    [
      'round',
      'tree',
      'sync',
      'status',
      'process CPU s',
      'PostgreSQL CPU s',
      'machine CPU s',
      'sandbox CPU s (excluded)',
    ],
    rows,
  );
  const ratios = renderTable(
    [`this tree ÷ ${revision}, machine CPU (target ≤ 0.8)`, 'first', 'unchanged'],
    [
      ...perRound.map((r, i) => [`round ${i + 1}`, r.first.toFixed(2), r.unchanged.toFixed(2)]),
      [
        'all rounds (sums)',
        h && b ? (h.first / b.first).toFixed(2) : '-',
        h && b ? (h.unchanged / b.unchanged).toFixed(2) : '-',
      ],
    ],
  );
  return `${businesses} businesses against ${revision}; load average (1, 5, 15 min) before: ${loadBefore}, after: ${load()}\n\n${runs}\n\n${ratios}\n`;
}

const url = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
if (!(await postgresAnswers(url))) {
  process.stderr.write(
    `bench: PostgreSQL does not answer at ${new URL(url).host}; the plain loader needs it (set BENCH_DATABASE_URL)\n`,
  );
  process.exit(1);
}
const small = process.argv.includes('--small');
const syncOnly = process.argv.includes('--sync-only');
const traces = process.argv.includes('--traces');
const optionValue = (name: string) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const against = optionValue('--against');
const pairs = Number(optionValue('--pairs') ?? 2);
if (!Number.isInteger(pairs) || pairs < 1) {
  process.stderr.write('bench: --pairs must be a positive integer\n');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'listings-sync-bench-'));
// This tree's sync reads V8's compile cache as the CLI does (src/cli/compile-cache.ts), in a
// directory of the bench's own (`warmCompileCache`). NODE_DISABLE_COMPILE_CACHE=1 runs it
// without.
process.env['XDG_CACHE_HOME'] = join(dir, 'cache');
delete process.env['NODE_COMPILE_CACHE'];
try {
  process.stdout.write(`sync node flags: ${SYNC_NODE_FLAGS.join(' ') || '(none)'}\n\n`);
  if (against) {
    process.stdout.write(`${await benchAgainst(url, 500, dir, against, pairs)}\n`);
  } else {
    process.stdout.write(`${await benchSize(url, 1000, dir)}\n`);
    if (!small) process.stdout.write(`${await benchSize(url, 10_000, dir)}\n`);
    // The raw zone's figures (bench/raw-zone.ts): its bytes against the tables', replay
    // against live. Not with --sync-only, which measures the sync alone.
    if (!syncOnly) {
      process.stdout.write(renderRawZoneFigures(await runRawZoneBench({ databaseUrl: url })));
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
