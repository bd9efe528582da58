/**
 * The run result (docs/running.md, "The run result"): `sync --result-json` prints one JSON
 * document on standard output and nothing else (the summary goes to standard error),
 * `sync --result-file` and `replay --result-file` write it to a file; each holds to the
 * schema the project ships (docs/schemas/run-result.schema.json, validated with ajv), and
 * says the run id of the `sync_runs` row, the status, the exit code, the counts per table,
 * the failures and quarantined records, the upstream day.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import type { Event } from './receiver.ts';

const schema = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../docs/schemas/run-result.schema.json'), 'utf8'),
) as object;
const ajv = new Ajv({ allErrors: true, strict: true });
addFormats.default(ajv);
const validate = ajv.compile(schema);

function schemaErrors(value: unknown): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

describe('the run result schema', () => {
  it('refuses a document without its fields or with a status it does not know', () => {
    expect(schemaErrors({ command: 'sync' })).not.toEqual([]);
    expect(
      schemaErrors({
        $schema: 'https://example.com/s.json',
        command: 'sync',
        runId: null,
        runIds: [],
        status: 'done',
        exitCode: 0,
        tables: {},
        failures: [],
        failureCount: 0,
        quarantined: 0,
        upstreamDays: {},
      }),
    ).toEqual(['/status must be equal to one of the allowed values']);
  });
});

describe.each(testBackends)('the run result of sync and replay (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  beforeAll(async () => {
    fixture = await startSyncFixture(backend, {
      seed: 9,
      accounts: 1,
      businessesPerAccount: 2,
      startDate: '2026-07-01',
    });
    env = await fixture.prepare({ migrate: true });
  });
  afterAll(async () => {
    await fixture?.close();
  });

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

  it('sync --result-json: standard output is the result alone, the summary on standard error', async () => {
    const result = await runCli(['sync', '--result-json'], env);
    expect(result.code, result.stderr).toBe(0);
    const document = JSON.parse(result.stdout) as Event;
    expect(schemaErrors(document)).toEqual([]);
    expect(result.stderr).toMatch(/Sync succeeded/);
    expect(document).toMatchObject({
      command: 'sync',
      runId: await latestRunId(),
      status: 'succeeded',
      exitCode: 0,
      failures: [],
      failureCount: 0,
      quarantined: 0,
      upstreamDays: { [fixture.sandbox.credentials[0]!.name]: '2026-07-01' },
    });
    expect(document.runIds).toEqual([document.runId]);
    expect(document.tables.listings.inserted).toBeGreaterThan(0);
  });

  it('sync --result-file of a failed run: its status, exit code and failures', async () => {
    const path = join(fixture.pgliteDir, '..', 'result.json');
    const refused = join(fixture.pgliteDir, '..', 'refused.json');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      refused,
      JSON.stringify(fixture.sandbox.credentials.map((c) => ({ ...c, authToken: 'nope-123' }))),
    );
    const result = await runCli(['sync', '--result-file', path], {
      ...env,
      LISTINGS_CREDENTIALS_FILE: refused,
    });
    expect(result.code, result.stderr).toBe(1);
    const document = JSON.parse(readFileSync(path, 'utf8')) as Event;
    expect(schemaErrors(document)).toEqual([]);
    expect(document).toMatchObject({ status: 'failed', exitCode: 1, runId: await latestRunId() });
    expect(document.failureCount).toBeGreaterThan(0);
    expect(document.failures[0].credential).toBe(fixture.sandbox.credentials[0]!.name);
    expect(readFileSync(path, 'utf8')).not.toContain('nope-123');
  });

  it('replay --result-file: the runs it made, exit 0', async () => {
    const path = join(fixture.pgliteDir, '..', 'replay.json');
    const result = await runCli(['replay', '--into', 'rebuilt', '--result-file', path], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Replayed/);
    const document = JSON.parse(readFileSync(path, 'utf8')) as Event;
    expect(schemaErrors(document)).toEqual([]);
    expect(document).toMatchObject({
      command: 'replay',
      runId: null,
      status: 'succeeded',
      exitCode: 0,
    });
    expect(document.runIds.length).toBeGreaterThan(0);
  });
});
