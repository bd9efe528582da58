/**
 * `serve` on the embedded PGlite holds its data directory (one process at a time): a real
 * serve process, since the lock is a process's pid (src/warehouse/driver/pglite/lock.ts). Serve
 * says so when it starts; each command refused beside it names serve, its pid and the
 * two ways out, with exit 1 (docs/serve.md, docs/troubleshooting.md).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  runCli as run,
  type Spawned,
  type SyncCommandFixture,
  spawnCli,
  startSyncFixture,
  waitForStdout,
} from '../helpers/cli.ts';
import { createTestWarehouse, databaseEnv, type TestWarehouse } from '../helpers/database.ts';

const NOTICE = 'serve holds the embedded PGlite database in ';
const SERVE_ENV = { WEBHOOK_SECRET: 's1', SYNC_SCHEDULE: 'off', PORT: '0' };

interface Serving extends Spawned {
  /** Standard error so far. */
  stderr(): string;
}

async function startServe(env: Record<string, string>): Promise<Serving> {
  const serve = spawnCli(['serve'], { ...env, ...SERVE_ENV });
  // Listening from the start: serve writes its notice before the line awaited below.
  let stderr = '';
  serve.child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  await waitForStdout(serve.child, /serve on http:\/\/\S+:/);
  return { ...serve, stderr: () => stderr };
}

async function stopServe(serve: Serving) {
  serve.child.kill('SIGTERM');
  return serve.done;
}

describe('serve on PGlite, and the commands beside it', () => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  let serve: Serving;

  beforeAll(async () => {
    fixture = await startSyncFixture(
      'pglite',
      { seed: 9, accounts: 1, businessesPerAccount: 2 },
      { directory: true },
    );
    env = await fixture.prepare({ migrate: true });
    serve = await startServe(env);
  });
  afterAll(async () => {
    if (serve) await stopServe(serve);
    await fixture?.close();
  });

  it('says at its start that it holds the database, and how to run commands beside it', () => {
    const notices = serve
      .stderr()
      .split('\n')
      .filter((line) => line.includes(NOTICE));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(
      `${NOTICE}${fixture.pgliteDir} while it runs: \`runs\`, \`alerts\`, \`report\` and \`sync\` ` +
        'cannot open it until serve stops. To run them beside serve, set DATABASE_URL to ' +
        'PostgreSQL (`listings-sync warehouse copy` moves the data; docs/backup-restore.md',
    );
    expect(notices[0]).toContain('"level":"warn"');
  });

  it.each([
    ['runs'],
    ['alerts'],
    ['report'],
    ['sync'],
    ['warehouse', 'copy', '--to', 'postgres://h/db'],
  ])(
    '`%s` is refused with exit 1, naming serve, its pid and both ways out',
    async (...args: string[]) => {
      const result = await run(args, env);
      expect(result.code).toBe(1);
      const pid = serve.child.pid as number;
      expect(result.stderr).toContain(
        `The embedded database in ${fixture.pgliteDir} is held by \`listings-sync serve\` (pid ${pid}).`,
      );
      expect(result.stderr).toContain('cannot open it while serve runs');
      expect(result.stderr).toContain('Either stop serve, run the command and start serve again');
      expect(result.stderr).toContain('`listings-sync warehouse copy --to <postgres-url>`');
      expect(result.stderr).toContain('set DATABASE_URL for every command');
    },
  );
});

describe('once serve stops', () => {
  let fixture: SyncCommandFixture;

  afterEach(async () => {
    await fixture?.close();
  });

  it('the commands open the database again, and no record of serve is left behind', async () => {
    fixture = await startSyncFixture(
      'pglite',
      { seed: 9, accounts: 1, businessesPerAccount: 2 },
      { directory: true },
    );
    const env = await fixture.prepare({ migrate: true });
    const serve = await startServe(env);
    expect(existsSync(join(fixture.pgliteDir, '.listings-sync.pid.command'))).toBe(true);
    const refused = await run(['runs'], env);
    expect(refused.code).toBe(1);
    const ended = await stopServe(serve);
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stderr).toContain(NOTICE);
    expect(existsSync(join(fixture.pgliteDir, '.listings-sync.pid.command'))).toBe(false);
    const runs = await run(['runs'], env);
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toContain(
      `Sync runs in the embedded PGlite database in ${fixture.pgliteDir}`,
    );
  });
});

describe.skipIf(!process.env['TEST_DATABASE_URL'])('serve on PostgreSQL', () => {
  let warehouse: TestWarehouse | undefined;

  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  it('holds nothing a command needs, and says nothing about PGlite', async () => {
    warehouse = await createTestWarehouse('postgres');
    const env = databaseEnv(warehouse, '/nonexistent');
    const serve = await startServe(env);
    const runs = await run(['runs'], env);
    expect(runs.code, runs.stderr).toBe(0);
    const ended = await stopServe(serve);
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stderr).not.toContain(NOTICE);
  });
});
