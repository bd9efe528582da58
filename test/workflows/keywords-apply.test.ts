/**
 * `listings-sync keywords apply`: the file's validation (errors name the path), the plan,
 * a dry run, the apply and the warehouse after it, the idempotent second apply, a
 * failure midway (writes are not retried) that reports what was done and exits 3, and a
 * re-sync after deleting most keywords, which no volume-drop hold delays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type Keyword, listKeywords } from '../../src/api/index.ts';
import { planBusinessKeywords } from '../../src/cli/workflows/keywords-apply.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { type WorkflowRunner, workflowRunner } from './harness.ts';

describe('the keyword plan', () => {
  const kw = (id: number, keyword: string, archived = false): Keyword => ({
    id,
    keyword,
    city: null,
    state: null,
    primary: false,
    businessId: 1,
    archived,
  });

  it('adds what is missing, deletes extras and duplicates, ignores archived and case', () => {
    const plan = planBusinessKeywords(
      1,
      ['Plumber Austin', 'drain cleaning', 'water heater'],
      [
        kw(3, 'plumber  austin'),
        kw(4, 'roof repair'),
        kw(5, 'Plumber Austin'),
        kw(6, 'water heater', true),
      ],
    );
    expect(plan).toEqual({
      businessId: 1,
      add: ['drain cleaning', 'water heater'],
      delete: [
        { id: 4, keyword: 'roof repair' },
        { id: 5, keyword: 'Plumber Austin' },
      ],
    });
  });
});

describe.each(testBackends)('keywords apply (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let cli: WorkflowRunner;
  let ids: number[];
  let before: Map<number, Keyword[]>;

  const upstream = async (id: number) => {
    const api = createApiClient({ logger: silentLogger() });
    try {
      return (await listKeywords(api, sandbox.credentials[0]!, id)).records;
    } finally {
      await api.close();
    }
  };

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 43, accounts: 1, businessesPerAccount: 3, port: 0 });
    warehouse = await createTestWarehouse(backend);
    cli = workflowRunner(warehouse, sandbox.credentials);
    ids = [10000001, 10000002];
    before = new Map();
    for (const id of ids) before.set(id, await upstream(id));
  });

  afterAll(async () => {
    await warehouse?.close();
    await sandbox?.close();
  });

  it('rejects an invalid file, naming each bad path, before any request', async () => {
    const file = cli.file(
      'bad.json',
      JSON.stringify({
        businesses: [
          { id: 10000001, keywords: ['plumber', ' Plumber '] },
          { id: 'x', keywords: ['a', 7] },
          { id: 10000001, keywords: [] },
        ],
      }),
    );
    sandbox.resetStats();
    const run = await cli.run(['keywords', 'apply', '--file', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'businesses.0.keywords.1: "Plumber" is already listed at keywords.0',
    );
    expect(run.stderr).toContain('businesses.1.id: expected a business id (a number)');
    expect(run.stderr).toContain('businesses.1.keywords.1: expected a keyword (a string)');
    expect(sandbox.stats().requests).toBe(0);
  });

  it('prints the plan, changes nothing on a dry run, applies it, and a second apply plans nothing', async () => {
    const [first, second] = ids as [number, number];
    const keep = before.get(first)!.filter((k) => !k.archived)[0]!;
    const dropped = before.get(first)!.filter((k) => !k.archived && k.id !== keep.id);
    const secondLive = before
      .get(second)!
      .filter((k) => !k.archived)
      .map((k) => k.keyword);
    const file = cli.file(
      'keywords.json',
      JSON.stringify({
        businesses: [
          {
            id: first,
            keywords: [keep.keyword.toUpperCase(), 'workflow test one', 'workflow test two'],
          },
          { id: second, keywords: secondLive },
        ],
      }),
    );

    const dry = await cli.run(['keywords', 'apply', '--file', file, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      `Business ${first}:\n  + workflow test one\n  + workflow test two\n`,
    );
    for (const k of dropped) expect(dry.stdout).toContain(`  - ${k.keyword} (id ${k.id})`);
    expect(dry.stdout).toContain(`Business ${second}: no change`);
    expect(dry.stdout).toContain(
      `Plan: 2 to add, ${dropped.length} to delete, across 1 of 2 businesses.`,
    );
    expect(dry.stdout).toContain('Dry run: nothing was changed.');
    expect(await upstream(first)).toEqual(before.get(first));

    const applied = await cli.run(['keywords', 'apply', '--file', file]);
    expect(applied.stderr).toContain(`warehouse: business ${first} synced again`);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain(`Applied: 2 added, ${dropped.length} deleted.`);
    const now = (await upstream(first))
      .filter((k) => !k.archived)
      .map((k) => k.keyword.toLowerCase());
    expect(now.sort()).toEqual(
      [keep.keyword.toLowerCase(), 'workflow test one', 'workflow test two'].sort(),
    );

    // The warehouse shows the same set of live keywords.
    const stored = await warehouse.db
      .selectFrom('keywords')
      .select(['keyword', 'archived'])
      .where('business_id', '=', first)
      .where('deleted_at', 'is', null)
      .execute();
    expect(
      stored
        .filter((k) => !k.archived)
        .map((k) => k.keyword.toLowerCase())
        .sort(),
    ).toEqual(now.sort());

    const again = await cli.run(['keywords', 'apply', '--file', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Plan: nothing to change across 2 businesses.');
    expect(again.stdout).not.toContain('Applied');
  });

  it('stops at a failed write, reports what was done, and exits 3; a re-apply finishes the job', async () => {
    const id = 10000003;
    const live = (await upstream(id)).filter((k) => !k.archived);
    expect(live.length).toBeGreaterThan(0);
    const file = cli.file(
      'partial.json',
      JSON.stringify({ businesses: [{ id, keywords: ['partial one', 'partial two'] }] }),
    );
    // The first delete answers 500: a write is never retried.
    sandbox.resetStats();
    sandbox.setFaults({ script: [{ kind: '500', operation: 'delete_keyword' }] });
    const run = await cli.run(['keywords', 'apply', '--file', file]);
    sandbox.setFaults({ script: [] });
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(`done: Business ${id}: + partial one`);
    expect(run.stdout).toContain(`done: Business ${id}: + partial two`);
    expect(run.stdout).toContain(
      `Stopped: 2 added and 0 deleted before business ${id} failed at "- ${live[0]!.keyword} (id ${live[0]!.id})"`,
    );
    expect(run.stderr).toContain('listings-sync: UPSTREAM_UNAVAILABLE:');
    expect(sandbox.stats().byOperation['delete_keyword']).toEqual({ '500': 1 });
    // What was done is in the warehouse already.
    const stored = await warehouse.db
      .selectFrom('keywords')
      .select('keyword')
      .where('business_id', '=', id)
      .where('deleted_at', 'is', null)
      .execute();
    expect(stored.map((k) => k.keyword)).toEqual(
      expect.arrayContaining(['partial one', 'partial two']),
    );

    const rerun = await cli.run(['keywords', 'apply', '--file', file]);
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).not.toContain('+ partial');
    expect(rerun.stdout).toContain(`Applied: 0 added, ${live.length} deleted.`);
  });

  it('deleting most of a business keywords shows them deleted at once: the re-sync holds no volume drop', async () => {
    // A world of its own: the other tests read the shared sandbox's keywords as they were.
    const own = await startSandbox({ seed: 44, accounts: 1, businessesPerAccount: 1, port: 0 });
    const ownWarehouse = await createTestWarehouse(backend);
    try {
      const cli = workflowRunner(ownWarehouse, own.credentials);
      const warehouse = ownWarehouse;
      const id = 10000001;
      const api = createApiClient({ logger: silentLogger() });
      const live = (
        await listKeywords(api, own.credentials[0]!, id).finally(() => api.close())
      ).records
        .filter((k) => !k.archived)
        .map((k) => k.keyword);
      expect(live.length).toBeGreaterThanOrEqual(3);
      // Adding one stores the business's keywords (the re-sync reads them all)…
      const grow = cli.file(
        'grow.json',
        JSON.stringify({ businesses: [{ id, keywords: [...live, 'volume one'] }] }),
      );
      expect((await cli.run(['keywords', 'apply', '--file', grow])).code).toBe(0);
      // …then every other one is deleted: more than half, and at least 3, of the stored rows.
      const shrink = cli.file(
        'shrink.json',
        JSON.stringify({ businesses: [{ id, keywords: ['volume one'] }] }),
      );
      const applied = await cli.run(['keywords', 'apply', '--file', shrink]);
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain(`Applied: 0 added, ${live.length} deleted.`);
      const stored = await warehouse.db
        .selectFrom('keywords')
        .select('keyword')
        .where('business_id', '=', id)
        .where('deleted_at', 'is', null)
        .where('archived', '=', false)
        .execute();
      expect(stored.map((k) => k.keyword)).toEqual(['volume one']);
      const drops = await warehouse.db
        .selectFrom('alerts')
        .select('alert_id')
        .where('kind', '=', 'volume_drop')
        .execute();
      expect(drops).toEqual([]);
    } finally {
      await ownWarehouse.close();
      await own.close();
    }
  });
});
