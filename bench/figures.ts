/**
 * `npm run bench:figures`: the README's time and memory figures (README.md, "Quick start";
 * docs/benchmarks.md, "The README's figures"), each measured several times, as a new user
 * meets them: the first demo (`npm start`'s command line in a fresh directory), the
 * second (the same again in that directory: it carries on, and on the same day adds
 * nothing) and `report` alone on that demo's warehouse (the bin, as `npx listings-sync report`
 * runs it, in the demo's directory: it falls back to ./.data/demo). Each run a fresh directory of its own; the three in turn.
 *
 * For each it prints the median and the lowest and highest of the runs: CPU seconds (user +
 * system), wall seconds and peak RSS (ru_maxrss through `/usr/bin/time`, required), then the
 * machine (CPUs, their model, Node) and the load average before and after. Not part of the
 * test suite: it takes minutes.
 *
 *   npm run bench:figures                 # 3 runs
 *   npm run bench:figures -- --runs 5
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const entry = join(repo, 'bin/listings-sync.mjs');
const TIME = '/usr/bin/time';
const runsAt = process.argv.indexOf('--runs');
const RUNS = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 3;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs takes a whole number ≥ 1');
if (!existsSync(TIME)) throw new Error(`${TIME} is needed (GNU time: apt-get install time)`);

/** A new user's environment: the project's node first, none of the warehouse's settings. */
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${join(repo, 'node_modules/.bin')}:${process.env['PATH'] ?? ''}`,
};
for (const name of Object.keys(env)) {
  if (/^(DATABASE_|PGLITE_|LISTINGS_|SYNC_|OTEL_|ALERT_|WEBHOOK_)/.test(name)) delete env[name];
}

interface Figure {
  cpu: number;
  wall: number;
  rssMb: number;
}

/** `npm start`'s command line (package.json), the entry's path made absolute. */
function startScript(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  return String(pkg.scripts.start)
    .split(/\s+/)
    .map((word) => (word === 'bin/listings-sync.mjs' ? entry : word));
}

async function measure(argv: string[], cwd: string): Promise<Figure> {
  const out = join(cwd, '.time');
  const started = performance.now();
  const child = spawn(TIME, ['-f', '%M %U %S', '-o', out, ...argv], {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const code = await new Promise<number>((done) => child.once('exit', (c) => done(c ?? 1)));
  const wall = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}:\n${stderr}`);
  const [rss, user, system] = (readFileSync(out, 'utf8').trim().split('\n').at(-1) ?? '')
    .split(' ')
    .map(Number);
  rmSync(out, { force: true });
  return { cpu: (user ?? 0) + (system ?? 0), wall, rssMb: (rss ?? 0) / 1024 };
}

const FIGURES = ['first demo', 'second demo', '`report`'] as const;
const results = new Map<string, Figure[]>(FIGURES.map((name) => [name, []]));
const loadBefore = loadavg();
for (let run = 1; run <= RUNS; run++) {
  const dir = mkdtempSync(join(tmpdir(), 'listings-sync-figures-'));
  try {
    results.get('first demo')?.push(await measure(startScript(), dir));
    results.get('second demo')?.push(await measure(startScript(), dir));
    // The bin as npx runs it (its shebang), in the demo's directory: it reads ./.data/demo.
    results.get('`report`')?.push(await measure([entry, 'report', '--out', 'r.html'], dir));
    process.stderr.write(`run ${run}/${RUNS} done\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const loadAfter = loadavg();

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
const cell = (xs: number[], digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

process.stdout.write(
  `| figure (${RUNS} runs: median (lowest–highest)) | CPU s | wall s | peak RSS MB |\n|---|---:|---:|---:|\n`,
);
for (const [name, figures] of results) {
  process.stdout.write(
    `| ${name} | ${cell(
      figures.map((f) => f.cpu),
      1,
    )} | ${cell(
      figures.map((f) => f.wall),
      1,
    )} | ${cell(
      figures.map((f) => f.rssMb),
      0,
    )} |\n`,
  );
}
const cpu = cpus();
process.stdout.write(
  `\n${cpu.length} CPUs (${cpu[0]?.model ?? '?'}), Node ${process.version}; load average ` +
    `${loadBefore.map((l) => l.toFixed(1)).join(' ')} before, ${loadAfter
      .map((l) => l.toFixed(1))
      .join(' ')} after.\n`,
);
