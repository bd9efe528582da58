/**
 * The events of a `replay` and of an `airbyte read` (docs/lineage.md), caught by a local
 * receiver: each START then COMPLETE, held to the spec subset (test/lineage/receiver.ts),
 * under its own job (`listings-sync.replay`, `listings-sync.airbyte.read`), its inputs the
 * operations it read named from the base URL, and no token or e-mail anywhere.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { runCli, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { secretsFoundIn } from '../helpers/secret-scan.ts';
import { type Receiver, specErrors, startReceiver } from './receiver.ts';

function expectValidAndClean(receiver: Receiver, secrets: string[]): void {
  const text = receiver.received.map((r) => r.text).join('\n');
  expect(secretsFoundIn(text, secrets)).toEqual([]);
  for (const { body } of receiver.received) {
    expect(specErrors(body, 'run' in body ? 'run' : 'job')).toEqual([]);
  }
}

describe.each(testBackends)('lineage events of a replay and an airbyte read (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  let secrets: string[];
  beforeAll(async () => {
    fixture = await startSyncFixture(backend, {
      seed: 3,
      accounts: 1,
      businessesPerAccount: 1,
      startDate: '2026-07-01',
    });
    env = await fixture.prepare({ migrate: true });
    secrets = fixture.sandbox.credentials.flatMap((c) => [c.authToken, c.userEmail]);
    // The night replay rebuilds from: synced without lineage.
    const synced = await runCli(['sync'], env);
    expect(synced.code, synced.stderr).toBe(0);
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('a replay: START and COMPLETE of the replayed run, its tables in the schema it wrote', async () => {
    const receiver = await startReceiver();
    try {
      const result = await runCli(['replay', '--into', 'rebuilt'], {
        ...env,
        OPENLINEAGE_URL: receiver.url,
      });
      expect(result.code, result.stderr).toBe(0);
      expectValidAndClean(receiver, secrets);
      const events = receiver.runEvents();
      expect(events.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
      expect(events[0]!.run.runId).toBe(events[1]!.run.runId);
      for (const event of events) expect(event.job.name).toBe('listings-sync.replay');
      const credential = fixture.sandbox.credentials[0]!;
      expect(events[1]!.inputs.map((i: { name: string }) => i.name)).toContain(
        `${credential.name}/api/v2/businesses/{business_id}/listings.json`,
      );
      const outputs = events[1]!.outputs.map((o: { name: string }) => o.name);
      expect(outputs.some((name: string) => name.endsWith('.rebuilt.listings'))).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it('an airbyte read: START and COMPLETE, the operations per credential as inputs, no outputs', async () => {
    const receiver = await startReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'lineage-airbyte-'));
    try {
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ credentials: fixture.sandbox.credentials }));
      const catalog = join(dir, 'catalog.json');
      writeFileSync(
        catalog,
        JSON.stringify({
          streams: ['businesses', 'listings'].map((name) => ({
            stream: { name, json_schema: {}, supported_sync_modes: ['full_refresh'] },
            sync_mode: 'full_refresh',
            destination_sync_mode: 'append',
          })),
        }),
      );
      const result = await runCli(
        ['airbyte', 'read', '--config', config, '--catalog', catalog],
        { OPENLINEAGE_URL: receiver.url, OPENLINEAGE_NAMESPACE: 'airbyte-prod' },
        {
          services: {
            createApi: () => createApiClient({ retry: { baseDelayMs: 1, maxDelayMs: 5 } }),
          },
        },
      );
      expect(result.code, result.stdout).toBe(0);
      expectValidAndClean(receiver, secrets);
      const events = receiver.runEvents();
      expect(events.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
      const credential = fixture.sandbox.credentials[0]!;
      for (const event of events) {
        expect(event.job).toMatchObject({
          namespace: 'airbyte-prod',
          name: 'listings-sync.airbyte.read',
        });
        expect(event.job.facets.jobType.jobType).toBe('SOURCE');
        expect(event.outputs).toEqual([]);
      }
      expect(events[1]!.inputs).toEqual(
        expect.arrayContaining([
          {
            namespace: new URL(credential.baseUrl).origin,
            name: `${credential.name}/api/v2/businesses.json`,
          },
          {
            namespace: new URL(credential.baseUrl).origin,
            name: `${credential.name}/api/v2/businesses/{business_id}/listings.json`,
          },
        ]),
      );
      expect(receiver.jobEvents()).toEqual([]);
    } finally {
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
