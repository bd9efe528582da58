/**
 * `listings-sync api …` in-process through commander, against the sandbox over HTTP:
 * every subcommand, the account choice, the error format and exit codes, the business
 * body (old hours, names for references, ambiguous and unknown names), and the warehouse
 * after each write.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiClient, listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { businessBody, type CommandRun, type WorkflowRunner, workflowRunner } from './harness.ts';

const json = (run: CommandRun) => JSON.parse(run.stdout);

describe.each(testBackends)('api commands (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let cli: WorkflowRunner;
  let businessIds: number[];
  let runs: CommandRun[] = [];
  let as1: (args: string[], options?: { stdin?: string }) => Promise<CommandRun>;

  // Writes change the sandbox and the warehouse: each test gets its own of both.
  beforeEach(async () => {
    runs = [];
    sandbox = await startSandbox({ seed: 41, accounts: 2, businessesPerAccount: 4, port: 0 });
    warehouse = await createTestWarehouse(backend);
    cli = workflowRunner(warehouse, sandbox.credentials);
    as1 = async (args, options) => {
      const run = await cli.run([...args, '--account', 'account-1'], options);
      runs.push(run);
      return run;
    };
    const api = createApiClient({ logger: silentLogger() });
    businessIds = (await listBusinesses(api, sandbox.credentials[0]!)).records.map((b) => b.id);
    await api.close();
  });

  afterEach(async () => {
    // No command ever printed a token.
    for (const run of runs) {
      for (const credential of sandbox.credentials) {
        expect(run.stdout + run.stderr).not.toContain(credential.authToken);
      }
    }
    await warehouse?.close();
    await sandbox?.close();
  });

  it('needs --account when several credentials are configured, and names them', async () => {
    const run = await cli.run(['api', 'countries']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('choose one with --account NAME (one of: account-1, account-2)');
    const unknown = await cli.run(['api', 'countries', '--account', 'nobody']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--account nobody: no such credential');
    const badOption = await cli.run(['api', 'countries', '--account', 'account-1', '--nope']);
    expect(badOption.code).toBe(2);
  });

  it('reads businesses: list, get, get --full, as JSON and as a table', async () => {
    const list = await as1(['api', 'businesses', 'list']);
    expect(list.code).toBe(0);
    expect(json(list).map((b: { id: number }) => b.id)).toEqual(businessIds);
    const table = await as1(['api', 'businesses', 'list', '--format', 'table']);
    expect(table.stdout.split('\n')[0]).toMatch(/^\s*id\s+name\s+street/);
    expect(table.stdout).toContain(String(businessIds[0]));
    const id = String(businessIds[0]);
    const basic = json(await as1(['api', 'businesses', 'get', id]));
    expect(basic).toMatchObject({ id: businessIds[0], hideAddress: expect.any(Boolean) });
    const full = json(await as1(['api', 'businesses', 'get', id, '--full']));
    expect(typeof full.latitude).toBe('number');
    expect(full.businessHours.length).toBeGreaterThan(0);
    const oneTable = await as1(['api', 'businesses', 'get', id, '--format', 'table']);
    expect(oneTable.stdout).toMatch(/^field\s+value/);
  });

  it('reads listings, reviews (both categories), rankings, keywords and reference data', async () => {
    const id = String(businessIds[0]);
    const listings = json(await as1(['api', 'listings', id]));
    expect(listings.length).toBeGreaterThan(0);
    expect(JSON.stringify(listings)).not.toMatch(/site_password|sitePassword/);
    const reviews = json(await as1(['api', 'reviews', id]));
    expect(reviews.every((r: { category: string }) => r.category === 'review')).toBe(true);
    const social = json(await as1(['api', 'reviews', id, '--category', 'social']));
    expect(social.every((r: { category: string }) => r.category === 'social')).toBe(true);
    const rankings = json(await as1(['api', 'rankings', id]));
    expect(rankings[0]).toMatchObject({ keyword: expect.any(String), site: expect.any(String) });
    const keywords = json(await as1(['api', 'keywords', 'list', id]));
    expect(keywords[0]).toMatchObject({ businessId: businessIds[0] });
    const countries = json(await as1(['api', 'countries']));
    expect(countries).toContainEqual({ id: 1, name: 'United States' });
    const byName = json(await as1(['api', 'states', 'united states']));
    const byId = json(await as1(['api', 'states', '1']));
    expect(byName).toEqual(byId);
    expect(byName).toContainEqual(expect.objectContaining({ name: 'Texas', iso: 'TX' }));
    const subCategories = json(await as1(['api', 'sub-categories']));
    expect(subCategories).toContainEqual({ id: 1, name: 'Plumbers' });
  });

  it('prints the upstream message verbatim with its code, exit 1', async () => {
    const missing = await as1(['api', 'businesses', 'get', '99']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe("listings-sync: BUSINESS_NOT_FOUND: This business doesn't exist\n");
    const keyword = await as1(['api', 'keywords', 'delete', '5']);
    expect(keyword.code).toBe(1);
    expect(keyword.stderr).toBe('listings-sync: INVALID_KEYWORD_ID: Invalid keyword id\n');
    const usage = await as1(['api', 'businesses', 'get', 'abc']);
    expect(usage.code).toBe(2);
  });

  it('creates a business from names and old hours, with a warning; the warehouse has it at once', async () => {
    const days = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
    const body = businessBody({
      location_biz_hour_attributes: days.map((day) =>
        day === 'Sunday'
          ? { day, holiday: true }
          : { day, holiday: false, start_time: '09:00am', end_time: '05:00pm' },
      ),
    });
    const run = await as1([
      'api',
      'businesses',
      'create',
      '--file',
      cli.file('create.json', JSON.stringify({ business: body })),
    ]);
    expect(run.stderr).toContain('location_biz_hour_attributes is deprecated');
    expect(run.code).toBe(0);
    const created = json(run);
    expect(created).toMatchObject({
      name: 'Workflow Plumbing',
      stateName: 'Texas',
      subCategoryName: 'Plumbers',
    });
    const row = await warehouse.db
      .selectFrom('businesses')
      .selectAll()
      .where('business_id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      name: 'Workflow Plumbing',
      state_name: 'Texas',
      archived_at: null,
    });
    expect(row.business_hours).toContainEqual({
      day: 'Monday',
      start_time: '09:00',
      end_time: '17:00',
    });
    expect(row.business_hours).toContainEqual({ day: 'Sunday', start_time: null, end_time: null });
    const listings = await warehouse.db
      .selectFrom('listings')
      .select('listing_id')
      .where('business_id', '=', created.id)
      .execute();
    expect(listings.length).toBeGreaterThan(0);
  });

  it('updates a business from standard input; the warehouse shows the new name', async () => {
    const id = businessIds[1]!;
    const run = await as1(['api', 'businesses', 'update', String(id), '--file', '-'], {
      stdin: JSON.stringify({ name: 'Renamed By Update', state: 'Ohio' }),
    });
    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({ id, name: 'Renamed By Update', stateName: 'Ohio' });
    const row = await warehouse.db
      .selectFrom('businesses')
      .select(['name', 'state_name'])
      .where('business_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ name: 'Renamed By Update', state_name: 'Ohio' });
    const versions = await warehouse.db
      .selectFrom('business_versions')
      .select('content_hash')
      .where('business_id', '=', id)
      .execute();
    expect(versions.length).toBeGreaterThan(0);
  });

  it('refuses ambiguous and unknown names, listing the candidates, and writes nothing', async () => {
    const before = sandbox.stats().byOperation['update_business']?.['ok'] ?? 0;
    const id = String(businessIds[1]);
    const ambiguous = await as1(['api', 'businesses', 'update', id, '--file', '-'], {
      stdin: JSON.stringify({ state: 'WA' }),
    });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('state "WA" is ambiguous');
    expect(ambiguous.stderr).toContain('Washington [WA], United States');
    expect(ambiguous.stderr).toContain('Western Australia [WA], Australia');
    const narrowed = await as1(['api', 'businesses', 'update', id, '--file', '-'], {
      stdin: JSON.stringify({ state: 'WA', country: 'Australia' }),
    });
    expect(narrowed.code).toBe(0);
    expect(json(narrowed).stateName).toBe('Western Australia');
    const unknown = await as1(['api', 'businesses', 'update', id, '--file', '-'], {
      stdin: JSON.stringify({ sub_category: 'Auto' }),
    });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'sub category "Auto" is unknown. Did you mean: Auto Repair (id 11); Auto Body Shops (id 12)?',
    );
    const invalid = await as1(['api', 'businesses', 'update', id, '--file', '-'], {
      stdin: JSON.stringify({ business: { location_biz_hours_attributes: [{ day: 'Funday' }] } }),
    });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('business.location_biz_hours_attributes.0.day');
    expect(sandbox.stats().byOperation['update_business']?.['ok'] ?? 0).toBe(before + 1);
  });

  it('resolves names from the warehouse once a sync has stored the reference data', async () => {
    await runSync({
      warehouse,
      api: createApiClient({ logger: silentLogger() }),
      credentials: [sandbox.credentials[0]!],
      logger: silentLogger(),
      streams: ['reference'],
    });
    const countriesBefore = sandbox.stats().byOperation['list_countries']?.['ok'] ?? 0;
    const run = await as1(['api', 'businesses', 'update', String(businessIds[2]), '--file', '-'], {
      stdin: JSON.stringify({ state: 'Texas', country: 'United States' }),
    });
    expect(run.code).toBe(0);
    expect(json(run).stateName).toBe('Texas');
    expect(sandbox.stats().byOperation['list_countries']?.['ok'] ?? 0).toBe(countriesBefore);
  });

  it('passes an upstream validation message through verbatim', async () => {
    const run = await as1(['api', 'businesses', 'create', '--file', '-'], {
      stdin: JSON.stringify(businessBody({ name: 'X', phone: 'nope' })),
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^listings-sync: VALIDATION_FAILED: The business was not created\./);
    expect(run.stderr).toContain('Name is too short (minimum is 2 characters).');
  });

  it('adds and deletes a keyword; the warehouse follows each', async () => {
    const id = businessIds[3]!;
    const added = await as1(['api', 'keywords', 'add', String(id), 'emergency plumber austin']);
    expect(added.code).toBe(0);
    const keyword = json(added);
    expect(keyword).toMatchObject({ keyword: 'emergency plumber austin', businessId: id });
    const stored = await warehouse.db
      .selectFrom('keywords')
      .selectAll()
      .where('keyword_id', '=', keyword.id)
      .executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ keyword: 'emergency plumber austin', deleted_at: null });
    const deleted = await as1(['api', 'keywords', 'delete', String(keyword.id)]);
    expect(deleted.code).toBe(0);
    expect(json(deleted)).toMatchObject({ keywordId: keyword.id, deleted: true });
    const after = await warehouse.db
      .selectFrom('keywords')
      .select('deleted_at')
      .where('keyword_id', '=', keyword.id)
      .executeTakeFirstOrThrow();
    expect(after.deleted_at).toBeInstanceOf(Date);
  });

  it('several keyword arguments add several keywords, never one joined keyword', async () => {
    const id = businessIds[2]!;
    const added = await as1([
      'api',
      'keywords',
      'add',
      String(id),
      'plumber austin',
      'emergency plumber',
    ]);
    expect(added.code).toBe(0);
    expect(json(added)).toMatchObject([
      { keyword: 'plumber austin', businessId: id },
      { keyword: 'emergency plumber', businessId: id },
    ]);
    // One re-sync after both, naming the warehouse it wrote to.
    expect(added.stderr).toMatch(
      new RegExp(
        `warehouse: business ${id} synced again into (PostgreSQL at|the embedded PGlite database in) `,
      ),
    );
    const stored = await warehouse.db
      .selectFrom('keywords')
      .select('keyword')
      .where('business_id', '=', id)
      .where('deleted_at', 'is', null)
      .execute();
    const names = stored.map((row) => row.keyword);
    expect(names).toEqual(expect.arrayContaining(['plumber austin', 'emergency plumber']));
    expect(names).not.toContain('plumber austin emergency plumber');
  });

  it('refuses an empty or repeated keyword argument before sending anything', async () => {
    const id = businessIds[2]!;
    const before = sandbox.stats().byOperation['add_keyword']?.['ok'] ?? 0;
    const twice = await as1(['api', 'keywords', 'add', String(id), 'roofer', ' Roofer ']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('the keyword "Roofer" is given twice.');
    const empty = await as1(['api', 'keywords', 'add', String(id), 'roofer', '  ']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('keyword 2 is empty.');
    expect(sandbox.stats().byOperation['add_keyword']?.['ok'] ?? 0).toBe(before);
  });

  it('archives a business and marks it archived in the warehouse', async () => {
    const id = businessIds[3]!;
    // The warehouse holds the business first (a sync), so there is a row to mark.
    const api = createApiClient({ logger: silentLogger() });
    try {
      await runSync({
        warehouse,
        api,
        credentials: [sandbox.credentials[0]!],
        logger: silentLogger(),
        streams: ['businesses'],
      });
    } finally {
      await api.close();
    }
    const before = await warehouse.db
      .selectFrom('businesses')
      .select('archived_at')
      .where('business_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(before.archived_at).toBeNull();
    const run = await as1(['api', 'businesses', 'archive', String(id)]);
    expect(run.code).toBe(0);
    expect(json(run)).toEqual({ businessId: id, archived: true });
    const row = await warehouse.db
      .selectFrom('businesses')
      .select('archived_at')
      .where('business_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.archived_at).toBeInstanceOf(Date);
    const again = await as1(['api', 'businesses', 'get', String(id)]);
    expect(again.stderr).toBe("listings-sync: BUSINESS_NOT_FOUND: This business doesn't exist\n");
  });
});
