/**
 * `npm run bench:answer-shape`: a sync's peak memory does not depend on one answer's shape
 * (docs/configuration.md, "Limits"). Each case is one `listings-sync sync` process, started
 * as production starts it (the process entry's heap flags, bench/node-flags.ts), against a
 * sandbox whose first answer of one operation is reshaped; its peak RSS is read from
 * /proc (VmHWM) while it runs. Nothing asserts: it prints figures.
 *
 *   npm run bench:answer-shape                 # PostgreSQL at BENCH_DATABASE_URL, else 127.0.0.1:5432
 *
 * Cases: every answer as generated (the floor); answers at the bounds (200 keywords × 50
 * sites in one rankings answer: 10,000 series, the largest a business may bring); and
 * answers over them (2,000 × 50, each within its own bound but 100,000 series) (100,000 keywords × 4 sites, about 7 MB, the answer
 * that once ended in "Reached heap limit"; 200,000 reviews; 100,000 listings), which are
 * refused before they are expanded.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { ScriptedFault } from '../src/sandbox/faults.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { productionNodeFlags } from './node-flags.ts';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'src/cli/main.ts');
const HEAP_FLAGS = productionNodeFlags();

interface Case {
  name: string;
  fault?: ScriptedFault;
}

const CASES: Case[] = [
  { name: 'every answer as generated' },
  {
    name: 'rankings: 200 keywords × 50 sites (at the bounds)',
    fault: { kind: 'oversized', operation: 'get_rankings', count: 200, sitesPerKeyword: 50 },
  },
  {
    name: 'rankings: 2,000 keywords × 50 sites (over the series bound)',
    fault: { kind: 'oversized', operation: 'get_rankings', count: 2_000, sitesPerKeyword: 50 },
  },
  {
    name: 'rankings: 100,000 keywords × 4 sites (over)',
    fault: { kind: 'oversized', operation: 'get_rankings', count: 100_000, sitesPerKeyword: 4 },
  },
  {
    name: 'reviews: 200,000 (over)',
    fault: { kind: 'oversized', operation: 'list_reviews', count: 200_000 },
  },
  {
    name: 'listings: 100,000 (over)',
    fault: { kind: 'oversized', operation: 'list_listings', count: 100_000 },
  },
];

/** The peak resident set of `pid` so far, in bytes (VmHWM), or 0 once it is gone. */
function peakRss(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function runCommand(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; peak: number; seconds: number; stdout: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...HEAP_FLAGS, CLI, command], {
    env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.resume();
  let peak = 0;
  const poll = setInterval(() => {
    if (child.pid) peak = Math.max(peak, peakRss(child.pid));
  }, 20);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(poll);
  return { code, peak, seconds: (performance.now() - started) / 1000, stdout };
}

const url = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = new pg.Client({ connectionString: url });
try {
  await admin.connect();
} catch {
  process.stderr.write(
    `bench: PostgreSQL does not answer at ${new URL(url).host} (set BENCH_DATABASE_URL)\n`,
  );
  process.exit(1);
}

const sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 20, port: 0 });
const dir = mkdtempSync(join(tmpdir(), 'listings-sync-shape-'));
const credentialsFile = join(dir, 'credentials.json');
writeFileSync(credentialsFile, JSON.stringify(sandbox.credentials));

const rows: string[][] = [];
try {
  for (const [index, testCase] of CASES.entries()) {
    const schema = `bench_shape_${process.pid}_${index}`;
    await admin.query(`create schema ${schema}`);
    try {
      const target = new URL(url);
      target.searchParams.set('options', `-c search_path=${schema}`);
      const env = { DATABASE_URL: target.toString(), LISTINGS_CREDENTIALS_FILE: credentialsFile };
      await runCommand('migrate', env);
      sandbox.setFaults({ script: testCase.fault ? [testCase.fault] : [] });
      const run = await runCommand('sync', env);
      const status = /status (\w+)|\b(succeeded|partial|failed)\b/.exec(run.stdout);
      rows.push([
        testCase.name,
        `${(run.peak / 1024 / 1024).toFixed(0)} MB`,
        String(run.code),
        status?.[1] ?? status?.[2] ?? '?',
        `${run.seconds.toFixed(1)} s`,
      ]);
      process.stderr.write(`bench: ${testCase.name}: ${rows.at(-1)?.slice(1).join(', ')}\n`);
    } finally {
      await admin.query(`drop schema ${schema} cascade`);
    }
  }
} finally {
  await sandbox.close();
  await admin.end();
}

const header = ['case (20 businesses, one answer reshaped)', 'peak RSS', 'exit', 'run', 'wall'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
process.stdout.write(
  `Peak memory by answer shape, heap flags ${HEAP_FLAGS.join(' ')}:\n${line(header)}\n${rows.map(line).join('\n')}\n`,
);
