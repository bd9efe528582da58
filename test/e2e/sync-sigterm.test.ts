/**
 * A sync that ends when told to (issue 19): a real `listings-sync sync` process, held by
 * an answer the sandbox drips a byte a second, is sent SIGTERM. It aborts the request,
 * records its run `interrupted` and exits 3 within a bounded time; a second SIGTERM right
 * after the first still records `interrupted` before the process exits. Signals are what
 * only a process shows, so this runs the CLI as a child.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/connection.ts';
import { spawnCli } from '../helpers/cli.ts';
import {
  createPgliteDataDir,
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

/** From SIGTERM to exit: a bound for a hang, not a speed target (a busy 2-core machine). */
const EXIT_WITHIN_MS = 30_000;

describe.each(testBackends)('sync on SIGTERM (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let dir: string;
  let warehouse: TestWarehouse | undefined;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 3, port: 0 });
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
    const cli = spawnCli(['sync'], {
      ...env,
      LISTINGS_CREDENTIALS_FILE: join(dir, 'creds.json'),
    });
    let stderr = '';
    cli.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // Held: a dripped answer is being served to it.
    await vi.waitFor(
      () => {
        expect(cli.child.exitCode, stderr).toBeNull();
        expect(sandbox.stats().byOperation['list_listings']?.['drip'] ?? 0).toBeGreaterThan(0);
      },
      { timeout: 60_000, interval: 50 },
    );
    return { cli, open, stderr: () => stderr };
  }

  async function lastRun(open: () => Promise<Warehouse>) {
    const db = (await open()).db;
    return db
      .selectFrom('sync_runs')
      .select(['status', 'finished_at'])
      .orderBy('started_at', 'desc')
      .executeTakeFirstOrThrow();
  }

  it('one SIGTERM: the dripped request is aborted, the run recorded interrupted, exit 3', async () => {
    const { cli, open, stderr } = await startHeld('one');
    const signalled = performance.now();
    cli.child.kill('SIGTERM');
    const finished = await cli.done;
    expect(performance.now() - signalled).toBeLessThan(EXIT_WITHIN_MS);
    expect(finished.code, stderr()).toBe(3);
    expect(stderr()).toContain('stopping: no new work starts');
    expect(finished.stdout).toContain('Sync interrupted');
    const run = await lastRun(open);
    expect(run.status).toBe('interrupted');
    expect(run.finished_at).not.toBeNull();
  }, 120_000);

  it('a second SIGTERM right after the first still records interrupted before exiting', async () => {
    const { cli, open, stderr } = await startHeld('two');
    const signalled = performance.now();
    cli.child.kill('SIGTERM');
    // Two signals sent at once may reach the process as one: the second follows the first's
    // line. (Before, the first waited for the dripped answer and the second exited at once,
    // leaving the run `running`.)
    await vi.waitFor(() => expect(stderr()).toContain('stopping: no new work starts'), {
      timeout: EXIT_WITHIN_MS,
      interval: 20,
    });
    cli.child.kill('SIGTERM');
    const finished = await cli.done;
    expect(performance.now() - signalled).toBeLessThan(EXIT_WITHIN_MS);
    expect(finished.code, stderr()).toBe(3);
    const run = await lastRun(open);
    expect(run.status).toBe('interrupted');
    expect(run.finished_at).not.toBeNull();
  }, 120_000);
});
