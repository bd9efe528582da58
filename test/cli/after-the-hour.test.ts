/**
 * Past the first hour (issues 22 and 19): a refused credential among two is counted as
 * such in the summary and named by where it came from, and `check` never prints a base
 * URL's password. In-process (`runCli`), against the sandbox over real HTTP.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createCommandWarehouse, runCli } from '../helpers/cli.ts';

const WRONG_TOKEN = 'sbx_wrong_token_7731';

/**
 * A migrated, empty warehouse that commands given `dataDir` are handed, for the test
 * running (its `migrate` finds nothing to do): in memory rather than in a directory.
 */
async function attachWarehouseAt(dataDir: string): Promise<void> {
  const target = await createCommandWarehouse('pglite', { dataDir });
  onTestFinished(() => target.close());
}

describe('a refused credential, and base URLs with a password', () => {
  let dir: string;
  let sandbox: RunningSandbox;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'after-hour-'));
    sandbox = await startSandbox({ seed: 7, accounts: 2, businessesPerAccount: 3, port: 0 });
  });
  afterAll(async () => {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('wrong token on one of two credentials: the summary does not claim the whole, the error names the file entry', async () => {
    const [first, second] = sandbox.credentials;
    const file = join(dir, 'credentials.json');
    await writeFile(file, JSON.stringify([first, { ...second, authToken: WRONG_TOKEN }]));
    const env = { LISTINGS_CREDENTIALS_FILE: file, PGLITE_DATA_DIR: './wrong' };
    await attachWarehouseAt(join(dir, 'wrong'));
    expect((await runCli(['migrate'], env, { cwd: dir })).code).toBe(0);
    const run = await runCli(['sync'], env, { cwd: dir });
    expect(run.code).toBe(3);
    const headline = run.stdout.split('\n')[0];
    expect(headline).toMatch(/^Sync partial in /);
    expect(headline).toContain(
      `3 of 3 businesses of 1 of 2 credentials synced (credential "${second?.name}" failed)`,
    );
    expect(run.stdout).not.toMatch(/\b3 of 3 businesses synced/);
    expect(run.stdout).toContain(
      `Check the auth token and user e-mail of entry 1 ("${second?.name}") of ${file}.`,
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain(WRONG_TOKEN);

    // The run's stored error says the same, in `runs`.
    const runs = await runCli(['runs'], env, { cwd: dir });
    expect(runs.stdout).toContain(`credential "${second?.name}"`);
    expect(runs.stdout).toContain('Check the auth token');
    expect(runs.stdout).not.toContain(WRONG_TOKEN);
  });

  it('a refused credential from the variables names LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL', async () => {
    const [first] = sandbox.credentials;
    const env = {
      LISTINGS_BASE_URL: first?.baseUrl ?? '',
      LISTINGS_AUTH_TOKEN: WRONG_TOKEN,
      LISTINGS_USER_EMAIL: first?.userEmail ?? '',
      PGLITE_DATA_DIR: './inline',
    };
    await attachWarehouseAt(join(dir, 'inline'));
    expect((await runCli(['migrate'], env, { cwd: dir })).code).toBe(0);
    const run = await runCli(['sync'], env, { cwd: dir });
    expect(run.stdout).toContain('0 of 0 businesses of 0 of 1 credentials synced');
    expect(run.stdout).toContain(
      'Check the auth token and user e-mail of LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL.',
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain(WRONG_TOKEN);
  });

  it('`check` and `config` print a base URL with `user:secret@` masked', async () => {
    const [first] = sandbox.credentials;
    const withUser = first?.baseUrl.replace('http://', 'http://proxy-user:s3cr3t-pw@') ?? '';
    const file = join(dir, 'userinfo.json');
    await writeFile(file, JSON.stringify([{ ...first, baseUrl: withUser }]));
    const env = { LISTINGS_CREDENTIALS_FILE: file, PGLITE_DATA_DIR: './wrong' };
    const check = await runCli(['check'], env, { cwd: dir });
    expect(check.stdout).toMatch(
      new RegExp(
        `^credential ${first?.name}\\s+ok\\s+http://proxy-user:\\[REDACTED\\]@127\\.0\\.0\\.1:\\d+ answers`,
        'm',
      ),
    );
    const config = await runCli(['config'], env, { cwd: dir });
    expect(config.code).toBe(0);
    expect(config.stdout).toContain('http://proxy-user:[REDACTED]@127.0.0.1:');
    for (const out of [check, config]) {
      expect(`${out.stdout}${out.stderr}`).not.toContain('s3cr3t-pw');
    }
  });
});
