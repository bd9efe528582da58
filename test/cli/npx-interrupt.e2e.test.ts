/**
 * Ctrl-C on `npx listings-sync sync`, as a terminal sends it: SIGINT to the whole
 * process group, npm, its shell and the command. Measured here (docs/running.md,
 * "Signals"):
 *
 * - npm runs the command through `sh -c` and passes each signal it gets on to that
 *   child. Where sh is dash (Debian, Ubuntu), dash waits for the command and then ends
 *   itself by the SIGINT it received, whatever the command's exit code; npm then ends
 *   itself by the same signal, and a shell shows 130. The command has stopped as
 *   documented all the same (run `interrupted`, exit 3): nothing the command does can
 *   change that. With npm's script shell set to bash, bash execs the command and npx
 *   exits with its 3.
 * - Where the shell execs the command, npm's copy of the SIGINT reaches it a few
 *   milliseconds after the terminal's: that copy used to count as a second Ctrl-C ("ending
 *   now; businesses in flight roll back"). Under npm, a repeat within a second is now the
 *   same stop (src/cli/process-io.ts). The npx runs show it end to end; which of the two
 *   signals a process takes first, and whether two sent a millisecond apart reach it as
 *   one, is the scheduler's to say, so the rule itself is held in-process, on a clock
 *   the test moves.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, join, sep } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signalMeaning } from '../../src/cli/process-io.ts';
import {
  cliCacheEnv,
  type Finished,
  type SyncCommandFixture,
  startSyncFixture,
  waitForStderr,
} from '../helpers/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SECOND_STOP = 'ending now; businesses in flight roll back';

/** The user's PATH without the node_modules/.bin entries npm or vitest put first. */
const userPath = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.endsWith(`node_modules${sep}.bin`))
  .join(delimiter);
const npxDir = userPath.split(delimiter).find((dir) => existsSync(join(dir, 'npx')));
const bashDir = userPath.split(delimiter).find((dir) => existsSync(join(dir, 'bash')));
const shIsDash = existsSync('/bin/sh') && basename(realpathSync('/bin/sh')) === 'dash';

describe('Ctrl-C on listings-sync sync', () => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  let npmCache: string;

  beforeAll(() => {
    npmCache = mkdtempSync(join(tmpdir(), 'ls-e2e-npx-cache-'));
  });
  afterAll(() => {
    if (npmCache) rmSync(npmCache, { recursive: true, force: true });
  });
  beforeEach(async () => {
    // Slow enough answers that the run is still going when the signal comes.
    fixture = await startSyncFixture(
      'pglite',
      { seed: 31, accounts: 2, businessesPerAccount: 8, faults: { latencyMs: 100 } },
      { dirPrefix: 'ls-e2e-npx-int-', directory: true },
    );
    env = await fixture.prepare({ migrate: true });
  });
  afterEach(() => fixture?.close());

  async function lastRunStatus(): Promise<string> {
    const warehouse = await fixture.open();
    try {
      const run = await warehouse.db
        .selectFrom('sync_runs')
        .select('status')
        .orderBy('started_at', 'desc')
        .executeTakeFirstOrThrow();
      return run.status;
    } finally {
      await warehouse.close();
    }
  }

  /** `npx listings-sync sync` in a process group of its own, as a terminal's job. */
  function startUnderNpx(extraEnv: Record<string, string>) {
    const child = spawn(join(npxDir!, 'npx'), ['listings-sync', 'sync'], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: userPath,
        HOME: process.env['HOME'] ?? '',
        ...cliCacheEnv(),
        TMPDIR: tmpdir(),
        LOG_LEVEL: 'info',
        npm_config_cache: npmCache,
        npm_config_offline: 'true',
        npm_config_audit: 'false',
        npm_config_update_notifier: 'false',
        ...env,
        ...extraEnv,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const done = new Promise<Finished>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
    );
    return { child, done };
  }

  it.skipIf(!npxDir || !bashDir)(
    'npx with bash as npm script shell exits 3, the copy of the Ctrl-C is no second stop',
    async () => {
      const { child, done } = startUnderNpx({ npm_config_script_shell: join(bashDir!, 'bash') });
      await waitForStderr(child, '"msg":"businesses listed"');
      process.kill(-child.pid!, 'SIGINT');
      const ended = await done;
      expect(ended.code, ended.stderr).toBe(3);
      expect(ended.stderr).not.toContain(SECOND_STOP);
      expect(ended.stdout).toContain('Sync interrupted');
      expect(await lastRunStatus()).toBe('interrupted');
    },
    120_000,
  );

  it.skipIf(!npxDir)(
    'npx with its default sh: the command stops as documented; dash makes npx end by SIGINT (130)',
    async () => {
      const { child, done } = startUnderNpx({});
      await waitForStderr(child, '"msg":"businesses listed"');
      process.kill(-child.pid!, 'SIGINT');
      const ended = await done;
      if (shIsDash) expect(ended.signal, ended.stderr).toBe('SIGINT');
      else expect(ended.code, ended.stderr).toBe(3);
      expect(ended.stderr).not.toContain(SECOND_STOP);
      expect(ended.stdout).toContain('Sync interrupted');
      expect(await lastRunStatus()).toBe('interrupted');
    },
    120_000,
  );
});

describe('what a repeated signal means', () => {
  function signals(underNpm: boolean) {
    let now = 5_000;
    const meaning = signalMeaning({ underNpm, now: () => now });
    return (afterMs: number) => {
      now += afterMs;
      return meaning();
    };
  }

  it("under npm, npm's copy a few milliseconds later is the same stop; a later one stops now", () => {
    const signal = signals(true);
    expect(signal(0)).toBe('stop');
    expect(signal(3)).toBe('repeat');
    expect(signal(900)).toBe('repeat');
    expect(signal(200)).toBe('stop-now');
  });

  it('without npm, every signal after the first stops now', () => {
    const signal = signals(false);
    expect(signal(0)).toBe('stop');
    expect(signal(3)).toBe('stop-now');
    expect(signal(3)).toBe('stop-now');
  });
});
