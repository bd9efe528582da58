/**
 * Every alert kind over several simulated days, written the way the sync writes: each
 * fires exactly once on its trigger, never on the baseline, and not again while the
 * condition merely lasts. Flap damping suppresses a re-flip inside its window and not
 * outside it.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rankDrops } from '../../src/alerts/kinds/rank-drop.ts';
import { raiseSyncHealthAlerts } from '../../src/alerts/kinds/sync-health.ts';
import { alertsUnder } from '../../src/alerts/raise-for-changes.ts';
import { parseAlertRules } from '../../src/alerts/rules.ts';
import type { Listing, RankObservation, Review } from '../../src/api/index.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  recordResponseRequest,
  recordResponseStatus,
} from '../../src/warehouse/runs/review-response-requests.ts';
import {
  emptySyncRunStats,
  finishSyncRun,
  startSyncRun,
} from '../../src/warehouse/runs/sync-runs.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import {
  ACCOUNT,
  BUSINESS_ID,
  listing,
  RUN_ID,
  rank,
  review,
  reviewId,
  snapshot,
} from '../warehouse/fixtures.ts';
import { addAccount, write } from '../warehouse/helpers.ts';

/** 03:00 UTC on day `n` of March 2025: one nightly run per day. */
function day(n: number, hour = 3): Date {
  return new Date(Date.UTC(2025, 2, n, hour));
}

const ALL_ON = parseAlertRules(
  {
    rules: {
      rank_drop: { enabled: true, top: 3, worsenBy: 5, sites: ['Google'] },
      low_rating_review: { enabled: true, maxRating: 2 },
      sync_failed: { enabled: true },
      sync_stale: { enabled: true, hours: 26 },
    },
  },
  'test rules',
);

describe.each(testBackends)('alert kinds over simulated days (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
    await addAccount(wh);
  });
  afterAll(async () => {
    await wh?.close();
  });

  async function alerts(kind: string) {
    return wh.db
      .selectFrom('alerts')
      .selectAll()
      .where('kind', '=', kind)
      .orderBy('alert_id')
      .execute();
  }

  async function writeDay(
    n: number,
    parts: { listings?: Listing[]; reviews?: Review[]; rankings?: RankObservation[] },
    rules = ALL_ON,
  ) {
    return write(wh, snapshot({ reviews: [], rankings: [], ...parts }), {
      runId: RUN_ID,
      observedAt: day(n),
      onChanges: alertsUnder(rules),
    });
  }

  it('listing_inaccurate: not on the baseline, once on the turn, not while it lasts', async () => {
    // Day 1 is the business's first listings sync: an Inaccurate listing is the baseline.
    await writeDay(1, { listings: [listing(1, { status: 'Inaccurate' }), listing(2)] });
    await writeDay(2, { listings: [listing(1, { status: 'Inaccurate' }), listing(2)] });
    expect(await alerts('listing_inaccurate')).toHaveLength(0);
    const turned = [listing(1, { status: 'Inaccurate' }), listing(2, { status: 'Inaccurate' })];
    const written = await writeDay(3, { listings: turned });
    expect(written.alerts).toBe(1);
    await writeDay(4, { listings: turned });
    await writeDay(5, { listings: turned });
    const raised = await alerts('listing_inaccurate');
    expect(raised.map((a) => [a.listing_id, a.previous_status, a.status])).toEqual([
      [2, 'Accurate', 'Inaccurate'],
    ]);
    expect(raised[0]?.detected_at).toEqual(day(3));
  });

  it('flap damping: a re-flip inside the window raises nothing, one outside it raises', async () => {
    const damped = parseAlertRules(
      { rules: { listing_inaccurate: { flapWindowHours: 72 } } },
      'damping',
    );
    const status = (s: Listing['status']) => [listing(1, { status: s })];
    await writeDay(1, { listings: status('Accurate') }, damped);
    await writeDay(2, { listings: status('Inaccurate') }, damped); // alert 1
    await writeDay(3, { listings: status('Accurate') }, damped);
    await writeDay(4, { listings: status('Inaccurate') }, damped); // 48 h later: damped
    expect((await alerts('listing_inaccurate')).map((a) => a.detected_at)).toEqual([day(2)]);
    await writeDay(5, { listings: status('Accurate') }, damped);
    await writeDay(6, { listings: status('Inaccurate') }, damped); // 96 h later: raises
    expect((await alerts('listing_inaccurate')).map((a) => a.detected_at)).toEqual([
      day(2),
      day(6),
    ]);
  });

  it('without damping (the default) every re-flip raises', async () => {
    const status = (s: Listing['status']) => [listing(1, { status: s })];
    const defaults = parseAlertRules({}, 'defaults');
    for (const [n, s] of [
      [1, 'Accurate'],
      [2, 'Inaccurate'],
      [3, 'Accurate'],
      [4, 'Inaccurate'],
    ] as const) {
      await writeDay(n, { listings: status(s) }, defaults);
    }
    expect((await alerts('listing_inaccurate')).map((a) => a.detected_at)).toEqual([
      day(2),
      day(4),
    ]);
  });

  it('rank_drop: leaving the top 3 and worsening by 5 each raise once; other sites are filtered', async () => {
    const ranks = (n: number) => [
      // Leaves the top 3 on day 9, and stays out.
      rank('dentist portland', 'Google', n < 9 ? 2 : 5),
      // Worsens by 6 against 7 days before on day 9, and stays there.
      rank('teeth whitening', 'Google', n < 9 ? 10 : 16),
      // Leaves the top 3 too, on a site the rule does not watch.
      rank('dentist portland', 'Bing', n < 9 ? 1 : 9),
    ];
    for (let n = 1; n <= 8; n++) await writeDay(n, { rankings: ranks(n) });
    expect(await alerts('rank_drop')).toHaveLength(0);
    for (let n = 9; n <= 12; n++) await writeDay(n, { rankings: ranks(n) });
    const raised = await alerts('rank_drop');
    expect(
      raised.map((a) => [a.keyword, a.site_name, a.previous_status, a.status, a.detected_at]),
    ).toEqual([
      ['dentist portland', 'Google', '2', '5', day(9)],
      ['teeth whitening', 'Google', '10', '16', day(9)],
    ]);
    expect(raised[1]?.details).toMatchObject({ rank: 16, weekAgoRank: 10, worsenedBy: 6 });
    expect(raised[0]?.details).toMatchObject({ rank: 5, previousRank: 2, leftTop: 3 });
  });

  it('rank_drop filters by keyword (any case) and counts "not ranked" as leaving the top', () => {
    const rules = parseAlertRules(
      {
        rules: {
          rank_drop: { enabled: true, top: 3, worsenBy: null, keywords: ['Teeth Whitening'] },
        },
      },
      'keywords',
    );
    const history = new Map([['2025-03-08', 1]]);
    const drops = rankDrops(
      rules,
      {
        accountName: ACCOUNT,
        businessId: BUSINESS_ID,
        runId: null,
        day: '2025-03-09',
        detectedAt: day(9),
      },
      [
        { keyword: 'teeth whitening', site: 'Bing', rank: null, history },
        { keyword: 'dentist portland', site: 'Bing', rank: null, history },
      ],
    );
    expect(drops.map((d) => [d.keyword, d.previousStatus, d.status])).toEqual([
      ['teeth whitening', '1', 'not ranked'],
    ]);
  });

  it('rank_drop is off by default', async () => {
    const defaults = parseAlertRules({}, 'defaults');
    for (let n = 1; n <= 3; n++) {
      await writeDay(
        n,
        { rankings: [rank('dentist portland', 'Google', n < 3 ? 1 : 50)] },
        defaults,
      );
    }
    expect(await alerts('rank_drop')).toHaveLength(0);
  });

  it('low_rating_review: a new review at or below the rating, once; not the baseline', async () => {
    // The first reviews read holds a 1-star review: history, not news.
    const baseline = [review(1, { rating: 1 }), review(2, { rating: 5 })];
    await writeDay(1, { reviews: baseline });
    await writeDay(2, { reviews: [...baseline, review(3, { rating: 4 })] });
    expect(await alerts('low_rating_review')).toHaveLength(0);
    const later = [
      ...baseline,
      review(3, { rating: 4 }),
      review(4, { rating: 2, authorName: 'Sam' }),
    ];
    await writeDay(3, { reviews: later });
    // An edit of the same review (new text) does not raise again.
    await writeDay(4, {
      reviews: [
        ...later.slice(0, 3),
        review(4, { rating: 1, authorName: 'Sam', content: 'worse' }),
      ],
    });
    const raised = await alerts('low_rating_review');
    expect(raised.map((a) => [a.review_id, a.business_id, a.status, a.detected_at])).toEqual([
      [reviewId(4), BUSINESS_ID, '2 stars', day(3)],
    ]);
    expect(raised[0]?.details).toEqual({ rating: 2, author: 'Sam' });
  });

  it('review_response_failed: once per request, and not when the rule is off', async () => {
    await writeDay(1, { reviews: [review(1)] });
    const requestId = 'rq-1';
    await recordResponseRequest(wh.db, {
      requestId,
      accountName: ACCOUNT,
      businessId: BUSINESS_ID,
      reviewId: reviewId(1),
      content: 'Thanks',
      submittedAt: day(1),
    });
    for (const [n, status] of [
      [2, 'InProgress'],
      [3, 'Failed'],
      [4, 'Failed'],
    ] as const) {
      await recordResponseStatus(wh.db, {
        requestId,
        status,
        observedAt: day(n),
        onChanges: alertsUnder(ALL_ON),
      });
    }
    const raised = await alerts('review_response_failed');
    expect(raised.map((a) => [a.request_id, a.previous_status, a.site_name])).toEqual([
      [requestId, 'InProgress', 'Google'],
    ]);

    const off = parseAlertRules({ rules: { review_response_failed: { enabled: false } } }, 'off');
    await recordResponseRequest(wh.db, {
      requestId: 'rq-2',
      accountName: ACCOUNT,
      businessId: BUSINESS_ID,
      reviewId: reviewId(1),
      content: 'Thanks again',
      submittedAt: day(4),
    });
    await recordResponseStatus(wh.db, {
      requestId: 'rq-2',
      status: 'Failed',
      observedAt: day(5),
      onChanges: alertsUnder(off),
    });
    expect(await alerts('review_response_failed')).toHaveLength(1);
  });

  async function finishedRun(status: 'succeeded' | 'partial' | 'failed', at: Date) {
    const runId = await startSyncRun(wh.db, { trigger: 'test', streams: [], accounts: [ACCOUNT] });
    await finishSyncRun(wh.db, runId, {
      status,
      stats: emptySyncRunStats(),
      error: status === 'failed' ? 'boom' : null,
    });
    // The run's own clock is the wall clock; the simulated day is set here.
    await sql`update sync_runs set started_at = ${at}, finished_at = ${at} where run_id = ${runId}`.execute(
      wh.db,
    );
    return runId;
  }

  it('sync_failed: once per failed run, and only after N in a row when asked', async () => {
    const check = (n: number, rules = ALL_ON) =>
      raiseSyncHealthAlerts(wh.db, rules, {
        now: day(n, 4),
        accounts: [ACCOUNT],
        watchingSince: day(1),
      });
    await finishedRun('succeeded', day(1));
    await check(1);
    expect(await alerts('sync_failed')).toHaveLength(0);
    const failed = await finishedRun('failed', day(2));
    await check(2);
    await check(2);
    const raised = await alerts('sync_failed');
    expect(raised.map((a) => [a.run_id, a.status, a.business_id])).toEqual([
      [failed, 'failed', null],
    ]);
    expect(raised[0]?.details).toMatchObject({ error: 'boom', consecutive: 1 });

    const twice = parseAlertRules(
      { rules: { sync_failed: { enabled: true, consecutive: 2, statuses: ['failed'] } } },
      'twice',
    );
    await finishedRun('succeeded', day(3));
    await finishedRun('failed', day(4));
    await check(4, twice);
    expect(await alerts('sync_failed')).toHaveLength(1);
    const second = await finishedRun('failed', day(5));
    await check(5, twice);
    expect((await alerts('sync_failed')).map((a) => a.run_id)).toEqual([failed, second]);
  });

  it('sync_stale: once per silence past the threshold, again after the next success', async () => {
    const check = (at: Date) =>
      raiseSyncHealthAlerts(wh.db, ALL_ON, { now: at, accounts: [ACCOUNT], watchingSince: day(1) });
    await finishedRun('succeeded', day(1));
    await check(new Date(day(1).getTime() + 25 * 3_600_000));
    expect(await alerts('sync_stale')).toHaveLength(0);
    await check(new Date(day(1).getTime() + 27 * 3_600_000));
    await check(new Date(day(1).getTime() + 40 * 3_600_000));
    expect((await alerts('sync_stale')).map((a) => a.account_name)).toEqual([ACCOUNT]);
    // A failed run is not a success: still the same silence.
    await finishedRun('failed', day(3));
    await check(day(3, 5));
    expect(await alerts('sync_stale')).toHaveLength(1);
    await finishedRun('partial', day(4));
    await check(day(4, 5));
    expect(await alerts('sync_stale')).toHaveLength(1);
    await check(day(5, 6));
    const raised = await alerts('sync_stale');
    expect(raised).toHaveLength(2);
    expect(raised[1]?.details).toMatchObject({ lastSuccessAt: day(4).toISOString() });
  });

  it('sync_stale: an account that never synced is measured from when serve started watching', async () => {
    const check = (hours: number) =>
      raiseSyncHealthAlerts(wh.db, ALL_ON, {
        now: new Date(day(1).getTime() + hours * 3_600_000),
        accounts: ['never-ran'],
        watchingSince: day(1),
      });
    await check(20);
    expect(await alerts('sync_stale')).toHaveLength(0);
    await check(30);
    await check(50);
    // `agency-east` is in the warehouse with no run either: both are stale, once each.
    expect((await alerts('sync_stale')).map((a) => a.account_name).sort()).toEqual([
      ACCOUNT,
      'never-ran',
    ]);
  });
});
