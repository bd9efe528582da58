/**
 * `serve` as a process, where the process is the point: a real SIGTERM reaches the
 * process entry (src/cli/process-io.ts), which stops serve cleanly, and the process exits 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SyncCommandFixture,
  spawnCli as start,
  startSyncFixture,
  waitForStdout,
} from '../helpers/cli.ts';

describe('serve as a process', () => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startSyncFixture(
      'pglite',
      { seed: 5, accounts: 1, businessesPerAccount: 12 },
      { dirPrefix: 'ls-serve-cli-', directory: true },
    );
    // The migrated template, not a fresh initdb: the process under test is serve.
    env = await fixture.prepare({ migrate: true });
  });
  afterAll(() => fixture?.close());

  it('serve answers on its port and exits 0 on SIGTERM', async () => {
    const serve = start(['serve'], {
      ...env,
      WEBHOOK_SECRET: 's1',
      SYNC_SCHEDULE: 'off',
      PORT: '0',
    });
    const url = (await waitForStdout(serve.child, /serve on (http:\/\/\S+):/))[1];
    expect(url).toMatch(/^http:\/\/\S+:\d+$/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    serve.child.kill('SIGTERM');
    const ended = await serve.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stderr).toContain('signal received: shutting down');
    expect(ended.stderr).not.toContain('s1"');
  });
});
