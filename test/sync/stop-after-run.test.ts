/**
 * A run's stop handling ends with the run (docs/serve.md, "Shutdown"): `serve` hands
 * one signal to every scheduled run, and a stop that comes after a run finished must not
 * arm that run's grace (a 15 s wait before the process could exit) nor log its
 * "stopping" line.
 */
import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/run.ts';
import { testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { worldPerTest } from './harness.ts';

describe.each(testBackends)('a stop after the run (%s)', (backend) => {
  const world = worldPerTest(backend, {
    seed: 43,
    accounts: 1,
    businessesPerAccount: 1,
    startDate: '2026-07-01',
  });

  it('neither logs a stop nor leaves a grace timer for runs that already finished', async () => {
    const stop = new AbortController();
    const { logger, lines } = memoryLogger();
    for (let run = 0; run < 3; run += 1) {
      const result = await runSync({
        warehouse: world.warehouse,
        api: world.api,
        credentials: world.sandbox.credentials,
        logger,
        trigger: 'test',
        signal: stop.signal,
        stopGraceMs: 15_000,
      });
      expect(result.status).toBe('succeeded');
    }
    const timersBefore = process
      .getActiveResourcesInfo()
      .filter((kind) => kind === 'Timeout').length;
    stop.abort();
    // Listeners run synchronously on abort; their promise callbacks on the next ticks.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const timersAfter = process
      .getActiveResourcesInfo()
      .filter((kind) => kind === 'Timeout').length;
    expect(timersAfter).toBeLessThanOrEqual(timersBefore);
    expect(lines().filter((line) => line.includes('stopping:'))).toEqual([]);
  });
});
