/**
 * `listings-sync sync` as a process, where the process is the point: kill -9 at several
 * points converges to the uninterrupted result, and SIGTERM lets the businesses in flight
 * commit, records the run interrupted and exits 3 (the process entry's signal handling,
 * src/cli/process-io.ts). Everything else about the command runs in-process:
 * test/sync/cli.test.ts.
 *
 * A point of the run is the sandbox's: the signal goes as soon as the sandbox (in this
 * process) has answered the run's n-th listings read, before it answers anything else, so
 * the run is always stopped with reads still to make, however busy the machine.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import type { RunningSandbox } from '../../src/sandbox/server.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  runCli as run,
  type Spawned,
  type SyncCommandFixture,
  spawnCli as start,
  startSyncFixture,
} from '../helpers/cli.ts';
import { createTestWarehouse, testBackends } from '../helpers/database.ts';
import { type SandboxRequests, sandboxRequests } from '../helpers/sandbox-requests.ts';
import { contentDigest, sync, testApiClient } from './harness.ts';

describe.each(testBackends)('the sync command as a process (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;
  let requests: SandboxRequests;

  beforeEach(async () => {
    requests = sandboxRequests();
    fixture = await startSyncFixture(
      backend,
      {
        seed: 31,
        accounts: 2,
        businessesPerAccount: 8,
        faults: { latencyMs: 40 },
        logger: requests.logger,
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

  /**
   * Resolves once the sandbox has answered the `reads`-th listings read of the child's run
   * (counted from `before`); a child that exits first fails here, with what it printed.
   */
  function listingsAnswered(child: Spawned, before: number, reads: number): Promise<void> {
    const exited = child.done.then((ended) => {
      throw new Error(
        `the sync exited (${ended.code}) before ${reads} listings reads: ${ended.stderr}`,
      );
    });
    return Promise.race([requests.when({ operation: 'list_listings' }, before + reads), exited]);
  }

  // Three child processes, each opening the warehouse (PGlite: its WASM start-up and, after
  // a kill, its recovery), then a sync in-process and a reference sync: 25 s to 60 s on a
  // loaded 2-core machine. The suite's limit only guards a hang.
  it('converges after kill -9 at several points to the uninterrupted result', async () => {
    await prepareTarget({ migrate: true });

    // Kill points in listings reads answered, of the run's 16 (one per business): the
    // first (before any business can commit), among the first commits, and halfway. Each
    // kill lands with reads still to make: the run cannot have finished.
    const killPoints = [1, 4, 8];
    for (const reads of killPoints) {
      const spawned = start(['sync'], env);
      await listingsAnswered(spawned, requests.count({ operation: 'list_listings' }), reads);
      spawned.child.kill('SIGKILL');
      const killed = await spawned.done;
      expect(killed.signal, `killed after ${reads} listings reads`).toBe('SIGKILL');
    }
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
        expect(runs.length).toBe(killPoints.length + 1);
        expect(runs.filter((r) => r.status === 'interrupted').length).toBe(killPoints.length);
        expect(runs.filter((r) => r.status === 'succeeded').length).toBe(1);
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
    const spawned = start(['sync'], env);
    // Mid-run: some listings answered, most still to come.
    await listingsAnswered(spawned, requests.count({ operation: 'list_listings' }), 3);
    spawned.child.kill('SIGTERM');
    const stopped = await spawned.done;
    expect(stopped.signal, stopped.stderr).toBeNull();
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
