/**
 * `listings-sync api` lookups that used to mislead: a business id the upstream does not
 * know for `--account` although the warehouse has it under another account (the message
 * names the account to use), and `api states` with an ISO 3166 code (`US` is the United
 * States, never "Australia"). In-process, against the sandbox over HTTP; the warehouse is
 * the test's own, or none at all.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createApiClient, listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import { attachWarehouse, runCli } from '../helpers/cli.ts';
import {
  createTestWarehouse,
  databaseEnv,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';
import { type CommandRun, type WorkflowRunner, workflowRunner } from './harness.ts';

const NOT_FOUND = "listings-sync: BUSINESS_NOT_FOUND: This business doesn't exist\n";

describe.each(testBackends)('api lookups (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let cli: WorkflowRunner;
  /** The first business of account-2, which account-1 cannot see upstream. */
  let theirs: number;

  // Reads only: the sandbox and the warehouse (both accounts' businesses synced) are shared.
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 29, accounts: 2, businessesPerAccount: 2, port: 0 });
    warehouse = await createTestWarehouse(backend);
    const api = createApiClient({ logger: silentLogger() });
    try {
      theirs = (await listBusinesses(api, sandbox.credentials[1]!)).records[0]!.id;
      await runSync({
        warehouse,
        api,
        credentials: sandbox.credentials,
        logger: silentLogger(),
        streams: ['businesses'],
      });
    } finally {
      await api.close();
    }
    cli = workflowRunner(warehouse, sandbox.credentials);
  });
  afterAll(async () => {
    await warehouse?.close();
    await sandbox?.close();
  });

  const as1 = (args: string[]): Promise<CommandRun> => cli.run([...args, '--account', 'account-1']);

  it('names the account the warehouse has a business under, when the upstream does not know it for --account', async () => {
    const advice =
      `  The warehouse has business ${theirs} under account account-2, not account-1: ` +
      'run the command again with --account account-2.\n';
    // The keyword operations say it their own way (docs/upstream.md, "Errors").
    const invalidLocation = 'listings-sync: INVALID_LOCATION_ID: Invalid location id\n';
    for (const [args, upstream] of [
      [['api', 'businesses', 'get', String(theirs)], NOT_FOUND],
      [['api', 'listings', String(theirs)], NOT_FOUND],
      [['api', 'keywords', 'list', String(theirs)], invalidLocation],
    ] as const) {
      const run = await as1([...args]);
      expect(run, args.join(' ')).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr, args.join(' ')).toBe(upstream + advice);
    }
    // And with that account it works.
    const right = await cli.run([
      'api',
      'businesses',
      'get',
      String(theirs),
      '--account',
      'account-2',
    ]);
    expect(right.code).toBe(0);
    expect(JSON.parse(right.stdout)).toMatchObject({ id: theirs });
    // A business the warehouse does not hold either: the upstream's word alone.
    const nowhere = await as1(['api', 'businesses', 'get', '99']);
    expect(nowhere).toMatchObject({ code: 1, stderr: NOT_FOUND });
  });

  it('reads the configured warehouse (DATABASE_URL, or PGLITE_DATA_DIR) to say so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ls-api-lookup-'));
    try {
      const credentials = join(dir, 'credentials.json');
      await writeFile(credentials, JSON.stringify(sandbox.credentials));
      const pgliteDir = join(dir, 'pglite');
      let own: TestWarehouse | undefined;
      if (backend === 'pglite') {
        // A warehouse of its own, which the command is handed for PGLITE_DATA_DIR.
        own = await createTestWarehouse('pglite');
        onTestFinished(attachWarehouse(pgliteDir, own).detach);
        onTestFinished(() => own?.close());
        const api = createApiClient({ logger: silentLogger() });
        try {
          await runSync({
            warehouse: own,
            api,
            credentials: sandbox.credentials,
            logger: silentLogger(),
            streams: ['businesses'],
          });
        } finally {
          await api.close();
        }
      }
      const run = await runCli(
        ['api', 'rankings', String(theirs), '--account', 'account-1'],
        {
          ...databaseEnv(warehouse, pgliteDir),
          LISTINGS_CREDENTIALS_FILE: credentials,
          LOG_LEVEL: 'silent',
        },
        { cwd: dir },
      );
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toBe(
        `${NOT_FOUND}  The warehouse has business ${theirs} under account account-2, not account-1: ` +
          'run the command again with --account account-2.\n',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('without a warehouse, says what the upstream said, and creates none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ls-api-lookup-'));
    try {
      const credentials = join(dir, 'credentials.json');
      await writeFile(credentials, JSON.stringify(sandbox.credentials));
      const run = await runCli(
        ['api', 'businesses', 'get', String(theirs), '--account', 'account-1'],
        { LISTINGS_CREDENTIALS_FILE: credentials, LOG_LEVEL: 'silent' },
        { cwd: dir },
      );
      expect(run).toMatchObject({ code: 1, stdout: '', stderr: NOT_FOUND });
      expect(existsSync(join(dir, '.data'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('`api states` takes an ISO code, case aside, as well as a name or an id', async () => {
    const byId = await as1(['api', 'states', '1']);
    expect(byId.code).toBe(0);
    expect(JSON.parse(byId.stdout)).toContainEqual(
      expect.objectContaining({ name: 'Texas', iso: 'TX' }),
    );
    for (const code of ['US', 'us', ' Us ']) {
      const run = await as1(['api', 'states', code]);
      expect(run, code).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout, code).toBe(byId.stdout);
    }
    const australia = await as1(['api', 'states', 'AU']);
    expect(australia.code).toBe(0);
    expect(australia.stdout).toBe((await as1(['api', 'states', '4'])).stdout);
    expect(australia.stdout).not.toBe(byId.stdout);
    // A name, and a fragment of one, as before.
    expect((await as1(['api', 'states', 'united states'])).stdout).toBe(byId.stdout);
    const fragment = await as1(['api', 'states', 'austr']);
    expect(fragment.code).toBe(2);
    expect(fragment.stderr).toContain('Did you mean: Australia (id 4)?');
  });

  it('a country that is no code nor name of one lists the countries', async () => {
    for (const country of ['XX', 'Narnia']) {
      const run = await as1(['api', 'states', country]);
      expect(run).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toBe(
        `listings-sync: country "${country}" is unknown (no country name contains it). ` +
          'The countries: United States (id 1); Canada (id 2); United Kingdom (id 3); Australia (id 4); Ireland (id 5).\n',
      );
    }
  });

  it('an ISO code of a country the upstream does not list says so, suggesting no look-alike', async () => {
    const run = await as1(['api', 'states', 'fr']);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toBe(
      'listings-sync: country "fr" is the ISO code of France, which the upstream does not list. ' +
        'Its countries: United States (id 1); Canada (id 2); United Kingdom (id 3); Australia (id 4); Ireland (id 5).\n',
    );
  });
});
