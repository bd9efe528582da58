/**
 * `listings-sync alerts` as a user runs it: kind, business id and name, what changed, and
 * per configured sink whether it took the alert.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTING_INACCURATE, SYNC_STALE } from '../../src/alerts/kinds/index.ts';
import { recordDeliveryAttempts, recordSinksSeen } from '../../src/alerts/outbox.ts';
import { type NewAlert, raise } from '../../src/alerts/outbox-rows.ts';
import { insertNewSinks } from '../../src/alerts/sink-rows.ts';
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
    // Both sinks ran before these alerts were raised (a dispatcher delivered to slack).
    await insertNewSinks(
      wh.db,
      [
        { name: 'slack', backlog: 'skip' },
        { name: 'webhook', backlog: 'skip' },
      ],
      new Date('2025-03-01T00:00:00Z'),
    );
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

  it('--pending lists what a sink that has run will still take, under either backlog policy', async () => {
    for (const backlog of ['skip', 'send']) {
      const pending = await runCli(['alerts', '--pending'], { ...env, ALERT_BACKLOG: backlog });
      expect(pending.code, pending.stderr).toBe(0);
      const lines = pending.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(4);
      expect(lines[2]).toMatch(/^sync_stale .* slack: pending, webhook: pending /);
      expect(lines[3]).toMatch(/^listing_inaccurate .* slack: sent, webhook: pending /);
    }
  });
});

describe.each(testBackends)(
  'listings-sync alerts --pending and sinks not run yet (%s)',
  (backend) => {
    let target: CommandWarehouse;
    const stale = (dedupeKey: string, day: string): NewAlert => ({
      kind: SYNC_STALE,
      dedupeKey,
      accountName: 'east',
      businessId: null,
      previousStatus: null,
      status: 'stale',
      details: { lastSuccessAt: '2025-03-01T03:00:00.000Z' },
      detectedAt: new Date(`${day}T06:00:00Z`),
      runId: null,
    });
    const WEBHOOK = {
      ALERT_WEBHOOK_URL: 'https://receiver.example/alerts',
      ALERT_WEBHOOK_SECRET: 's3cret',
    };

    beforeAll(async () => {
      // Two alerts raised, no sink ever run: `alert_sinks` is empty.
      target = await createCommandWarehouse(backend);
      await addAccount(target.warehouse);
      await raise(target.warehouse.db, [stale('a', '2025-03-02'), stale('b', '2025-03-03')]);
    });
    afterAll(async () => {
      await target?.close();
    });

    it('with no sink configured, nothing is pending: alerts are only logged', async () => {
      const pending = await runCli(['alerts', '--pending'], target.env);
      expect(pending.code, pending.stderr).toBe(0);
      expect(pending.stdout).toBe(
        'no sink configured: nothing is pending (alerts are only logged; set ALERT_SLACK_WEBHOOK_URL, ' +
          'or ALERT_WEBHOOK_URL with ALERT_WEBHOOK_SECRET, to deliver them).\n',
      );
      // The list itself still shows each alert as logged only.
      const all = await runCli(['alerts'], target.env);
      expect(all.stdout.match(/ no sink \(log only\) /g)).toHaveLength(2);
    });

    it('a new sink under ALERT_BACKLOG=send takes every open alert', async () => {
      const env = {
        ...target.env,
        ALERT_SLACK_WEBHOOK_URL: 'https://hooks.example/services/T/B/x',
        ALERT_BACKLOG: 'send',
      };
      const pending = await runCli(['alerts', '--pending'], env);
      expect(pending.code, pending.stderr).toBe(0);
      const lines = pending.stdout.trimEnd().split('\n');
      expect(lines.filter((line) => /^sync_stale .* slack: pending /.test(line))).toHaveLength(2);
      expect(lines.at(-1)).toBe(
        'Sink slack has not run yet: at its first pass it takes the 2 open alerts (ALERT_BACKLOG=send).',
      );
    });

    it('a new sink under the default ALERT_BACKLOG=skip takes none of them, as its first pass then does', async () => {
      const env = { ...target.env, ...WEBHOOK };
      const footer =
        'Sink webhook has not run yet: at its first pass it skips the 2 open alerts raised before it ' +
        '(ALERT_BACKLOG=skip; `listings-sync alerts send-backlog --sink webhook` sends them then).\n';
      const pending = await runCli(['alerts', '--pending'], env);
      expect(pending.code, pending.stderr).toBe(0);
      expect(pending.stdout).toBe(`No pending alerts.\n${footer}`);
      const all = await runCli(['alerts'], env);
      expect(
        all.stdout.match(/ webhook: will skip \(raised before sink webhook first runs\) /g),
      ).toHaveLength(2);
      expect(all.stdout.endsWith(footer)).toBe(true);

      // What the dispatcher does at the sink's first pass: the same two, skipped.
      const [first] = await recordSinksSeen(target.warehouse.db, {
        sinks: [{ name: 'webhook', backlog: 'skip' }],
        at: new Date('2025-03-04T00:00:00Z'),
      });
      expect(first).toEqual({ sink: 'webhook', backlog: 'skip', skipped: 2 });
      const after = await runCli(['alerts', '--pending'], env);
      expect(after.stdout).toMatch(
        /^No pending alerts\.\nSkipped by webhook \(added 2025-03-04 00:00Z\): 2 alerts; /,
      );
    });
  },
);
