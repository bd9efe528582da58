/**
 * README.md, walked as a newcomer would: the quick start (the demo, shrunk, then line 2
 * exactly as written), the sandbox tutorial line by line (each command exits 0, and the
 * second sync after `clock/advance` adds a day), and every command of the command table
 * answers `--help` with its usage and the environment variables it reads.
 *
 * Substitutions, kept few and explicit: `npx listings-sync` (and `node_modules/.bin/node bin/listings-sync.mjs`) runs `main(argv, io)` of
 * src/cli/program.ts in this process, in the line's directory and with only the line's
 * environment; the sandbox listens on a free port instead of 4010 (tests run side by
 * side), and the curl line is pointed at it.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { attachWarehouse, type Finished, type Running, runCli } from '../helpers/cli.ts';
import { createTestWarehouse } from '../helpers/database.ts';
import { fences, parseCliLine, shellWords } from '../helpers/doc-commands.ts';
import { endWalk, observedDays, walkSandboxTutorial } from './tutorial-walk.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The fenced shell blocks of the README, in order. */
function shellBlocks(): string[] {
  return fences(README)
    .filter((f) => f.lang === 'sh')
    .map((f) => f.body);
}

/** `listings-sync …` in `cwd`, with only the environment given. */
function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Finished> {
  return runCli(args, env, { cwd });
}

describe('README: quick start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'readme-quick-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('line 1 is `npm ci && npm start`, and npm start is the demo', () => {
    const lines = (shellBlocks()[0] ?? '').trim().split('\n');
    expect(shellWords(lines[0] ?? '')).toEqual(['npm', 'ci', '&&', 'npm', 'start']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.start).toMatch(/bin\/listings-sync\.mjs demo$/);
  });

  it('line 2 works right after the demo, as written', async () => {
    // The demo, shrunk, where `npm start` puts it (./.data/demo under the project, on disk
    // as the demo leaves it; the test holds the warehouse).
    const warehouse = await createTestWarehouse('pglite');
    onTestFinished(() => warehouse.close());
    onTestFinished(attachWarehouse(join(dir, '.data/demo'), warehouse, { onDisk: true }).detach);
    await runDemo(loadConfig({}), silentLogger(), {
      days: 1,
      accounts: 1,
      businessesPerAccount: 2,
      warehouse,
      reportPath: join(dir, 'report.html'),
      endDate: '2026-04-02',
      write: () => {},
    });
    const line = ((shellBlocks()[0] ?? '').trim().split('\n')[1] ?? '').trim();
    const parsed = parseCliLine(line);
    expect(parsed?.args).toEqual(['report']);
    const run = await cli(parsed?.args ?? [], dir, parsed?.env);
    // README: read commands that fall back to the demo's warehouse say so.
    expect(run.stderr).toMatch(
      /^listings-sync: reading the demo's embedded PGlite database in \.\/\.data\/demo: /,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Report of the demo's embedded PGlite database in ./.data/demo");
  });
});

describe('README: the sandbox tutorial, line by line', () => {
  let dir: string;
  let sandbox: Running | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'readme-sandbox-'));
  });
  afterAll(async () => {
    sandbox?.stop('SIGTERM');
    await sandbox?.done;
    await endWalk(dir);
    await rm(dir, { recursive: true, force: true });
  });

  // Six commands in a row: the suite's limit (vitest.config.ts) only guards a hang.
  it('every line exits 0, and the sync after clock/advance records the next day', async () => {
    const block = shellBlocks().find((b) =>
      b.includes('node_modules/.bin/node bin/listings-sync.mjs sandbox'),
    );
    expect(block).toBeDefined();
    const lines = (block ?? '')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const ran = await walkSandboxTutorial(lines, dir, (started) => {
      sandbox = started;
    });
    expect(ran).toEqual(['sandbox', 'migrate', 'check', 'sync', 'curl', 'sync', 'runs']);
    // The sandbox's first day and the day after: two days of history, not one overwritten.
    expect(await observedDays(dir)).toEqual(['2026-01-01', '2026-01-02']);
  });
});

describe("README: the command table's commands", () => {
  const section = README.slice(README.indexOf('## Commands'), README.indexOf('Exit codes:'));
  const commands = [...section.matchAll(/^\| `listings-sync ([a-z-]+(?: apply)?)/gm)].map(
    (m) => m[1] as string,
  );

  it('lists the commands the CLI has', () => {
    expect(commands).toEqual(
      expect.arrayContaining([
        'migrate',
        'sync',
        'serve',
        'report',
        'check',
        'config',
        'runs',
        'demo',
        'api',
        'keywords apply',
        'sandbox',
        'alerts',
      ]),
    );
  });

  it.each(commands)(
    '`listings-sync %s --help` shows its usage and the variables it reads',
    async (command) => {
      const run = await cli([...command.split(' '), '--help'], ROOT);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Usage: listings-sync ${command}`);
      expect(run.stdout).toMatch(/\nEnvironment:/);
    },
  );
});
