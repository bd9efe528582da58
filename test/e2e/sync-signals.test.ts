/**
 * `listings-sync sync` as a process, where the process is the point: kill -9 at several
 * points converges to the uninterrupted result, and SIGTERM lets the businesses in flight
 * commit, records the run interrupted and exits 3 (the process entry's signal handling,
 * src/cli/process-io.ts). Everything else about the command runs in-process:
 * test/sync/cli.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/connection.ts';
import {
  runCli as run,
  spawnCli as start,
  waitForStderr as waitForOutput,
} from '../helpers/cli.ts';
import {
  createPgliteDataDir,
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';
import { contentDigest, sync, testApiClient } from '../sync/harness.ts';

/** Environment that points a child process at the test's warehouse. */
function databaseEnv(warehouse: TestWarehouse, pgliteDir: string): Record<string, string> {
  if (warehouse.kind === 'postgres') {
    const url = new URL(warehouse.databaseUrl!);
    url.searchParams.set('options', `-c search_path=${warehouse.searchPath}`);
    return { DATABASE_URL: url.toString() };
  }
  return { PGLITE_DATA_DIR: pgliteDir };
}

describe.each(testBackends)('the sync command as a process (%s)', (backend) => {
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
   * The warehouse the child processes use, of this test alone: migrated, or empty for
   * the child to migrate. PostgreSQL: a database of its own; PGlite: a data directory
   * (a child process cannot share one with this process, so none is kept open here).
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

  async function openTarget(): Promise<Warehouse> {
    return target
      ? openWarehouse({ databaseUrl: target.databaseUrl!, searchPath: target.searchPath! })
      : openWarehouse({ pgliteDataDir: pgliteDir });
  }

  // Five child processes, each opening the warehouse (PGlite: its WASM start-up each time),
  // and a reference sync: over the 30 s default on a loaded 2-core machine, so this one
  // test is allowed a minute.
  it('converges after kill -9 at several points to the uninterrupted result', {
    timeout: 60_000,
  }, async () => {
    await prepareTarget({ migrate: true });

    // Kill points measured from the moment the run has listed its businesses: before any
    // business commits, among the first commits, and deep into the run.
    let killedMidRun = 0;
    for (const delayMs of [0, 100, 250]) {
      const { child, done } = start(['sync'], env);
      await waitForOutput(child, '"msg":"businesses listed"');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      child.kill('SIGKILL');
      const killed = await done;
      // A fast database can finish the run before the last kill lands.
      expect(killed.signal === 'SIGKILL' || killed.code === 0).toBe(true);
      if (killed.signal === 'SIGKILL') killedMidRun += 1;
    }
    expect(killedMidRun).toBeGreaterThanOrEqual(2);
    const final = await run(['sync'], env);
    expect(final.code, final.stderr).toBe(0);
    expect(final.stdout).toContain('Sync succeeded');

    const reference = await createTestWarehouse(backend);
    const api: ApiClient = testApiClient();
    try {
      await sync(reference, api, sandbox.credentials);
      const warehouse = await openTarget();
      try {
        expect(await contentDigest(warehouse)).toEqual(await contentDigest(reference));
        // The killed runs left their rows; the next run marked them interrupted.
        const runs = await warehouse.db.selectFrom('sync_runs').select(['status']).execute();
        expect(runs.length).toBe(4);
        expect(runs.filter((r) => r.status === 'interrupted').length).toBe(killedMidRun);
        expect(runs.filter((r) => r.status === 'succeeded').length).toBe(4 - killedMidRun);
      } finally {
        await warehouse.close();
      }
    } finally {
      await api.close();
      await reference.close();
    }
  });

  it('on SIGTERM lets in-flight businesses commit, records the run interrupted and exits 3', async () => {
    await prepareTarget({ migrate: true });
    const { child, done } = start(['sync'], env);
    await waitForOutput(child, '"msg":"businesses listed"');
    child.kill('SIGTERM');
    const stopped = await done;
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.stderr).toContain('stopping: businesses in flight will commit');
    expect(stopped.stdout).toContain('Sync interrupted');
    const warehouse = await openTarget();
    try {
      const last = await warehouse.db
        .selectFrom('sync_runs')
        .select(['status', 'finished_at'])
        .orderBy('started_at', 'desc')
        .executeTakeFirstOrThrow();
      expect(last.status).toBe('interrupted');
      expect(last.finished_at).toBeInstanceOf(Date);
    } finally {
      await warehouse.close();
    }
  });
});
