/**
 * A stop after runs have finished, in a real process: `serve` with a schedule and the
 * demo, each sent SIGTERM once some syncs are done, exit on their own with their
 * documented exit code. Every finished run used to leave its stop listener on the
 * process's signal: the stop then logged "stopping: …" once per finished run and armed
 * each one's 15 s grace, a timer that held the process 15 s past the signal
 * (docs/running.md, "Signals"). What shows that listener is the line, so the tests count
 * the "stopping" lines rather than time the exit; each waits for the exit event, and a
 * process that never exits fails at the test's timeout. A process's signal handling is
 * only a process's to show, so these run the CLI as a child.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SyncCommandFixture, spawnCli, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';

/** The run's own line when a stop reaches it (src/sync/run.ts). */
const RUN_STOPPING = 'stopping: no new work starts';

/** The log lines (pino JSON) of standard error, by message. */
function messages(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => String((JSON.parse(line) as { msg?: unknown }).msg ?? ''));
}

/** Resolves once `count` log lines of the child's standard error carry `message`. */
function waitForMessages(
  child: ReturnType<typeof spawnCli>['child'],
  message: string,
  count: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    let found = 0;
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const lines = seen.split('\n');
      seen = lines.pop() ?? '';
      found += lines.filter((line) => line.includes(`"msg":"${message}`)).length;
      if (found >= count) {
        child.stderr?.off('data', onData);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('close', () =>
      reject(new Error(`the process ended after ${found} of ${count} "${message}" lines`)),
    );
  });
}

/** Sends SIGTERM and resolves once the process has exited, with how it ended. */
async function stop(spawned: ReturnType<typeof spawnCli>) {
  spawned.child.kill('SIGTERM');
  return spawned.done;
}

describe.each(testBackends)('serve stopped after scheduled runs (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startSyncFixture(
      backend,
      { seed: 11, accounts: 1, businessesPerAccount: 4 },
      { dirPrefix: 'ls-e2e-serve-runs-', directory: true },
    );
    env = await fixture.prepare({ migrate: true });
  });
  afterAll(() => fixture?.close());

  it('exits 0 on its own, with no "stopping" line from a finished run', async () => {
    const serve = spawnCli(['serve'], {
      ...env,
      WEBHOOK_SECRET: 's1',
      // A tick every 5 s (node-cron's 6-field form, with seconds): the first run starts
      // within 5 s, and a run of 4 businesses ends long before the next tick.
      SYNC_SCHEDULE: '*/5 * * * * *',
      SYNC_TIMEZONE: 'UTC',
      PORT: '0',
    });
    await waitForMessages(serve.child, 'scheduled sync finished', 1);
    const ended = await stop(serve);
    // It exited on its own, with its code: the signal did not kill it.
    expect(ended.signal, ended.stderr).toBeNull();
    expect(ended.code, ended.stderr).toBe(0);

    // Only a run still going when the stop came says "stopping"; a tick may have started
    // one just before it (or between the signal and the schedule's end).
    const lines = messages(ended.stderr);
    const stopAt = lines.indexOf('signal received: shutting down');
    expect(stopAt, ended.stderr).toBeGreaterThan(0);
    const started = lines.filter((m) => m === 'sync starting').length;
    const finishedBefore = lines
      .slice(0, stopAt)
      .filter((m) => m === 'scheduled sync finished').length;
    expect(finishedBefore).toBeGreaterThanOrEqual(1);
    expect(lines.filter((m) => m.startsWith(RUN_STOPPING)).length, ended.stderr).toBe(
      started - finishedBefore,
    );
  });
});

describe('the demo stopped after some days', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ls-e2e-demo-stop-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('exits 143 on its own and says "stopping" once, not once per day', async () => {
    // The demo's own embedded warehouse and report land in its working directory; a small
    // one (its options), since what matters is that days finish before the stop.
    const demo = spawnCli(['demo', '--days', '4', '--businesses', '2'], {}, { cwd: dir });
    await waitForMessages(demo.child, 'demo day synced', 2);
    const ended = await stop(demo);
    // A demo stopped by SIGTERM exits 128 + 15 (docs/running.md, "Exit codes"), on its own.
    expect(ended.signal, ended.stderr).toBeNull();
    expect(ended.code, ended.stderr).toBe(143);
    const lines = messages(ended.stderr);
    expect(lines.filter((m) => m === 'demo day synced').length).toBeGreaterThanOrEqual(2);
    // The day in flight, if the stop came during one: at most one line.
    expect(
      lines.filter((m) => m.startsWith(RUN_STOPPING)).length,
      ended.stderr,
    ).toBeLessThanOrEqual(1);
  }, 180_000);
});
