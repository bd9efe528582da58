/**
 * `sync --exit-zero-on-partial`, as the nightly CronJobs run it (docs/deploy.md, "The
 * nightly sync"): a partial night exits 0, so the Job succeeds and no KubeJobFailed alert
 * fires, while `sync_runs` still records it `partial` for the `sync_failed` rule. An
 * interrupted run still exits 3, so that a Job's pod failure policy can tell it apart.
 * In-process (`main(argv, io)`), against the sandbox over real HTTP.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { attachWarehouse, runCli, startCli } from '../helpers/cli.ts';
import { createTestWarehouse, type TestWarehouse } from '../helpers/database.ts';

describe('sync --exit-zero-on-partial', () => {
  let dir: string;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;
  let warehouse: TestWarehouse | undefined;
  let attached: { detach(): void } | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exit-zero-partial-'));
    sandbox = await startSandbox({ seed: 11, accounts: 2, businessesPerAccount: 3, port: 0 });
    const [first, second] = sandbox.credentials;
    // The second credential's token is refused: every run ends partial.
    const file = join(dir, 'credentials.json');
    await writeFile(file, JSON.stringify([first, { ...second, authToken: 'sbx_refused_0000' }]));
    env = { LISTINGS_CREDENTIALS_FILE: file, PGLITE_DATA_DIR: './warehouse' };
    // The commands below are handed this warehouse, migrated, for ./warehouse.
    warehouse = await createTestWarehouse('pglite');
    attached = attachWarehouse(join(dir, 'warehouse'), warehouse);
    expect((await runCli(['migrate'], env, { cwd: dir })).code).toBe(0);
  });
  afterAll(async () => {
    attached?.detach();
    await warehouse?.close();
    await sandbox?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a partial run exits 3 without the flag and 0 with it, recorded partial both times', async () => {
    const plain = await runCli(['sync'], env, { cwd: dir });
    expect(plain.code, plain.stderr).toBe(3);
    expect(plain.stdout).toMatch(/^Sync partial in /);

    const flagged = await runCli(['sync', '--exit-zero-on-partial'], env, { cwd: dir });
    expect(flagged.code, flagged.stderr).toBe(0);
    expect(flagged.stdout).toMatch(/^Sync partial in /);

    const runs = await runCli(['runs'], env, { cwd: dir });
    expect(runs.stdout.match(/ partial\s+cli\s/g)).toHaveLength(2);
  });

  it('an interrupted run still exits 3 with the flag', async () => {
    const running = startCli(['sync', '--exit-zero-on-partial'], env, { cwd: dir });
    running.stop('SIGTERM');
    const stopped = await running.done;
    expect(stopped.code, stopped.stderr).toBe(3);
    const runs = await runCli(['runs'], env, { cwd: dir });
    expect(runs.stdout).toMatch(/ interrupted\s+cli\s/);
  });
});
