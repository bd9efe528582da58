/**
 * `listings-sync alerts` as a user runs it: kind, business id and name, what changed, and
 * per configured sink whether it took the alert.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTING_INACCURATE, SYNC_STALE } from '../../src/alerts/kinds.ts';
import { recordDeliveryAttempts } from '../../src/alerts/outbox.ts';
import { raise } from '../../src/alerts/outbox-rows.ts';
import { type CommandWarehouse, createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { ctx, snapshot } from '../warehouse/fixtures.ts';
import { addAccount, write } from '../warehouse/helpers.ts';

describe.each(testBackends)('listings-sync alerts (%s)', (backend) => {
  let target: CommandWarehouse;
  let env: Record<string, string>;

  beforeAll(async () => {
    target = await createCommandWarehouse(backend);
    const wh = target.warehouse;
    await addAccount(wh);
    await write(wh, snapshot(), ctx(new Date('2025-03-01T03:00:00Z')));
    await raise(wh.db, [
      {
        kind: LISTING_INACCURATE,
        dedupeKey: 'a',
        accountName: 'east',
        businessId: 1204,
        listingId: 7,
        siteName: 'Yelp',
        previousStatus: 'Accurate',
        status: 'Inaccurate',
        detectedAt: new Date('2025-03-02T03:00:00Z'),
        runId: null,
      },
      {
        kind: SYNC_STALE,
        dedupeKey: 'b',
        accountName: 'east',
        businessId: null,
        previousStatus: null,
        status: 'stale',
        details: { lastSuccessAt: '2025-03-01T03:00:00.000Z' },
        detectedAt: new Date('2025-03-02T06:00:00Z'),
        runId: null,
      },
    ]);
    const first = await wh.db
      .selectFrom('alerts')
      .select('alert_id')
      .where('dedupe_key', '=', 'a')
      .executeTakeFirstOrThrow();
    await recordDeliveryAttempts(wh.db, new Date('2025-03-02T03:01:00Z'), [
      {
        alertId: Number(first.alert_id),
        deliveredSinks: ['slack'],
        delivered: false,
        error: 'webhook: HTTP 500',
        nextAttemptAt: null,
      },
    ]);
    env = target.env;
    env = {
      ...env,
      ALERT_SLACK_WEBHOOK_URL: 'https://hooks.example/services/T/B/x',
      ALERT_WEBHOOK_URL: 'https://receiver.example/alerts',
      ALERT_WEBHOOK_SECRET: 's3cret',
    };
  });
  afterAll(async () => {
    await target?.close();
  });

  it('shows kind, business, what changed and delivery per sink', async () => {
    const result = await runCli(['alerts'], env);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^kind {2,}business {2,}what changed {2,}detected {2,}delivery {2,}attempts {2}last error$/,
    );
    expect(lines[2]).toMatch(
      /^sync_stale {2,}no successful run since 2025-03-01T03:00:00.000Z {2,}2025-03-02 06:00Z {2,}slack: pending, webhook: pending {2,}0$/,
    );
    expect(lines[3]).toMatch(
      /^listing_inaccurate {2}1204 Harbor Dental {2,}Yelp: Accurate → Inaccurate {2,}2025-03-02 03:00Z {2}slack: sent, webhook: pending {2,}1 {2}webhook: HTTP 500$/,
    );
    const pending = await runCli(['alerts', '--pending', '--limit', '1'], env);
    expect(pending.stdout.trimEnd().split('\n')).toHaveLength(3);
  });
});
