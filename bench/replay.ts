/**
 * `npm run bench:replay`: a replay's CPU and wall against the live nights it rebuilds
 * (issue 57, "Replay"; docs/benchmarks.md, "Replay against its live nights"). For each
 * backend (PostgreSQL when BENCH_DATABASE_URL is set, then PGlite in a data directory): a
 * sandbox in this process (answers after 20 ms), N live nights each synced by
 * bench/run-sync.ts in a process of its own (the sandbox's clock moved a day between them),
 * then one `replay --into` of all of them by bench/run-replay.ts in another.
 *
 * CPU is counted for the sync or replay process (less its start: Node, modules, migrations)
 * and, on PostgreSQL, for the server backends serving it: this process polls
 * `pg_stat_activity` for the connections named by `application_name` and reads each
 * backend's user and system ticks from /proc (a lower bound: a backend that exits between
 * two polls loses its last 200 ms). Wall is the sync's or replay's own. The machine's load
 * (`/proc/loadavg`) is printed before and after each backend.
 *
 *   npm run bench:replay                                    # 2 × 250 businesses, 30 nights
 *   npm run bench:replay -- --businesses 50 --nights 10     # quicker (per account)
 *   npm run bench:replay -- --backend postgres              # one backend (postgres | pglite)
 *   npm run bench:replay -- --cpu-prof DIR                  # the replay child under --cpu-prof
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startSandbox } from '../src/sandbox/server.ts';

const ROOT = join(import.meta.dirname, '..');
const TICKS_PER_SECOND = 100;

interface Phase {
  wallSeconds: number;
  /** The sync or replay process, less its start-up. */
  processCpuSeconds: number;
  /** PostgreSQL backends of its connections (0 on PGlite: in the process). */
  backendCpuSeconds: number;
}

interface BackendFigures {
  backend: 'postgres' | 'pglite';
  live: Phase;
  replay: Phase & { runs: number; reads: number };
  loadBefore: string;
  loadAfter: string;
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function procTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime), counted from the state, field 3.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** Polls the backends named `application_name`: CPU ticks each reached, from first seen. */
function backendMeter(databaseUrl: string | undefined, applicationName: string) {
  if (!databaseUrl) return { stop: async () => 0 };
  const client = new pg.Client({ connectionString: databaseUrl });
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let stopped = false;
  const ready = client.connect();
  const poll = async () => {
    await ready;
    while (!stopped) {
      const { rows } = await client.query<{ pid: number }>(
        'select pid from pg_stat_activity where application_name = $1',
        [applicationName],
      );
      for (const { pid } of rows) {
        const ticks = procTicks(pid);
        if (ticks === undefined) continue;
        // A backend first seen after its start: its ticks before it are from its start-up.
        if (!first.has(pid)) first.set(pid, 0);
        last.set(pid, ticks);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const polling = poll();
  return {
    stop: async () => {
      stopped = true;
      await polling;
      await client.end();
      let ticks = 0;
      for (const [pid, t] of last) ticks += t - (first.get(pid) ?? 0);
      return ticks / TICKS_PER_SECOND;
    },
  };
}

function runChild(
  script: string,
  nodeFlags: string[],
  args: object,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeFlags, join(ROOT, script), JSON.stringify(args)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>);
    });
  });
}

function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

async function benchBackend(options: {
  backend: 'postgres' | 'pglite';
  databaseUrl: string | undefined;
  businessesPerAccount: number;
  nights: number;
  latencyMs: number;
  cpuProfDir: string | undefined;
}): Promise<BackendFigures> {
  const { backend, nights } = options;
  const dir = mkdtempSync(join(tmpdir(), 'listings-sync-bench-replay-'));
  const sandbox = await startSandbox({
    seed: 42,
    accounts: 2,
    businessesPerAccount: options.businessesPerAccount,
    startDate: '2026-01-01',
    port: 0,
    faults: { latencyMs: options.latencyMs },
  });
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify(sandbox.credentials));
  const schema = `bench_replay_${process.pid}_${backend}`;
  const into = `${schema}_into`;
  const liveName = `${schema}_live`;
  const replayName = `${schema}_replay`;
  const pgUrl = options.databaseUrl;
  const where = (name: string) =>
    pgUrl
      ? { databaseUrl: withApplicationName(pgUrl, name), searchPath: schema }
      : { pgliteDataDir: join(dir, 'pglite') };
  const loadBefore = loadavg();
  const admin = pgUrl ? new pg.Client({ connectionString: pgUrl }) : undefined;
  await admin?.connect();
  try {
    await admin?.query(`create schema ${schema}`);
    const live: Phase = { wallSeconds: 0, processCpuSeconds: 0, backendCpuSeconds: 0 };
    for (let night = 0; night < nights; night++) {
      if (night > 0) sandbox.advanceDays(1);
      const meter = backendMeter(pgUrl, liveName);
      const out = await runChild('bench/run-sync.ts', [], {
        credentialsFile,
        concurrency: 16,
        accountConcurrency: 8,
        ...where(liveName),
      });
      live.backendCpuSeconds += await meter.stop();
      live.wallSeconds += Number(out['wallSeconds']);
      live.processCpuSeconds += Number(out['cpuSeconds']) - Number(out['startupCpuSeconds']);
      process.stderr.write(
        `bench:replay ${backend}: night ${night + 1}/${nights} ${Number(out['wallSeconds']).toFixed(1)} s (${String(out['status'])})\n`,
      );
    }
    const meter = backendMeter(pgUrl, replayName);
    const flags: string[] = [];
    if (options.cpuProfDir) {
      mkdirSync(options.cpuProfDir, { recursive: true });
      flags.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`);
    }
    const out = await runChild('bench/run-replay.ts', flags, { ...where(replayName), into });
    const replay = {
      wallSeconds: Number(out['wallSeconds']),
      processCpuSeconds: Number(out['cpuSeconds']) - Number(out['startupCpuSeconds'] ?? 0),
      backendCpuSeconds: await meter.stop(),
      runs: Number(out['runs']),
      reads: Number(out['reads']),
    };
    return { backend, live, replay, loadBefore, loadAfter: loadavg() };
  } finally {
    await sandbox.close();
    if (admin) {
      await admin.query(`drop schema if exists ${into} cascade`);
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

export function renderReplayFigures(f: BackendFigures, businesses: number, nights: number) {
  const s = (x: number) => `${x.toFixed(1)} s`;
  const cpu = (p: Phase) => p.processCpuSeconds + p.backendCpuSeconds;
  const parts = (p: Phase) =>
    `${s(cpu(p))} CPU (process ${s(p.processCpuSeconds)}, PostgreSQL backends ${s(p.backendCpuSeconds)}), ${s(p.wallSeconds)} wall`;
  return [
    `Replay against its live nights: ${f.backend}, ${businesses} businesses × ${nights} nights (load ${f.loadBefore} before, ${f.loadAfter} after)`,
    `  live nights: ${parts(f.live)}`,
    `  replay:      ${parts(f.replay)}; ${f.replay.runs} runs, ${f.replay.reads} reads`,
    `  live ÷ replay: CPU ${(cpu(f.live) / cpu(f.replay)).toFixed(2)}×, wall ${(f.live.wallSeconds / f.replay.wallSeconds).toFixed(2)}× (target ≥ 5× on PostgreSQL)`,
    '',
  ].join('\n');
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const businessesPerAccount = Number(value('--businesses') ?? 250);
  const nights = Number(value('--nights') ?? 30);
  const latencyMs = Number(value('--latency') ?? 20);
  const only = value('--backend');
  const cpuProfDir = value('--cpu-prof');
  const databaseUrl = process.env['BENCH_DATABASE_URL']?.trim() || undefined;
  const backends = (['postgres', 'pglite'] as const).filter(
    (b) => (only === undefined || only === b) && (b === 'pglite' || databaseUrl),
  );
  for (const backend of backends) {
    const figures = await benchBackend({
      backend,
      databaseUrl: backend === 'postgres' ? databaseUrl : undefined,
      businessesPerAccount,
      nights,
      latencyMs,
      cpuProfDir,
    });
    process.stdout.write(renderReplayFigures(figures, 2 * businessesPerAccount, nights));
  }
}
