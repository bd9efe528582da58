/**
 * The outbox statements on a real database: raise is idempotent per dedupe key; claims
 * are leases (a claimed alert is not due again until its lease ends, a released one is
 * due at once); attempts are recorded per alert with redacted errors; per-sink pending
 * counts, counts per kind, and the paging the no-sink logger relies on.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LISTING_INACCURATE, RANK_DROP } from '../../src/alerts/kinds/index.ts';
import {
  claimDueAlerts,
  recentAlerts,
  recordDeliveryAttempts,
  undeliveredAlertsAfter,
} from '../../src/alerts/outbox.ts';
import {
  countAlertsByKind,
  countPendingBySink,
  type NewAlert,
  raise,
  releaseClaims,
} from '../../src/alerts/outbox-rows.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';

const T0 = new Date('2025-03-01T03:00:00.000Z');
const RUN_A = '6f1d9a52-3c1e-4a38-9d55-1b6c0e0c8a0a';
const RUN_B = '6f1d9a52-3c1e-4a38-9d55-1b6c0e0c8a0b';
const TOKEN = 'tok_live_9f8e7d6c5b4a';

function alert(n: number, overrides: Partial<NewAlert> = {}): NewAlert {
  return {
    kind: LISTING_INACCURATE,
    dedupeKey: `test:${n}`,
    accountName: 'east',
    businessId: 100 + n,
    listingId: n,
    siteName: 'Yelp',
    previousStatus: 'Accurate',
    status: 'Inaccurate',
    detectedAt: new Date(T0.getTime() + n * 1000),
    runId: RUN_A,
    ...overrides,
  };
}

describe.each(testBackends)('alert outbox (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
  });
  afterAll(async () => {
    await wh?.close();
  });

  it('raises once per dedupe key, in one statement for many', async () => {
    expect(await raise(wh.db, [alert(1), alert(2), alert(3)])).toBe(3);
    expect(await raise(wh.db, [alert(2), alert(4)])).toBe(1);
    const rows = await wh.db
      .selectFrom('alerts')
      .select('dedupe_key')
      .orderBy('alert_id')
      .execute();
    expect(rows.map((r) => r.dedupe_key)).toEqual(['test:1', 'test:2', 'test:3', 'test:4']);
  });

  it('claims due alerts oldest first under a lease, records attempts, and releases', async () => {
    await raise(wh.db, [alert(2), alert(1), alert(3)]);
    const claimed = await claimDueAlerts(wh.db, { limit: 2, now: T0, leaseMs: 60_000 });
    expect(claimed.map((a) => a.dedupeKey)).toEqual(['test:1', 'test:2']);
    // Leased: a second claimer inside the lease gets only the third.
    const second = await claimDueAlerts(wh.db, { limit: 10, now: T0, leaseMs: 60_000 });
    expect(second.map((a) => a.dedupeKey)).toEqual(['test:3']);
    expect(await claimDueAlerts(wh.db, { limit: 10, now: T0, leaseMs: 60_000 })).toEqual([]);

    const [first, other] = claimed;
    const retryAt = new Date(T0.getTime() + 3_600_000);
    await recordDeliveryAttempts(wh.db, T0, [
      {
        alertId: first!.alertId,
        deliveredSinks: ['slack'],
        delivered: true,
        error: null,
        nextAttemptAt: null,
      },
      {
        alertId: other!.alertId,
        deliveredSinks: [],
        delivered: false,
        error: `slack: POST https://hooks.example/?token=${TOKEN} 500`,
        nextAttemptAt: retryAt,
      },
    ]);
    const rows = await wh.db.selectFrom('alerts').selectAll().orderBy('detected_at').execute();
    expect(rows.map((r) => [r.dedupe_key, r.attempts, r.delivered_at, r.delivered_sinks])).toEqual([
      ['test:1', 1, T0, ['slack']],
      ['test:2', 1, null, []],
      ['test:3', 0, null, []],
    ]);
    expect(rows[1]!.last_error).toContain('slack: POST https://hooks.example/');
    expect(rows[1]!.last_error).not.toContain(TOKEN);
    expect(rows[1]!.next_attempt_at).toEqual(retryAt);

    // After the lease of the third and before the retry of the second: only the third.
    const later = new Date(T0.getTime() + 120_000);
    expect(
      (await claimDueAlerts(wh.db, { limit: 10, now: later, leaseMs: 60_000 })).map(
        (a) => a.dedupeKey,
      ),
    ).toEqual(['test:3']);
    // Released claims are due at once; a delivered alert is never released back.
    await releaseClaims(wh.db, [first!.alertId, rows[2]!.alert_id]);
    expect(
      (await claimDueAlerts(wh.db, { limit: 10, now: later, leaseMs: 60_000 })).map(
        (a) => a.dedupeKey,
      ),
    ).toEqual(['test:3']);
  });

  it("claims only one run's alerts when asked", async () => {
    await raise(wh.db, [alert(1), alert(2, { runId: RUN_B }), alert(3)]);
    const claimed = await claimDueAlerts(wh.db, {
      limit: 10,
      now: T0,
      leaseMs: 60_000,
      runId: RUN_B,
    });
    expect(claimed.map((a) => a.dedupeKey)).toEqual(['test:2']);
  });

  it('counts pending per configured sink and raised per kind', async () => {
    await raise(wh.db, [alert(1), alert(2), alert(3, { kind: RANK_DROP, keyword: 'dentist' })]);
    const ids = (
      await wh.db.selectFrom('alerts').select('alert_id').orderBy('alert_id').execute()
    ).map((r) => Number(r.alert_id));
    await recordDeliveryAttempts(wh.db, T0, [
      {
        alertId: ids[0]!,
        deliveredSinks: ['slack', 'webhook'],
        delivered: true,
        error: null,
        nextAttemptAt: null,
      },
      {
        alertId: ids[1]!,
        deliveredSinks: ['slack'],
        delivered: false,
        error: 'webhook: HTTP 500',
        nextAttemptAt: T0,
      },
    ]);
    expect(await countPendingBySink(wh.db, ['slack', 'webhook'])).toEqual({ slack: 1, webhook: 2 });
    expect(await countPendingBySink(wh.db, [])).toEqual({});
    expect(await countAlertsByKind(wh.db)).toEqual({ [LISTING_INACCURATE]: 2, [RANK_DROP]: 1 });
  });

  it('pages undelivered alerts by id, and lists recent ones newest first', async () => {
    await raise(
      wh.db,
      Array.from({ length: 25 }, (_, i) => alert(i + 1)),
    );
    const first = await undeliveredAlertsAfter(wh.db, { afterId: 0, limit: 10 });
    const next = await undeliveredAlertsAfter(wh.db, { afterId: first.at(-1)!.alertId, limit: 10 });
    const last = await undeliveredAlertsAfter(wh.db, { afterId: next.at(-1)!.alertId, limit: 10 });
    expect([...first, ...next, ...last].map((a) => a.dedupeKey)).toEqual(
      Array.from({ length: 25 }, (_, i) => `test:${i + 1}`),
    );
    const recent = await recentAlerts(wh.db, { pending: true, limit: 3 });
    expect(recent.map((a) => a.dedupeKey)).toEqual(['test:25', 'test:24', 'test:23']);
  });
});
