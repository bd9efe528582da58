/**
 * The first hour of a new user, command by command, run in-process (`main(argv, io)`) in
 * a directory of their own: `report` after the demo reads the demo's warehouse (and creates nothing),
 * an empty warehouse says so, `check`, `config`, `runs` and `--version` do what their help
 * says, a misspelt variable is warned about, and a partial sync names what failed and
 * the warehouse it wrote to.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { attachWarehouse, createCommandWarehouse, type Finished, runCli } from '../helpers/cli.ts';
import { createTestWarehouse, type TestWarehouse } from '../helpers/database.ts';

/**
 * A migrated, empty warehouse that commands given `dataDir` are handed, for the test
 * running (its `migrate` finds nothing to do): in memory rather than in a directory.
 */
async function attachWarehouseAt(dataDir: string): Promise<void> {
  const target = await createCommandWarehouse('pglite', { dataDir });
  onTestFinished(() => target.close());
}

/** `listings-sync …` in `cwd`, with only the environment given. */
function cli(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Finished> {
  return runCli(args, env, { cwd });
}

/** What every read command that falls back to the demo's warehouse says, on standard error. */
const FALLBACK =
  "listings-sync: reading the demo's embedded PGlite database in ./.data/demo: neither DATABASE_URL nor PGLITE_DATA_DIR is set, and ./.data/pglite holds no database (commands that write never fall back).\n";

describe('after the demo, in a fresh directory', () => {
  let dir: string;
  let warehouse: TestWarehouse | undefined;
  let attached: { detach(): void } | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'first-hour-'));
    // The demo's warehouse, ./.data/demo on disk as `npm start` leaves it, is the test's.
    warehouse = await createTestWarehouse('pglite');
    attached = attachWarehouse(join(dir, '.data/demo'), warehouse, { onDisk: true });
    await runDemo(loadConfig({}), silentLogger(), {
      days: 2,
      accounts: 1,
      businessesPerAccount: 2,
      warehouse,
      reportPath: join(dir, 'demo-report.html'),
      endDate: '2026-03-10',
      write: () => {},
    });
  });

  afterAll(async () => {
    attached?.detach();
    await warehouse?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('`report` reads the demo warehouse, says so, and creates no other database', async () => {
    const run = await cli(['report', '--out', 'report.html'], dir);
    expect(run.stderr).toBe(FALLBACK);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^Report of the demo's embedded PGlite database in \.\/\.data\/demo \(2026-03-0\d to 2026-03-10\) written to /,
    );
    expect(existsSync(join(dir, 'report.html'))).toBe(true);
    expect(existsSync(join(dir, '.data/pglite'))).toBe(false);
  });

  it('`runs` lists the demo syncs, newest first, with status, duration and counts', async () => {
    const run = await cli(['runs', '--limit', '2'], dir);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe("Sync runs in the demo's embedded PGlite database in ./.data/demo:");
    expect(lines[1]).toMatch(
      /^started \(UTC\)\s+upstream day\s+status\s+trigger\s+duration\s+businesses/,
    );
    const rows = lines.slice(3);
    expect(rows).toHaveLength(2);
    // The upstream day each synced: the demo's last two.
    expect(rows[0]).toMatch(/ 2026-03-10\s+succeeded\s+demo\s+\d+(\.\d)? s\s+2\/2\s+\d+/);
    expect(rows[1]).toMatch(/ 2026-03-09\s+succeeded\s+demo\s+\d+(\.\d)? s\s+2\/2\s+\d+/);
  });

  it.each([
    ['report', '--out', 'again.html'],
    ['runs'],
    ['alerts'],
    ['alerts', '--pending'],
    ['raw', 'stats'],
    ['raw', 'show', '--business', 'FIRST'],
  ])(
    '`%s …` falls back to the demo and says so, in the words every read command uses',
    async (...args) => {
      const first = await warehouse!.db
        .selectFrom('businesses')
        .select('business_id')
        .orderBy('business_id')
        .executeTakeFirstOrThrow();
      const run = await cli(
        args.map((a) => (a === 'FIRST' ? String(first.business_id) : a)),
        dir,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr.split(/(?<=\n)/).filter((line) => line.includes('./.data/demo'))).toEqual([
        FALLBACK,
      ]);
    },
  );

  it('with PGLITE_DATA_DIR set, reads exactly that one and never the demo', async () => {
    const run = await cli(['report'], dir, { PGLITE_DATA_DIR: './elsewhere' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'There is no warehouse yet: the embedded PGlite database in ./elsewhere does not exist.',
    );
    expect(existsSync(join(dir, 'elsewhere'))).toBe(false);
  });
});

describe('a fresh directory with no demo', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'first-hour-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([['report'], ['alerts'], ['runs']])(
    '`%s` exits 1 naming what to run, and creates no empty database',
    async (command) => {
      const run = await cli([command], dir);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('There is no warehouse yet');
      expect(existsSync(join(dir, '.data'))).toBe(false);
    },
  );

  it('`report` on a migrated but empty warehouse says it holds no data and exits 1', async () => {
    await attachWarehouseAt(join(dir, 'empty'));
    const env = { PGLITE_DATA_DIR: './empty' };
    expect((await cli(['migrate'], dir, env)).code).toBe(0);
    const run = await cli(['report'], dir, env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('holds no data yet: nothing to report');
    expect(existsSync(join(dir, 'report.html'))).toBe(false);
  });

  it('`--version` prints the package version', async () => {
    const run = await cli(['--version'], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('0.1.0\n');
  });

  it('a misspelt variable is warned about, naming the one it resembles', async () => {
    // `report` does not read PORT: the typo changes nothing it does, so it only warns.
    const run = await cli(['report'], dir, { PROT: '9000' });
    expect(run.stderr).toContain(
      'listings-sync: warning: PROT is set, but listings-sync reads no such variable: did you mean PORT? (PORT is not set, so its default applies)',
    );
  });

  it('a misspelt variable that would leave the command on a default stops it, naming both', async () => {
    const run = await cli(['report'], dir, { DATABSE_URL: 'postgres://u:hunter2@db/w' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'listings-sync: DATABSE_URL is set, but listings-sync reads no such variable: did you mean DATABASE_URL? `report` reads DATABASE_URL, which is not set, so it would run on its default',
    );
    expect(run.stderr).not.toContain('hunter2');

    // `sync` would have written to the embedded warehouse: it creates none.
    const fresh = await mkdtemp(join(tmpdir(), 'first-hour-typo-'));
    try {
      const sync = await cli(['sync'], fresh, {
        DATABSE_URL: 'postgres://u:hunter2@db/w',
        LISTINGS_BASE_URL: 'http://127.0.0.1:9',
        LISTINGS_AUTH_TOKEN: 't',
        LISTINGS_USER_EMAIL: 'a@b.c',
      });
      expect(sync.code).toBe(1);
      expect(sync.stderr).toContain('did you mean DATABASE_URL? `sync` reads DATABASE_URL');
      expect(existsSync(join(fresh, '.data'))).toBe(false);

      // `config` still prints, the warning among its lines.
      const config = await cli(['config'], fresh, { DATABSE_URL: 'postgres://u:hunter2@db/w' });
      expect(config.code).toBe(0);
      expect(config.stdout).toContain('warning: DATABSE_URL is set');
      expect(config.stdout).not.toContain('hunter2');
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });

  it('`config` shows each value and its source, secrets masked', async () => {
    const run = await cli(['config'], dir, {
      DATABASE_URL: 'postgres://warehouse:s3cret-pw@db.example:5432/w',
      LISTINGS_BASE_URL: 'https://listings.example.com',
      LISTINGS_AUTH_TOKEN: 'tok-abcdef-123456',
      LISTINGS_USER_EMAIL: 'me@example.com',
      SYNC_CONCURRENCY: '4',
      ALERT_SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T000/B000/XXXXSECRET',
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('s3cret-pw');
    expect(run.stdout).not.toContain('tok-abcdef-123456');
    expect(run.stdout).not.toContain('XXXXSECRET');
    const row = (name: string) =>
      run.stdout
        .split('\n')
        .find((line) => line.startsWith(`${name} `))
        ?.split(/\s{2,}/);
    expect(row('DATABASE_URL')).toEqual([
      'DATABASE_URL',
      'postgres://warehouse:[REDACTED]@db.example:5432/w',
      'env',
    ]);
    expect(row('SYNC_CONCURRENCY')).toEqual(['SYNC_CONCURRENCY', '4', 'env']);
    expect(row('SYNC_ACCOUNT_CONCURRENCY')).toEqual(['SYNC_ACCOUNT_CONCURRENCY', '8', 'default']);
    expect(row('LISTINGS_AUTH_TOKEN')).toEqual([
      'LISTINGS_AUTH_TOKEN',
      '[set, 17 characters]',
      'env',
    ]);
    expect(row('ALERT_SLACK_WEBHOOK_URL')).toEqual([
      'ALERT_SLACK_WEBHOOK_URL',
      'https://hooks.slack.com/[REDACTED]',
      'env',
    ]);
  });
});

describe('check, and a partial sync, against the sandbox', () => {
  let dir: string;
  let sandbox: RunningSandbox;
  let credentialsFile: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'first-hour-'));
    sandbox = await startSandbox({ seed: 5, accounts: 2, businessesPerAccount: 2, port: 0 });
    credentialsFile = join(dir, 'credentials.json');
    await writeFile(credentialsFile, JSON.stringify(sandbox.credentials));
  });
  afterAll(async () => {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('`check` fails on a warehouse not yet migrated, creating nothing, then passes', async () => {
    const env = { LISTINGS_CREDENTIALS_FILE: credentialsFile, PGLITE_DATA_DIR: './wh' };
    const before = await cli(['check'], dir, env);
    expect(before.code).toBe(1);
    expect(before.stdout).toMatch(/^warehouse\s+FAILED\s+There is no warehouse yet/m);
    for (const c of sandbox.credentials) {
      expect(before.stdout).toMatch(new RegExp(`^credential ${c.name}\\s+ok\\s+`, 'm'));
    }
    expect(existsSync(join(dir, 'wh'))).toBe(false);

    expect((await cli(['migrate'], dir, env)).code).toBe(0);
    const after = await cli(['check'], dir, env);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/^schema\s+ok\s+up to date$/m);
    expect(after.stdout).not.toContain('FAILED');
  });

  it('`check` names a credential whose token is refused, without printing the token', async () => {
    const bad = join(dir, 'bad.json');
    const [first] = sandbox.credentials;
    await writeFile(bad, JSON.stringify([{ ...first, authToken: 'wrong-token-0987' }]));
    const run = await cli(['check'], dir, {
      LISTINGS_CREDENTIALS_FILE: bad,
      PGLITE_DATA_DIR: './wh',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`^credential ${first?.name}\\s+FAILED\\s+\\S`, 'm'));
    expect(run.stdout).not.toContain('wrong-token-0987');
  });

  it('a partial sync lists the business, stream and reason, and names its warehouse', async () => {
    await attachWarehouseAt(join(dir, 'partial'));
    const env = { LISTINGS_CREDENTIALS_FILE: credentialsFile, PGLITE_DATA_DIR: './partial' };
    expect((await cli(['migrate'], dir, env)).code).toBe(0);
    sandbox.setFaults({
      ...DEFAULT_FAULTS,
      script: Array(8).fill({ kind: 'non-json', operation: 'list_listings' }),
    });
    try {
      const run = await cli(['sync'], dir, env);
      expect(run.code).toBe(3);
      expect(run.stdout).toMatch(
        /^Sync partial in [\d.]+s \(run [\w-]+\) into the embedded PGlite database in \.\/partial: /,
      );
      expect(run.stdout).toContain('What failed (the rest of each business committed):');
      expect(run.stdout).toMatch(/^\S+\s+\d+\s+listings\s+\S.*$/m);
      const runs = await cli(['runs'], dir, env);
      expect(runs.code).toBe(0);
      expect(runs.stdout).toMatch(/ partial\s+cli\s/);
      expect(runs.stdout).toMatch(/business \d+ listings: \S/);
    } finally {
      sandbox.setFaults(DEFAULT_FAULTS);
    }
  });
});
