/**
 * `npm run bench:memory`: the embedded default's memory, command by command
 * (docs/benchmarks.md, "Memory on PGlite").
 *
 * Each command runs as a user runs it, as a real child process on a fresh data directory
 * in a temporary directory: the CLI through its own shebang (src/cli/main.ts, with the V8
 * flags written there) and the demo through `npm start`'s command line (package.json's
 * `start` script). In order: `migrate` (the first open of an empty directory: PGlite's
 * initdb, then the migrations), `check`, a `sync` of 50 businesses (2 accounts × 25) from
 * a sandbox running in a process of its own (its memory is not the sync's), `runs`,
 * `report`, then the demo (30 days of 50 businesses, in a fresh directory of its own).
 *
 * For each it prints the process's peak resident set (ru_maxrss through `/usr/bin/time`,
 * or, without it, /proc/<pid>/status's VmHWM polled until the process exits), its wall
 * time and its CPU seconds (user + system, with `/usr/bin/time` only), against the targets of the issue (≤ 400 MB per command, ≤ 600 MB for the
 * demo). Nothing here asserts: it prints figures, and exits 1 if a command failed.
 *
 *   npm run bench:memory                  # every command and the demo
 *   npm run bench:memory -- --no-demo     # the commands only (about a minute less)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(repo, 'src/cli/main.ts');
const TIME = '/usr/bin/time';
const withDemo = !process.argv.includes('--no-demo');

/** The repository's node first on PATH, as `npx` and `npm start` put it. */
const PATH = `${join(repo, 'node_modules/.bin')}:${process.env.PATH ?? ''}`;

interface Measure {
  command: string;
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
 * ru_maxrss of the process itself (`time` forks it; `env -S` of the shebang execs node in
 * the same process); without, the last VmHWM read before it exits.
 */
async function measure(
  command: string,
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  targetMb: number,
): Promise<Measure> {
  const report = join(cwd, `.time-${process.pid}`);
  const useTime = existsSync(TIME);
  const [file, ...args] = useTime ? [TIME, '-f', '%M %U %S', '-o', report, ...argv] : argv;
  const started = performance.now();
  const child = spawn(file as string, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let polled = 0;
  const poll = useTime
    ? undefined
    : setInterval(() => {
        polled = Math.max(polled, vmHwmMb(child.pid as number));
      }, 20);
  const exitCode = await exited(child);
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
  return { command, peakMb, wallSeconds, cpuSeconds, exitCode, targetMb };
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
    cli,
    ['sandbox', '--port', '0', '--businesses', '25', '--credentials-out', credentials],
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

/** `npm start`'s command line, from package.json, with the CLI's path made absolute. */
function startScript(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  return String(pkg.scripts.start)
    .split(/\s+/)
    .map((word) => (word === 'src/cli/main.ts' ? cli : word));
}

const work = mkdtempSync(join(tmpdir(), 'listings-sync-memory-'));
const results: Measure[] = [];
const sandbox = await startSandbox(work);
try {
  const commands = join(work, 'commands');
  mkdirSync(commands);
  const env = cleanEnv({
    PGLITE_DATA_DIR: join(commands, 'pglite'),
    LISTINGS_CREDENTIALS_FILE: sandbox.credentials,
  });
  const run = async (name: string, args: string[]) => {
    const result = await measure(name, [cli, ...args], commands, env, 400);
    results.push(result);
    printRow(result);
  };
  printHeader();
  await run('migrate', ['migrate']);
  await run('check', ['check']);
  await run('sync (50 businesses)', ['sync']);
  await run('runs', ['runs']);
  await run('report', ['report', '--out', join(commands, 'report.html')]);
  if (withDemo) {
    const demoDir = join(work, 'demo');
    mkdirSync(demoDir);
    const result = await measure('demo (`npm start`)', startScript(), demoDir, cleanEnv({}), 600);
    results.push(result);
    printRow(result);
  }
} finally {
  sandbox.child.kill();
  rmSync(work, { recursive: true, force: true });
}
process.stdout.write(
  `\nNode ${process.version}, ${existsSync(TIME) ? 'peak RSS: ru_maxrss (/usr/bin/time)' : 'peak RSS: VmHWM polled'}; ` +
    'each command a fresh process on a data directory made by the commands before it.\n',
);
if (results.some((r) => r.exitCode !== 0)) process.exitCode = 1;

function printHeader(): void {
  process.stdout.write(
    '| command | peak RSS MB | target MB | wall s | CPU s |\n|---|---:|---:|---:|---:|\n',
  );
}

function printRow(r: Measure): void {
  const mark = r.exitCode !== 0 ? ` (exit ${r.exitCode})` : r.peakMb > r.targetMb ? ' (over)' : '';
  process.stdout.write(
    `| ${r.command} | ${r.peakMb.toFixed(0)}${mark} | ≤ ${r.targetMb} | ${r.wallSeconds.toFixed(1)} | ${r.cpuSeconds?.toFixed(1) ?? '–'} |\n`,
  );
}
