/**
 * `serve` as a process, where the process is the point: a real SIGTERM reaches the
 * process entry (src/cli/process-io.ts), which stops serve cleanly, and the process exits 0.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { spawnCli as start, waitForStdout } from '../helpers/cli.ts';
import { createPgliteDataDir } from '../helpers/database.ts';

describe('serve as a process', () => {
  let sandbox: RunningSandbox;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 12, port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'ls-serve-cli-'));
    const credentialsFile = join(dir, 'credentials.json');
    writeFileSync(credentialsFile, JSON.stringify(sandbox.credentials));
    env = { PGLITE_DATA_DIR: join(dir, 'pglite'), LISTINGS_CREDENTIALS_FILE: credentialsFile };
    // The migrated template, not a fresh initdb: the process under test is serve.
    await createPgliteDataDir(join(dir, 'pglite'));
  });
  afterAll(() => sandbox?.close());

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
