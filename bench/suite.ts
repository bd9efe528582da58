/**
 * `npm run bench:suite`: what the test suite costs (docs/development.md, "The suite's
 * cost"). It runs `vitest run` as `npm test` does, in a process of its own, with a JSON
 * report, and prints:
 *
 * - the wall time, and the CPU seconds (user + system) of vitest and every process it
 *   waited for (its workers, the CLIs and sandboxes the tests start: the children's times
 *   in /proc/self/stat, which a process gets once it has waited for a child). A
 *   PostgreSQL server's backends are not among them: they are the server's children;
 * - the machine (cores, model) and its load average before and after;
 * - the files and tests, passed and failed, and the 10 costliest files by their wall time
 *   in the report (a file's time there includes its waits).
 *
 * PGlite alone unless TEST_DATABASE_URL is set, as `npm test`. Nothing asserts: it prints
 * figures, and exits with vitest's code. Arguments after `--` go to vitest:
 *
 *   npm run bench:suite                                  # the whole suite, PGlite alone
 *   npm run bench:suite -- --project integration         # one project
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface FileResult {
  name: string;
  startTime: number;
  endTime: number;
  status: string;
}

interface Report {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numPassedTestSuites: number;
  numFailedTestSuites: number;
  testResults: FileResult[];
}

/** User + system seconds of the children this process has waited for (/proc/self/stat). */
function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // Fields after the command's closing parenthesis; cutime and cstime are fields 16 and 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[13]) + Number(fields[14]);
  // The kernel's USER_HZ, 100 on Linux.
  return ticks / 100;
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'ls-bench-suite-'));
  const out = join(dir, 'vitest.json');
  const before = { cpu: childrenCpuSeconds(), load: load(), at: performance.now() };
  const vitest = join(repo, 'node_modules/vitest/vitest.mjs');
  const child = spawn(
    process.execPath,
    [
      vitest,
      'run',
      '--reporter=dot',
      '--reporter=json',
      `--outputFile=${out}`,
      ...process.argv.slice(2),
    ],
    { cwd: repo, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const code = await new Promise<number>((done) => child.on('exit', (c) => done(c ?? 1)));
  const wall = (performance.now() - before.at) / 1000;
  const cpu = childrenCpuSeconds() - before.cpu;
  let report: Report | undefined;
  try {
    report = JSON.parse(readFileSync(out, 'utf8')) as Report;
  } catch {
    report = undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const cores = cpus();
  const lines = [
    '',
    `machine: ${cores.length} cores, ${cores[0]?.model ?? 'unknown'}; load average before ${before.load}, after ${load()}`,
    `backends: PGlite${process.env['TEST_DATABASE_URL'] ? ' and PostgreSQL (its backends’ CPU not counted)' : ' alone'}`,
    `wall: ${wall.toFixed(0)} s   CPU (vitest and the processes it waited for): ${cpu.toFixed(0)} s`,
  ];
  if (report) {
    lines.push(
      `files: ${report.numPassedTestSuites} passed, ${report.numFailedTestSuites} failed; ` +
        `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ` +
        `${report.numPendingTests + report.numTodoTests} skipped`,
      '',
      'costliest files (wall in the report, waits included):',
    );
    const costliest = [...report.testResults]
      .map((r) => ({ name: relative(repo, r.name), seconds: (r.endTime - r.startTime) / 1000 }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 10);
    for (const file of costliest)
      lines.push(`  ${file.seconds.toFixed(1).padStart(7)} s  ${file.name}`);
  } else {
    lines.push('no JSON report was written: the counts and files are missing');
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return code;
}

process.exitCode = await main();
