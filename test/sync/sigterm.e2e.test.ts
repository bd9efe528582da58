/**
 * A sync that ends when told to (issue 19): a real `listings-sync sync` process, held by
 * an answer the sandbox drips a byte a second, is sent SIGTERM. It aborts the request,
 * records its run `interrupted` and exits 3 on its own; a second SIGTERM right after the
 * first still records `interrupted` before the process exits. Signals are what only a
 * process shows, so this runs the CLI as a child. Each step waits for the event that says
 * the process got there (the sandbox's request line, a line on standard error, the exit);
 * a process that never gets there fails at the test's timeout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { spawnCli, waitForStderr } from '../helpers/cli.ts';
import {
  createPgliteDataDir,
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';
import { sandboxRequests } from '../helpers/sandbox-requests.ts';

describe.each(testBackends)('sync on SIGTERM (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let dir: string;
  let warehouse: TestWarehouse | undefined;
  const requests = sandboxRequests();

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 5,
      accounts: 1,
      businessesPerAccount: 3,
      port: 0,
      logger: requests.logger,
    });
    dir = mkdtempSync(join(tmpdir(), 'ls-e2e-sigterm-'));
    writeFileSync(join(dir, 'creds.json'), JSON.stringify(sandbox.credentials));
  });
  afterEach(async () => {
    sandbox.setFaults({ ...DEFAULT_FAULTS, script: [] });
    await warehouse?.close();
    warehouse = undefined;
  });
  afterAll(async () => {
    await sandbox?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The child's warehouse settings, and a way to read its `sync_runs` once it exited. */
  async function target(name: string): Promise<{
    env: Record<string, string>;
    open: () => Promise<Warehouse>;
  }> {
    if (backend === 'pglite') {
      const dataDir = join(dir, name);
      await createPgliteDataDir(dataDir);
      return {
        env: { PGLITE_DATA_DIR: dataDir },
        open: async () => {
          warehouse = await openWarehouse({ pgliteDataDir: dataDir });
          return warehouse;
        },
      };
    }
    const created = await createTestWarehouse(backend);
    warehouse = created;
    const url = new URL(created.databaseUrl!);
    if (created.searchPath) url.searchParams.set('options', `-c search_path=${created.searchPath}`);
    return { env: { DATABASE_URL: url.toString() }, open: async () => created };
  }

  async function startHeld(name: string) {
    const { env, open } = await target(name);
    // Every listings read of the run drips: only the stop ends it soon.
    sandbox.setFaults({
      script: Array.from({ length: 3 }, () => ({
        kind: 'drip' as const,
        operation: 'list_listings',
        dripBytes: 100_000,
      })),
    });
    sandbox.resetStats();
    const drips = requests.count({ operation: 'list_listings', outcome: 'drip' });
    const cli = spawnCli(['sync'], {
      ...env,
      LISTINGS_CREDENTIALS_FILE: join(dir, 'creds.json'),
    });
    let stderr = '';
    cli.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // Held: the sandbox has started to drip an answer to it. A process that ends first
    // fails here, with what it printed.
    const exited = cli.done.then((ended) => {
      throw new Error(`the sync exited (${ended.code}) before it was held: ${ended.stderr}`);
    });
    await Promise.race([
      requests.when({ operation: 'list_listings', outcome: 'drip' }, drips + 1),
      exited,
    ]);
    expect(cli.child.exitCode, stderr).toBeNull();
    return { cli, open, stderr: () => stderr };
  }

  async function lastRun(db: Warehouse['db']) {
    return db
      .selectFrom('sync_runs')
      .select(['status', 'finished_at'])
      .orderBy('started_at', 'desc')
      .executeTakeFirstOrThrow();
  }

  /** Businesses the child wrote: none, while every listings read drips. */
  async function businessesWritten(db: Warehouse['db']): Promise<number> {
    const rows = await db.selectFrom('businesses').select('business_id').execute();
    return rows.length;
  }

  it('one SIGTERM: the dripped request is aborted, the run recorded interrupted, exit 3', async () => {
    const { cli, open, stderr } = await startHeld('one');
    cli.child.kill('SIGTERM');
    // It exits on its own after the signal, the dripped body unfinished.
    const finished = await cli.done;
    expect(finished.signal, stderr()).toBeNull();
    expect(finished.code, stderr()).toBe(3);
    expect(stderr()).toContain('stopping: no new work starts');
    expect(finished.stdout).toContain('Sync interrupted');
    const { db } = await open();
    const run = await lastRun(db);
    expect(run.status).toBe('interrupted');
    expect(run.finished_at).not.toBeNull();
    // Every business's listings read was cut short: none is written.
    expect(await businessesWritten(db)).toBe(0);
  });

  it('a second SIGTERM right after the first still records interrupted before exiting', async () => {
    const { cli, open, stderr } = await startHeld('two');
    const stopping = waitForStderr(cli.child, 'stopping: no new work starts');
    cli.child.kill('SIGTERM');
    // Two signals sent at once may reach the process as one: the second follows the first's
    // line. (Before, the first waited for the dripped answer and the second exited at once,
    // leaving the run `running`.)
    await stopping;
    cli.child.kill('SIGTERM');
    const finished = await cli.done;
    expect(finished.signal, stderr()).toBeNull();
    expect(finished.code, stderr()).toBe(3);
    // The second signal stops nothing twice.
    expect(stderr().split('stopping: no new work starts')).toHaveLength(2);
    const { db } = await open();
    const run = await lastRun(db);
    expect(run.status).toBe('interrupted');
    expect(run.finished_at).not.toBeNull();
    expect(await businessesWritten(db)).toBe(0);
  });
});
