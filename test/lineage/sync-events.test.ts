/**
 * Every event of a sync, caught by a local receiver (docs/lineage.md): a sync sends START
 * then COMPLETE with the run id of its `sync_runs` row, its job (`listings-sync.sync`, the
 * credential in its tags), the upstream operations it read as inputs (one per credential
 * and path, named from the base URL), the tables it wrote as outputs (schema and output
 * statistics facets), and a JobEvent per documented view it feeds; a failed sync ends
 * FAIL with an error facet, an interrupted one ABORT, a shard is a job of its own; none
 * holds a token, an e-mail or DATABASE_URL's password. Each event holds to the spec's
 * required fields and facet shapes (test/lineage/receiver.ts).
 */
import { writeFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VIEW_NAMES } from '../../src/lineage/views.ts';
import { runCli, type SyncCommandFixture, startCli, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { PASSWORDS } from '../helpers/database-url-passwords.ts';
import { secretsFoundIn } from '../helpers/secret-scan.ts';
import { type Event, type Receiver, specErrors, startReceiver } from './receiver.ts';

const PASSWORD = PASSWORDS[1] as string;

describe.each(testBackends)('lineage events of a sync (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  let receiver: Receiver;

  beforeAll(async () => {
    fixture = await startSyncFixture(backend, {
      seed: 11,
      accounts: 1,
      businessesPerAccount: 2,
      startDate: '2026-07-01',
    });
    env = await fixture.prepare({ migrate: true });
    if (env.DATABASE_URL) {
      // Trust authentication ignores it; the events must not carry it.
      const url = new URL(env.DATABASE_URL);
      url.password = PASSWORD;
      env.DATABASE_URL = url.toString();
    }
  });
  afterAll(async () => {
    await fixture?.close();
  });

  async function runWithReceiver(
    args: string[],
    extra: Record<string, string> = {},
  ): Promise<{ code: number | null; stderr: string; events: Event[] }> {
    receiver = await startReceiver();
    try {
      const result = await runCli(args, {
        ...env,
        OPENLINEAGE_URL: receiver.url,
        OPENLINEAGE_NAMESPACE: 'nightly-test',
        OPENLINEAGE_API_KEY: 'ol-key-secret-123',
        ...extra,
      });
      return { code: result.code, stderr: result.stderr, events: receiver.runEvents() };
    } finally {
      await receiver.close();
    }
  }

  async function latestRunId(): Promise<string> {
    const warehouse = await fixture.open();
    try {
      const { rows } = await sql<{ run_id: string }>`
        select run_id from sync_runs order by started_at desc limit 1`.execute(warehouse.db);
      return rows[0]!.run_id;
    } finally {
      await warehouse.close();
    }
  }

  function where(): { namespace: string; prefix: string } {
    const target = fixture.target!;
    if (target.kind === 'pglite')
      return { namespace: 'pglite://embedded', prefix: 'postgres.public.' };
    const url = new URL(target.databaseUrl!);
    return {
      namespace: `postgres://${url.hostname}:${url.port || '5432'}`,
      prefix: `${url.pathname.slice(1)}.${target.searchPath}.`,
    };
  }

  function expectNoSecret(): void {
    const text = receiver.received.map((r) => r.text).join('\n');
    const secrets = [
      ...fixture.sandbox.credentials.flatMap((c) => [c.authToken, c.userEmail]),
      PASSWORD,
      'ol-key-secret-123',
    ];
    expect(secretsFoundIn(text, secrets)).toEqual([]);
    for (const event of receiver.received) {
      expect(specErrors(event.body, 'run' in event.body ? 'run' : 'job')).toEqual([]);
      expect(event.path).toBe('/api/v1/lineage');
      expect(event.headers.authorization).toBe('Bearer ol-key-secret-123');
    }
  }

  it('a sync: START and COMPLETE of its run, inputs per operation, outputs per table, the views', async () => {
    const { code, stderr, events } = await runWithReceiver(['sync']);
    expect(code, stderr).toBe(0);
    expectNoSecret();
    expect(events.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
    const runId = await latestRunId();
    const [start, complete] = events as [Event, Event];
    for (const event of events) {
      expect(event.run.runId).toBe(runId);
      expect(event.job.namespace).toBe('nightly-test');
      expect(event.job.name).toBe('listings-sync.sync');
      expect(event.job.facets.jobType).toMatchObject({
        processingType: 'BATCH',
        integration: 'listings-sync',
      });
      expect(event.job.facets.tags.tags).toContainEqual({
        key: 'credential',
        value: fixture.sandbox.credentials[0]!.name,
        source: 'listings-sync',
      });
    }
    const credential = fixture.sandbox.credentials[0]!;
    const upstream = new URL(credential.baseUrl);
    const inputNames = complete.inputs.map((i: { name: string }) => i.name);
    for (const input of complete.inputs) expect(input.namespace).toBe(upstream.origin);
    expect(inputNames).toEqual(
      expect.arrayContaining([
        `${credential.name}/api/v2/businesses.json`,
        `${credential.name}/api/v2/businesses/{business_id}.json`,
        `${credential.name}/api/v2/businesses/{business_id}/listings.json`,
        `${credential.name}/api/v2/businesses/{business_id}/reviews.json`,
        `${credential.name}/api/v2/businesses/{business_id}/rankings.json`,
        `${credential.name}/api/v2/businesses/{business_id}/keywords.json`,
      ]),
    );
    expect(new Set(inputNames).size).toBe(inputNames.length);
    expect(start.inputs.map((i: { name: string }) => i.name)).toEqual(
      expect.arrayContaining(inputNames),
    );
    expect(start.outputs).toEqual([]);
    const { namespace, prefix } = where();
    const outputs = new Map<string, Event>(complete.outputs.map((o: Event) => [o.name, o]));
    for (const output of complete.outputs) expect(output.namespace).toBe(namespace);
    const listings = outputs.get(`${prefix}listings`);
    expect(listings?.outputFacets.outputStatistics.rowCount).toBeGreaterThan(0);
    // The schema facet is the listing record's shape: its columns, with their types.
    expect(listings?.facets.schema.fields).toContainEqual({ name: 'listing_id', type: 'bigint' });
    expect(outputs.get(`${prefix}businesses`)?.facets.schema.fields.length).toBeGreaterThan(3);
    // The documented views, each a job reading its tables.
    const views = new Map((receiver.jobEvents() as Event[]).map((e) => [e.outputs[0].name, e]));
    expect([...views.keys()].sort()).toEqual(VIEW_NAMES.map((v) => `${prefix}${v}`).sort());
    const rankDaily = views.get(`${prefix}v_rank_daily`)!;
    expect(rankDaily.job.name).toBe('listings-sync.view.v_rank_daily');
    expect(rankDaily.inputs.map((i: { name: string }) => i.name).sort()).toEqual(
      [
        `${prefix}rank_days`,
        `${prefix}rank_months_current`,
        `${prefix}rank_months_past`,
        `${prefix}rank_series`,
      ].sort(),
    );
  });

  it('a shard is a job of its own, with its shard in its name and tags', async () => {
    const { code, stderr, events } = await runWithReceiver(['sync', '--shard', '1/2']);
    expect(code, stderr).toBe(0);
    expectNoSecret();
    expect(events.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
    expect(events[1]!.run.runId).toBe(await latestRunId());
    for (const event of events) {
      expect(event.job.name).toBe('listings-sync.sync.shard-1-of-2');
      expect(event.job.facets.tags.tags).toContainEqual({
        key: 'shard',
        value: '1/2',
        source: 'listings-sync',
      });
    }
  });

  it("a failed sync ends FAIL with an error facet, and the orchestrator's parent run", async () => {
    const parentRunId = '3f1a2b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b';
    const refused = `${fixture.credentialsFile}.refused.json`;
    writeFileSync(
      refused,
      JSON.stringify(
        fixture.sandbox.credentials.map((c) => ({ ...c, authToken: 'refused-token-456' })),
      ),
    );
    const { code, stderr, events } = await runWithReceiver(['sync'], {
      LISTINGS_CREDENTIALS_FILE: refused,
      OPENLINEAGE_PARENT_ID: `airflow-prod/nightly.sync/${parentRunId}`,
    });
    expect(code, stderr).toBe(1);
    expectNoSecret();
    expect(
      secretsFoundIn(receiver.received.map((r) => r.text).join('\n'), ['refused-token-456']),
    ).toEqual([]);
    expect(events.map((e) => e.eventType)).toEqual(['START', 'FAIL']);
    const fail = events[1]!;
    expect(fail.run.runId).toBe(await latestRunId());
    expect(fail.run.facets.errorMessage.programmingLanguage).toBe('TypeScript');
    expect(fail.run.facets.errorMessage.message).toContain(fixture.sandbox.credentials[0]!.name);
    for (const event of events) {
      expect(event.run.facets.parent).toMatchObject({
        run: { runId: parentRunId },
        job: { namespace: 'airflow-prod', name: 'nightly.sync' },
      });
    }
  });

  it('an interrupted sync ends ABORT', async () => {
    receiver = await startReceiver();
    try {
      // The business list hangs until the stop aborts it.
      fixture.sandbox.setFaults({ script: [{ kind: 'hang', operation: 'list_businesses' }] });
      const running = startCli(['sync'], {
        ...env,
        OPENLINEAGE_URL: receiver.url,
        OPENLINEAGE_API_KEY: 'ol-key-secret-123',
      });
      await running.waitForStderr('sync started');
      running.stop('SIGTERM');
      const result = await running.done;
      expect(result.code, result.stderr).toBe(3);
      expectNoSecret();
      const events = receiver.runEvents();
      expect(events.map((e) => e.eventType)).toEqual(['START', 'ABORT']);
      expect(events[1]!.run.runId).toBe(await latestRunId());
      expect(events[1]!.job.namespace).toBe('default');
    } finally {
      fixture.sandbox.setFaults({ script: [] });
      await receiver.close();
    }
  });
});
