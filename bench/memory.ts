/**
 * `npm run bench:memory`: the embedded default's memory, command by command
 * (docs/benchmarks.md, "Memory on PGlite").
 *
 * Each command runs as a user runs it, as a real child process on a fresh data directory
 * in a temporary directory, by every documented route (docs/running.md, "One runtime"):
 * `npx listings-sync`, `node_modules/.bin/node bin/listings-sync.mjs` (the one command line
 * for long-running commands, schedulers, the image and the units), the bin's own shebang
 * (as npm scripts run it) and `node_modules/.bin/node src/cli/main.ts`; each route gets a
 * data directory of its own. Per route, in order: `migrate` (the first open of an empty
 * directory), a `sync` of 50 businesses (2 accounts × 25) from a sandbox running in a
 * process of its own (its memory is not the sync's), `runs`, and `serve` (started,
 * listening, 2 s idle, then SIGTERM; not under npx, as the docs never start it so); on the
 * first route also `check` and `report`. Then
 * the demo through `npm start` (30 days of 50 businesses, in a fresh directory of its own).
 * Last, per command, the spread of peak RSS across the routes (issue 54's bound: 10 %).
 *
 * For each it prints the process's peak resident set (ru_maxrss through `/usr/bin/time`,
 * or, without it, /proc/<pid>/status's VmHWM polled until the process exits), its wall
 * time and its CPU seconds (user + system, with `/usr/bin/time` only), against the targets of the issue (≤ 400 MB per command, ≤ 600 MB for the
 * demo). Nothing here asserts: it prints figures, and exits 1 if a command failed.
 *
 *   npm run bench:memory                  # every command by every route, and the demo
 *   npm run bench:memory -- --no-demo     # the commands only (about a minute less)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(repo, 'bin/listings-sync.mjs');
const node = join(repo, 'node_modules/.bin/node');
const TIME = '/usr/bin/time';
const withDemo = !process.argv.includes('--no-demo');

/** The repository's node first on PATH, as `npx` and `npm start` put it. */
const PATH = `${join(repo, 'node_modules/.bin')}:${process.env.PATH ?? ''}`;

/** The documented routes: the command line before the command's own arguments. */
const ROUTES: { name: string; argv: string[] }[] = [
  { name: 'npx listings-sync', argv: ['npx', '--no-install', 'listings-sync'] },
  { name: 'node_modules/.bin/node bin/listings-sync.mjs', argv: [node, entry] },
  { name: 'bin/listings-sync.mjs (shebang)', argv: [entry] },
  { name: 'node_modules/.bin/node src/cli/main.ts', argv: [node, join(repo, 'src/cli/main.ts')] },
];

interface Measure {
  command: string;
  route: string;
  peakMb: number;
  wallSeconds: number;
  /** User + system CPU seconds (from `/usr/bin/time`; undefined without it). */
  cpuSeconds?: number;
  exitCode: number;
  targetMb: number;
}

/** The environment of a new user: none of the warehouse's or credentials' settings. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH, LOG_LEVEL: 'warn' };
  for (const name of Object.keys(env)) {
    if (/^(DATABASE_|PGLITE_|LISTINGS_|SYNC_|OTEL_|ALERT_|WEBHOOK_)/.test(name)) delete env[name];
  }
  return { ...env, ...extra };
}

/** Peak RSS in MB of a process still running, from /proc (the fallback without `time`). */
function vmHwmMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/**
 * Runs `argv` in `cwd` and measures it. With `/usr/bin/time` the figure is the kernel's
 * ru_maxrss of the process itself (`time` forks it; the entry's re-exec with its flags
 * replaces the process in place; under npx, the largest of npm and the command); without,
 * the last VmHWM read before it exits.
 */
async function measure(
  command: string,
  route: string,
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  targetMb: number,
  /** For a server: once standard output matches, 2 s idle, then SIGTERM to its process group. */
  until?: RegExp,
): Promise<Measure> {
  const report = join(tmpdir(), `listings-sync-memory-time-${process.pid}-${performance.now()}`);
  const useTime = existsSync(TIME);
  const [file, ...args] = useTime ? [TIME, '-f', '%M %U %S', '-o', report, ...argv] : argv;
  const started = performance.now();
  const child = spawn(file as string, args, {
    cwd,
    env,
    stdio: ['ignore', until ? 'pipe' : 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let stdout = '';
  let stopped = false;
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (until?.test(stdout)) {
      until = undefined;
      stopped = true;
      // SIGTERM to every process below `time` (under npx the command too: npx does not
      // pass it on, docs/serve.md "Starting it"), not to `time`, which then reports.
      setTimeout(() => {
        for (const pid of descendants(child.pid as number)) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {}
        }
      }, 2000);
    }
  });
  let polled = 0;
  const poll = useTime
    ? undefined
    : setInterval(() => {
        polled = Math.max(polled, vmHwmMb(child.pid as number));
      }, 20);
  let exitCode = await exited(child);
  // A server stopped by the SIGTERM above: npm ends with 143 for it, the command with 0.
  if (stopped && exitCode === 143) exitCode = 0;
  const wallSeconds = (performance.now() - started) / 1000;
  if (poll) clearInterval(poll);
  // `time` writes a line of its own first when the command fails; the figures are last.
  const figures = useTime
    ? (readFileSync(report, 'utf8').trim().split('\n').at(-1) ?? '').split(' ').map(Number)
    : [];
  const peakMb = useTime ? (figures[0] ?? 0) / 1024 : polled;
  const cpuSeconds = useTime ? (figures[1] ?? 0) + (figures[2] ?? 0) : undefined;
  if (useTime) rmSync(report, { force: true });
  if (exitCode !== 0) process.stderr.write(`${command} exited ${exitCode}:\n${stderr}\n`);
  return { command, route, peakMb, wallSeconds, cpuSeconds, exitCode, targetMb };
}

/** The processes below `root`, children first, read off /proc's parent pids. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parents) {
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
}

function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolvePromise(code ?? (signal ? 128 : 1)));
  });
}

/** The sandbox in a process of its own; resolves once its credentials file is written. */
async function startSandbox(dir: string): Promise<{ child: ChildProcess; credentials: string }> {
  const credentials = join(dir, 'sandbox-credentials.json');
  const child = spawn(
    node,
    [entry, 'sandbox', '--port', '0', '--businesses', '25', '--credentials-out', credentials],
    { cwd: dir, env: cleanEnv({}), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolvePromise, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`the sandbox exited ${code}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Credentials written')) resolvePromise();
    });
  });
  child.stdout?.resume();
  return { child, credentials };
}

/** `npm start`'s command line, from package.json, with the entry's path made absolute. */
function startScript(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  return String(pkg.scripts.start)
    .split(/\s+/)
    .map((word) => (word === 'bin/listings-sync.mjs' ? entry : word));
}

const work = mkdtempSync(join(tmpdir(), 'listings-sync-memory-'));
const results: Measure[] = [];
const sandbox = await startSandbox(work);
try {
  printHeader();
  for (const [index, route] of ROUTES.entries()) {
    const commands = join(work, `route-${index}`);
    mkdirSync(commands);
    const env = cleanEnv({
      PGLITE_DATA_DIR: join(commands, 'pglite'),
      LISTINGS_CREDENTIALS_FILE: sandbox.credentials,
    });
    const run = async (name: string, args: string[], until?: RegExp, extra = {}) => {
      const result = await measure(
        name,
        route.name,
        [...route.argv, ...args],
        // In the repository, where npx finds the package's bin; the data is PGLITE_DATA_DIR's.
        repo,
        { ...env, ...extra },
        400,
        until,
      );
      results.push(result);
      printRow(result);
    };
    await run('migrate', ['migrate']);
    if (index === 0) await run('check', ['check']);
    await run('sync (50 businesses)', ['sync']);
    await run('runs', ['runs']);
    if (index === 0) await run('report', ['report', '--out', join(commands, 'report.html')]);
    // serve is documented under node only, never npx (docs/serve.md, "Starting it"): npx
    // would exit on the SIGTERM before the server, leaving `time` npm's figure alone.
    if (route.argv[0] !== 'npx')
      await run('serve', ['serve'], /serve on http/, {
        PORT: '0',
        SYNC_SCHEDULE: 'off',
        WEBHOOK_SECRET: 'bench-memory-secret',
        LOG_LEVEL: 'warn',
      });
  }
  if (withDemo) {
    const demoDir = join(work, 'demo');
    mkdirSync(demoDir);
    // The demo keeps its data in ./.data/demo: started in a directory of its own.
    const result = await measure('demo', '`npm start`', startScript(), demoDir, cleanEnv({}), 600);
    results.push(result);
    printRow(result);
  }
} finally {
  sandbox.child.kill();
  rmSync(work, { recursive: true, force: true });
}
printSpread();
process.stdout.write(
  `\nNode ${process.version}, ${existsSync(TIME) ? 'peak RSS: ru_maxrss (/usr/bin/time; under npx the largest of npm and the command)' : 'peak RSS: VmHWM polled'}; ` +
    `each command a fresh process on a data directory made by the commands before it; ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}.\n`,
);
if (results.some((r) => r.exitCode !== 0)) process.exitCode = 1;

function printHeader(): void {
  process.stdout.write(
    '| command | route | peak RSS MB | target MB | wall s | CPU s |\n|---|---|---:|---:|---:|---:|\n',
  );
}

/** Per command run by more than one route: the lowest and highest peak, and their spread. */
function printSpread(): void {
  process.stdout.write(
    '\n| command | routes | lowest MB | highest MB | spread |\n|---|---:|---:|---:|---:|\n',
  );
  for (const command of new Set(results.map((r) => r.command))) {
    const peaks = results.filter((r) => r.command === command).map((r) => r.peakMb);
    if (peaks.length < 2) continue;
    const [low, high] = [Math.min(...peaks), Math.max(...peaks)];
    const spread = ((high - low) / low) * 100;
    process.stdout.write(
      `| ${command} | ${peaks.length} | ${low.toFixed(0)} | ${high.toFixed(0)} | ${spread.toFixed(1)} %${spread > 10 ? ' (over 10 %)' : ''} |\n`,
    );
  }
}

function printRow(r: Measure): void {
  const mark = r.exitCode !== 0 ? ` (exit ${r.exitCode})` : r.peakMb > r.targetMb ? ' (over)' : '';
  process.stdout.write(
    `| ${r.command} | ${r.route} | ${r.peakMb.toFixed(0)}${mark} | ≤ ${r.targetMb} | ${r.wallSeconds.toFixed(1)} | ${r.cpuSeconds?.toFixed(1) ?? '–'} |\n`,
  );
}
