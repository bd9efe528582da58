/**
 * One runtime on every route (docs/running.md, "One runtime"): whichever documented command
 * line starts the CLI, the process that runs the command has the V8 flags of the process
 * entry (bin/listings-sync.mjs), in the same process (re-executed in place: same pid); a
 * flag given in NODE_OPTIONS wins; and on a Node older than package.json's engines field,
 * one line says what to do, exit 1. A probe preloaded through NODE_OPTIONS (`--import`)
 * writes, as the command's process exits, its pid, `process.execArgv` and V8's heap limit.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { missingFlags, NODE_FLAGS, tooOldLine } from '../../bin/listings-sync.mjs';
import { cliCacheEnv } from '../helpers/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'node_modules/.bin');
/** The user's PATH without the node_modules/.bin entries npm or vitest put first. */
const userPath = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.endsWith(`node_modules${sep}.bin`))
  .join(delimiter);

const work = mkdtempSync(join(tmpdir(), 'ls-e2e-runtime-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const probe = join(work, 'probe.mjs');
writeFileSync(
  probe,
  "import { getHeapStatistics } from 'node:v8';\n" +
    "process.on('exit', () => process.stderr.write(`PROBE ${JSON.stringify({ pid: process.pid, " +
    'execArgv: process.execArgv, heapLimit: getHeapStatistics().heap_size_limit })}\\n`));\n',
);
const PROBE = `--import=${pathToFileURL(probe).href}`;

interface Ran {
  code: number;
  pid: number | undefined;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { cwd: ROOT, env: { TMPDIR: tmpdir(), ...cliCacheEnv(), ...env } },
      (error, stdout, stderr) => {
        const code = error ? Number((error as { code?: unknown }).code ?? 1) : 0;
        resolve({ code, pid: child.pid, stdout, stderr });
      },
    );
  });
}

/** What the probe wrote: one line per process that ran to its exit. */
function probed(stderr: string): { pid: number; execArgv: string[]; heapLimit: number }[] {
  return [...stderr.matchAll(/^PROBE (.*)$/gm)].map((m) => JSON.parse(m[1] as string));
}

const node = join(BIN, 'node');
/** The documented routes, each as a file and its arguments, `--version` after them. */
const ROUTES: [string, string, string[], string][] = [
  ['node_modules/.bin/node bin/listings-sync.mjs', node, ['bin/listings-sync.mjs'], userPath],
  ['node_modules/.bin/node src/cli/main.ts', node, ['src/cli/main.ts'], userPath],
  // As npm scripts and npx run the bin: its shebang's `node`, node_modules/.bin first on PATH.
  [
    'bin/listings-sync.mjs (its shebang)',
    join(ROOT, 'bin/listings-sync.mjs'),
    [],
    `${BIN}${delimiter}${userPath}`,
  ],
];

describe('one runtime on every route', () => {
  it.each(ROUTES)(
    '%s runs the command with the entry’s V8 flags, in the same process',
    async (_, file, args, path) => {
      const ran = await run(file, [...args, '--version'], { PATH: path, NODE_OPTIONS: PROBE });
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
      const [last, ...more] = probed(ran.stderr);
      // Re-executed in place: one process, the one started, ran to its exit.
      expect(more).toEqual([]);
      expect(last?.pid).toBe(ran.pid);
      for (const flag of NODE_FLAGS) expect(last?.execArgv).toContain(flag);
    },
  );

  it('leaves a flag given in NODE_OPTIONS as it is given', async () => {
    const ran = await run(node, ['bin/listings-sync.mjs', '--version'], {
      PATH: userPath,
      NODE_OPTIONS: `--max-old-space-size=512 ${PROBE}`,
    });
    expect(ran.code, ran.stderr).toBe(0);
    const [seen] = probed(ran.stderr);
    expect(seen?.execArgv.some((a) => a.startsWith('--max-old-space-size'))).toBe(false);
    expect(seen?.execArgv).toContain('--liftoff-only');
    // 512 MB of old space against the entry's 256: the heap limit is at least 256 MB more.
    const capped = probed(
      (
        await run(node, ['bin/listings-sync.mjs', '--version'], {
          PATH: userPath,
          NODE_OPTIONS: PROBE,
        })
      ).stderr,
    )[0];
    expect((seen?.heapLimit ?? 0) - (capped?.heapLimit ?? 0)).toBeGreaterThanOrEqual(256 * 2 ** 20);
  });

  it('passes the command’s exit code through the re-exec', async () => {
    const ran = await run(node, ['src/cli/main.ts', 'sync', '--shard', 'nine'], { PATH: userPath });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('--shard must look like I/N');
  });

  it('names each missing flag by name, whatever the value or spelling given', () => {
    expect(missingFlags([], undefined)).toEqual([...NODE_FLAGS]);
    expect(missingFlags([...NODE_FLAGS], '')).toEqual([]);
    expect(missingFlags(['--no-liftoff-only'], '')).not.toContain('--liftoff-only');
    expect(
      missingFlags(['--max_old_space_size=100', '--liftoff-only'], '--max-semi-space-size=4'),
    ).toEqual(['--heap-growing-percent=50']);
  });
});

/** The machine's own node, when it is older than package.json's engines field allows. */
const engines = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    engines: { node: string };
  }
).engines.node;
const machineNode = userPath
  .split(delimiter)
  .map((dir) => join(dir, 'node'))
  .find((file) => existsSync(file));
const machineVersion = machineNode
  ? await run(machineNode, ['--version'], { PATH: userPath }).then((r) => r.stdout.trim())
  : undefined;
const olderNode = machineVersion && tooOldLine(machineVersion, engines) ? machineNode : undefined;
if (!olderNode) {
  process.stderr.write(
    `runtime.e2e: no node older than ${engines} on PATH (${machineVersion ?? 'none'}): the old-Node test is skipped\n`,
  );
}

describe.skipIf(!olderNode)(`on the machine's own Node (${machineVersion})`, () => {
  it('says in one line which Node is needed and how to get it, and exits 1', async () => {
    const ran = await run(olderNode!, ['bin/listings-sync.mjs', 'runs'], { PATH: userPath });
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toBe(
      `listings-sync needs Node 22.18 or later (package.json's engines); this is Node ` +
        `${machineVersion}. Run \`npm ci\` (it installs the project's Node 24), then \`npx listings-sync\`.\n`,
    );
  });
});
