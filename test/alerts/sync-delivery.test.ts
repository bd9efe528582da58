/**
 * `listings-sync sync` with a sink that never answers: the process delivers at most its
 * own run's alerts, starts no send that could not end (at ALERT_SINK_TIMEOUT_SECONDS)
 * within ALERT_SYNC_DELIVERY_SECONDS, exits with the run's code, and leaves the alerts
 * pending for `serve`, untouched: no send was cut short, so none can arrive twice.
 */
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTING_INACCURATE } from '../../src/alerts/kinds/index.ts';
import { raise } from '../../src/alerts/outbox-rows.ts';
import type { RunningSandbox } from '../../src/sandbox/server.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { runCli, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';

/** Accepts the request and never answers. */
async function startHangingReceiver() {
  const requests: string[] = [];
  const server: Server = createServer((request) => {
    request.resume();
    requests.push(request.url ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/slack`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.each(testBackends)('sync delivers its own alerts within a bound (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let sandbox: RunningSandbox;
  let receiver: Awaited<ReturnType<typeof startHangingReceiver>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startSyncFixture(
      backend,
      { seed: 11, accounts: 2, businessesPerAccount: 6 },
      'ls-sync-alerts-',
    );
    sandbox = fixture.sandbox;
    receiver = await startHangingReceiver();
    env = {
      ...(await fixture.prepare({ migrate: false })),
      ALERT_SLACK_WEBHOOK_URL: receiver.url,
      // The sink may take five minutes: longer than this test may run.
      ALERT_SINK_TIMEOUT_SECONDS: '300',
      ALERT_SYNC_DELIVERY_SECONDS: '1',
    };
  });
  afterAll(async () => {
    await receiver?.close();
    await fixture?.close();
  });

  function openTarget(): Promise<Warehouse> {
    return fixture.open();
  }

  it('leaves alerts it cannot finish sending within its delivery time to serve, untried', async () => {
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const baseline = await runCli(['sync'], env);
    expect(baseline.code, baseline.stderr).toBe(0);
    // An alert from before this run: `serve`'s to send, not this run's.
    let wh = await openTarget();
    try {
      await raise(wh.db, [
        {
          kind: LISTING_INACCURATE,
          dedupeKey: 'older',
          accountName: sandbox.credentials[0]!.name,
          businessId: 1,
          previousStatus: 'Accurate',
          status: 'Inaccurate',
          detectedAt: new Date('2025-01-01T00:00:00Z'),
          runId: null,
        },
      ]);
    } finally {
      await wh.close();
    }

    sandbox.advanceDays(1);
    const result = await runCli(['sync'], env);
    expect(result.code, result.stderr).toBe(0);
    // A 300 s sink cannot answer within a 1 s budget: nothing was sent, and the log says why.
    expect(receiver.requests).toEqual([]);
    expect(result.stderr).toContain('ALERT_SYNC_DELIVERY_SECONDS');
    expect(result.stderr).toContain('ALERT_SINK_TIMEOUT_SECONDS');

    wh = await openTarget();
    try {
      const alerts = await wh.db.selectFrom('alerts').selectAll().orderBy('alert_id').execute();
      const older = alerts.find((a) => a.dedupe_key === 'older')!;
      expect(older).toMatchObject({ attempts: 0, next_attempt_at: null, delivered_at: null });
      const own = alerts.filter((a) => a.dedupe_key !== 'older');
      expect(own.length).toBeGreaterThan(0);
      for (const alert of own) {
        // Not tried, so due at once for `serve`.
        expect(alert).toMatchObject({
          delivered_at: null,
          attempts: 0,
          next_attempt_at: null,
          last_error: null,
        });
      }
    } finally {
      await wh.close();
    }
  });
});
