/**
 * `listings-sync migrate` and `sync` as a user runs them, in-process through
 * `main(argv, io)`: the exit code, what it prints, and what it leaves in the warehouse.
 * Signals and kill -9 need a real process: test/e2e/sync-signals.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runCli as run } from '../helpers/cli.ts';
import {
  createPgliteDataDir,
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

/** Environment that points a command at the test's warehouse. */
function databaseEnv(warehouse: TestWarehouse, pgliteDir: string): Record<string, string> {
  if (warehouse.kind === 'postgres') {
    const url = new URL(warehouse.databaseUrl!);
    url.searchParams.set('options', `-c search_path=${warehouse.searchPath}`);
    return { DATABASE_URL: url.toString() };
  }
  return { PGLITE_DATA_DIR: pgliteDir };
}

describe.each(testBackends)('the sync command (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let target: TestWarehouse | undefined;
  let env: Record<string, string>;
  let pgliteDir: string;
  let credentialsFile: string;

  beforeEach(async () => {
    sandbox = await startSandbox({
      seed: 31,
      accounts: 2,
      businessesPerAccount: 8,
      port: 0,
      faults: { latencyMs: 40 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'ls-cli-'));
    pgliteDir = join(dir, 'pglite');
    credentialsFile = join(dir, 'credentials.json');
    writeFileSync(credentialsFile, JSON.stringify(sandbox.credentials));
  });
  afterEach(async () => {
    await target?.close();
    target = undefined;
    await sandbox?.close();
  });

  /**
   * The warehouse the commands use, of this test alone: migrated, or empty for the
   * command to migrate. PostgreSQL: a database of its own; PGlite: a data directory
   * (one PGlite per directory at a time, so none is kept open here while a command runs).
   */
  async function prepareTarget(options: { migrate: boolean }): Promise<void> {
    if (backend === 'postgres') {
      target = await createTestWarehouse(backend, options);
    } else {
      await createPgliteDataDir(pgliteDir, options);
    }
    env = {
      ...(target ? databaseEnv(target, pgliteDir) : { PGLITE_DATA_DIR: pgliteDir }),
      LISTINGS_CREDENTIALS_FILE: credentialsFile,
    };
  }

  it('refuses to sync an unmigrated warehouse, naming the fix (exit 1)', async () => {
    await prepareTarget({ migrate: false });
    const result = await run(['sync'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Run `listings-sync migrate` first');
  });

  it('migrates an empty warehouse, then finds nothing to do', async () => {
    await prepareTarget({ migrate: false });
    const migrated = await run(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(/Applied \d+ migration/);
    const again = await run(['migrate'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('already up to date');
  });

  it('exits 3 when one credential has a wrong token, naming it but never its token', async () => {
    await prepareTarget({ migrate: true });
    const bad = {
      ...sandbox.credentials[0]!,
      name: 'wrong-token',
      authToken: 'sbx_wrong_token_for_test_77',
      // Another account: one account under two names is refused at config time.
      userEmail: 'wrong-token@example.com',
    };
    const file = join(mkdtempSync(join(tmpdir(), 'ls-cli-')), 'credentials.json');
    writeFileSync(file, JSON.stringify([...sandbox.credentials, bad]));
    const result = await run(['sync'], { ...env, LISTINGS_CREDENTIALS_FILE: file });
    expect(result.code).toBe(3);
    expect(result.stdout).toContain('Sync partial');
    expect(result.stdout).toContain('wrong-token');
    expect(result.stderr).toContain('"credential":"wrong-token"');
    for (const output of [result.stdout, result.stderr]) {
      expect(output).not.toContain(bad.authToken);
      for (const credential of sandbox.credentials)
        expect(output).not.toContain(credential.authToken);
    }
  });

  it('exits 2 on usage errors and 1 on bad configuration', async () => {
    await prepareTarget({ migrate: true });
    const usage = await run(['sync', '--streams', 'listings,gossip'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--streams');
    expect((await run(['sync', '--no-such-option'], env)).code).toBe(2);
    expect((await run(['sync', '--account', 'nobody'], env)).stderr).toContain(
      'no such credential',
    );
    const config = await run(['sync'], { ...env, SYNC_CONCURRENCY: 'many' });
    expect(config.code).toBe(1);
    expect(config.stderr).toContain('SYNC_CONCURRENCY must be a whole number');
  });
});
