/**
 * `listings-sync migrate` and `sync` as a user runs them, in-process through
 * `main(argv, io)`: the exit code, what it prints, and what it leaves in the warehouse.
 * Signals and kill -9 need a real process: test/sync/signals.e2e.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/server.ts';
import { runCli as run, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';

describe.each(testBackends)('the sync command (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;

  beforeEach(async () => {
    fixture = await startSyncFixture(backend, {
      seed: 31,
      accounts: 2,
      businessesPerAccount: 8,
      faults: { latencyMs: 40 },
    });
    sandbox = fixture.sandbox;
  });
  afterEach(async () => {
    await fixture?.close();
  });

  /**
   * The warehouse the commands use, of this test alone: migrated, or empty for the
   * command to migrate (test/helpers/cli.ts, `startSyncFixture`).
   */
  async function prepareTarget(options: { migrate: boolean }): Promise<void> {
    env = await fixture.prepare(options);
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
