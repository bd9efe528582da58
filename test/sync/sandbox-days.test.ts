/**
 * A sync records the upstream's days: against a sandbox whose clock has been advanced,
 * each `clock/advance` + `sync` adds a day of rank history instead of overwriting today's
 * (docs/running.md, "Which day a sync records").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { testApiClient } from './harness.ts';

describe.each(testBackends)('rank days follow the upstream clock (%s)', (backend) => {
  let sandbox: RunningSandbox | undefined;
  let warehouse: TestWarehouse | undefined;

  afterEach(async () => {
    await sandbox?.close();
    await warehouse?.close();
    sandbox = undefined;
    warehouse = undefined;
  });

  async function rankDays(): Promise<{ day: string; n: number }[]> {
    const rows = await (warehouse as TestWarehouse).db
      .selectFrom('rank_observations')
      .select(['observed_on as day', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('observed_on')
      .orderBy('observed_on')
      .execute();
    return rows.map((row) => ({ day: String(row.day), n: Number(row.n) }));
  }

  it('the sandbox answers with its own date, and clock/advance + sync adds a day', async () => {
    sandbox = await startSandbox({
      seed: 3,
      accounts: 1,
      businessesPerAccount: 2,
      startDate: '2026-01-05',
      port: 0,
    });
    warehouse = await createTestWarehouse(backend);
    const answer = await fetch(`${sandbox.baseUrl}/__sandbox/clock`);
    expect(new Date(answer.headers.get('date') ?? '').toISOString().slice(0, 10)).toBe(
      '2026-01-05',
    );

    const api = testApiClient();
    try {
      const { logger } = memoryLogger();
      const first = await runSync({
        warehouse,
        api,
        credentials: sandbox.credentials,
        logger,
        trigger: 'test',
      });
      expect(first.status).toBe('succeeded');
      const before = await rankDays();
      expect(before.map((d) => d.day)).toEqual(['2026-01-05']);

      const advanced = await fetch(`${sandbox.baseUrl}/__sandbox/clock/advance`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ days: 1 }),
      });
      expect(await advanced.json()).toEqual({ date: '2026-01-06' });
      const second = await runSync({
        warehouse,
        api,
        credentials: sandbox.credentials,
        logger,
        trigger: 'test',
      });
      expect(second.status).toBe('succeeded');
      const after = await rankDays();
      expect(after.map((d) => d.day)).toEqual(['2026-01-05', '2026-01-06']);
      // The first day is kept as it was; the new day has observations of its own.
      expect(after[0]).toEqual(before[0]);
      expect(after[1]?.n).toBeGreaterThan(0);
    } finally {
      await api.close();
    }
  });

  it('an implausible upstream date (years ahead) falls back to the local clock, with a warning', async () => {
    sandbox = await startSandbox({
      seed: 3,
      accounts: 1,
      businessesPerAccount: 1,
      startDate: '2099-06-01',
      port: 0,
    });
    warehouse = await createTestWarehouse(backend);
    const api = testApiClient();
    try {
      const { logger, lines } = memoryLogger();
      const localBefore = new Date().toISOString().slice(0, 10);
      await runSync({ warehouse, api, credentials: sandbox.credentials, logger, trigger: 'test' });
      const localAfter = new Date().toISOString().slice(0, 10);
      const days = (await rankDays()).map((d) => d.day);
      expect(days).toHaveLength(1);
      expect([localBefore, localAfter]).toContain(days[0]);
      const warnings = lines().filter((line) => line.includes('no plausible Date header'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0] as string)).toMatchObject({
        level: 'warn',
        upstreamDate: expect.stringMatching(/^2099-06-01/),
      });
    } finally {
      await api.close();
    }
  });
});
