/**
 * `listings-sync sync` as a process, where the process is the point: kill -9 at several
 * points converges to the uninterrupted result, and SIGTERM lets the businesses in flight
 * commit, records the run interrupted and exits 3 (the process entry's signal handling,
 * src/cli/process-io.ts). Everything else about the command runs in-process:
 * test/sync/cli.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import type { RunningSandbox } from '../../src/sandbox/server.ts';
import type { Warehouse } from '../../src/warehouse/connection.ts';
import {
  runCli as run,
  type SyncCommandFixture,
  spawnCli as start,
  startSyncFixture,
  waitForStderr as waitForOutput,
} from '../helpers/cli.ts';
import { createTestWarehouse, testBackends } from '../helpers/database.ts';
import { contentDigest, sync, testApiClient } from '../sync/harness.ts';

describe.each(testBackends)('the sync command as a process (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;

  beforeEach(async () => {
    fixture = await startSyncFixture(
      backend,
      {
        seed: 31,
        accounts: 2,
        businessesPerAccount: 8,
        faults: { latencyMs: 40 },
      },
      { directory: true },
    );
    sandbox = fixture.sandbox;
  });
  afterEach(async () => {
    await fixture?.close();
  });

  /**
   * The warehouse the child processes use, of this test alone: migrated, or empty for the
   * child to migrate (test/helpers/cli.ts, `startSyncFixture`).
   */
  async function prepareTarget(options: { migrate: boolean }): Promise<void> {
    env = await fixture.prepare(options);
  }

  function openTarget(): Promise<Warehouse> {
    return fixture.open();
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
