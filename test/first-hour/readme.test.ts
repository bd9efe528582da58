/**
 * README.md, walked as a newcomer would: the quick start (the demo, shrunk, then line 2
 * exactly as written), the sandbox tutorial line by line (each command exits 0, and the
 * second sync after `clock/advance` adds a day), and every command of the command table
 * answers `--help` with its usage and the environment variables it reads.
 *
 * Substitutions, kept few and explicit: `npx listings-sync` (and `node_modules/.bin/node src/cli/main.ts`) runs `main(argv, io)` of
 * src/cli/main.ts in this process, in the line's directory and with only the line's
 * environment; the sandbox listens on a free port instead of 4010 (tests run side by
 * side), and the curl line is pointed at it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { openWarehouse } from '../../src/warehouse/connection.ts';
import { type Finished, type Running, runCli, startCli } from '../helpers/cli.ts';
import { fences, parseCliLine, shellWords } from '../helpers/doc-commands.ts';

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
    expect(pkg.scripts.start).toMatch(/src\/cli\/main\.ts demo$/);
  });

  it('line 2 works right after the demo, as written', async () => {
    // The demo, shrunk, where `npm start` puts it (./.data/demo under the project).
    await runDemo(loadConfig({}), silentLogger(), {
      days: 1,
      accounts: 1,
      businessesPerAccount: 2,
      dataDir: join(dir, '.data/demo'),
      reportPath: join(dir, 'report.html'),
      endDate: '2026-04-02',
      write: () => {},
    });
    const line = ((shellBlocks()[0] ?? '').trim().split('\n')[1] ?? '').trim();
    const parsed = parseCliLine(line);
    expect(parsed?.args).toEqual(['report']);
    const run = await cli(parsed?.args ?? [], dir, parsed?.env);
    expect(run.stderr).toBe('');
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
    await rm(dir, { recursive: true, force: true });
  });

  // Six commands in a row, most a PGlite open: on a loaded 2-core machine this one test
  // may take longer than the suite's 30 s.
  it('every line exits 0, and the sync after clock/advance records the next day', async () => {
    const block = shellBlocks().find((b) =>
      b.includes('node_modules/.bin/node src/cli/main.ts sandbox'),
    );
    expect(block).toBeDefined();
    const lines = (block ?? '')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    let origin = '';
    const ran: string[] = [];
    for (const line of lines) {
      if (line.startsWith('curl ')) {
        const words = shellWords(line.replaceAll('localhost:4010', origin.replace('http://', '')));
        const { stdout } = await promisify(execFile)(words[0] as string, words.slice(1), {
          cwd: dir,
        });
        expect(JSON.parse(stdout)).toHaveProperty('date');
        ran.push('curl');
        continue;
      }
      const parsed = parseCliLine(line);
      expect(parsed, line).not.toBeNull();
      const { env, args } = parsed as { env: Record<string, string>; args: string[] };
      if (args[0] === 'sandbox') {
        const port = args.indexOf('--port');
        if (port >= 0) args[port + 1] = '0';
        sandbox = startCli(args, env, { cwd: dir });
        await sandbox.waitForStdout(/Serving;/);
        const out = sandbox.stdout();
        origin = /base URL: (http:\/\/\S+)/.exec(out)?.[1] ?? '';
        expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        expect(JSON.parse(await readFile(join(dir, 'credentials.json'), 'utf8'))).toHaveLength(2);
        ran.push('sandbox');
        continue;
      }
      const run = await cli(args, dir, env);
      // On failure, the line and what it printed say why.
      expect({
        line,
        code: run.code,
        output: run.code === 0 ? '' : run.stdout + run.stderr,
      }).toEqual({
        line,
        code: 0,
        output: '',
      });
      ran.push(args[0] as string);
    }
    expect(ran).toEqual(['sandbox', 'migrate', 'check', 'sync', 'curl', 'sync', 'runs']);

    const warehouse = await openWarehouse({ pgliteDataDir: join(dir, '.data/pglite') });
    try {
      const days = await sql<{ day: string }>`
        select distinct observed_on as day from rank_observations order by 1`.execute(warehouse.db);
      // The sandbox's first day and the day after: two days of history, not one overwritten.
      expect(days.rows.map((r) => r.day)).toEqual(['2026-01-01', '2026-01-02']);
    } finally {
      await warehouse.close();
    }
  }, 90_000);
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
