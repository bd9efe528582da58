/**
 * What alerts say, from alerts as the outbox reads them: the Slack text of one listing
 * alert, the digest (counts, worst first with links, "and N more", under the size limit
 * whatever the names), and the one-line summary per kind.
 */
import { describe, expect, it } from 'vitest';
import {
  LISTING_BROKEN_AGAIN,
  LISTING_INACCURATE,
  LOW_RATING_REVIEW,
  RANK_DROP,
  SYNC_FAILED,
  SYNC_STALE,
  VOLUME_DROP,
} from '../../src/alerts/kinds/index.ts';
import {
  alertWebhookBody,
  digestMessages,
  slackDigest,
  slackMessage,
  whatChanged,
} from '../../src/alerts/messages.ts';
import type { AlertForDelivery } from '../../src/alerts/outbox.ts';

/** A digest's text stops before 3,500 characters (docs/alerts.md). */
const SLACK_TEXT_LIMIT = 3_500;

const RUN = '0b9d6a52-3c1e-4a38-9d55-1b6c0e0c8a01';

function listingAlert(n: number, overrides: Partial<AlertForDelivery> = {}): AlertForDelivery {
  return {
    alertId: n,
    kind: LISTING_INACCURATE,
    dedupeKey: `listing_inaccurate:${n}`,
    accountName: 'east',
    businessId: 1200 + n,
    businessName: `Harbor Dental ${n}`,
    listingId: n,
    siteName: 'Yelp',
    keyword: null,
    previousStatus: 'Accurate',
    status: 'Inaccurate',
    details: {},
    detectedAt: new Date(Date.UTC(2025, 2, 1, 3, 0, n)),
    runId: RUN,
    attempts: 0,
    deliveredSinks: [],
    skippedSinks: [],
    listing: {
      name: 'Harbor Dental',
      nameValid: true,
      phone: '207-555-0143',
      phoneValid: false,
      address: '12 Pier Rd, Portland, ME',
      addressValid: false,
      liveLink: `https://yelp.example/biz/${n}`,
    },
    responseRequest: null,
    review: null,
    ...overrides,
  };
}

describe('alert messages', () => {
  it('one listing alert reads: business, directory, what is wrong, the live link', () => {
    expect(slackMessage(listingAlert(7)).text).toBe(
      [
        ':warning: *Harbor Dental 7* is now *Inaccurate* on *Yelp* (was Accurate)',
        'Wrong on the directory: phone, address.',
        '<https://yelp.example/biz/7|View the live listing>',
        'Business 1207, account east, detected 2025-03-01T03:00:07.000Z',
      ].join('\n'),
    );
    const unknown = listingAlert(8, {
      previousStatus: null,
      businessName: 'A & <B>',
      listing: {
        ...listingAlert(8).listing!,
        phoneValid: true,
        addressValid: true,
        liveLink: 'n/a',
      },
    });
    expect(slackMessage(unknown).text).toBe(
      [
        ':warning: *A &amp; &lt;B&gt;* is now *Inaccurate* on *Yelp* (first seen)',
        'The directory did not say which field is wrong.',
        'Business 1208, account east, detected 2025-03-01T03:00:08.000Z',
      ].join('\n'),
    );
  });

  it('a digest of 50 is one message: counts per kind, the worst 10 with links, and 40 more', () => {
    const alerts = [
      ...Array.from({ length: 45 }, (_, i) => listingAlert(i + 1)),
      ...Array.from({ length: 5 }, (_, i) =>
        listingAlert(100 + i, {
          kind: SYNC_FAILED,
          businessId: null,
          listing: null,
          status: 'failed',
        }),
      ),
    ];
    const messages = digestMessages(alerts, { worst: 10 });
    expect(messages).toHaveLength(1);
    const lines = messages[0]!.text.split('\n');
    expect(lines[0]).toBe(
      `:bell: *50 alerts* for account *east*, run 0b9d6a52: 5 failed syncs, 45 listings newly Inaccurate.`,
    );
    // The failed syncs lead; then the newest listings.
    expect(
      lines.slice(1, 6).every((l) => l.startsWith('• :rotating_light: account east: run ')),
    ).toBe(true);
    expect(lines[6]).toBe(
      '• :warning: <https://yelp.example/biz/45|Harbor Dental 45: Yelp: Accurate → Inaccurate (wrong: phone, address)>',
    );
    expect(lines).toHaveLength(12);
    expect(lines[11]).toBe('…and 40 more (`listings-sync alerts` lists them all).');
    expect(messages[0]!.text.length).toBeLessThanOrEqual(SLACK_TEXT_LIMIT);
  });

  it('a digest stays under the size limit with very long names, counting the rest', () => {
    const alerts = Array.from({ length: 50 }, (_, i) =>
      listingAlert(i + 1, { businessName: `Harbor ${'Dental '.repeat(200)}${i}` }),
    );
    const { text } = slackDigest(alerts, { worst: 50 });
    expect(text.length).toBeLessThanOrEqual(SLACK_TEXT_LIMIT);
    const listed = text.split('\n').filter((l) => l.startsWith('• ')).length;
    expect(listed).toBeGreaterThan(0);
    expect(listed).toBeLessThan(50);
    expect(
      text.endsWith(`…and ${50 - listed} more (\`listings-sync alerts\` lists them all).`),
    ).toBe(true);
  });

  it('a flood of one kind does not hide another from the listed ones', () => {
    const alerts = [
      ...Array.from({ length: 40 }, (_, i) => listingAlert(i + 1)),
      listingAlert(99, {
        kind: RANK_DROP,
        keyword: 'dentist portland',
        siteName: 'Google',
        details: { rank: 9, previousRank: 2 },
        detectedAt: new Date(Date.UTC(2025, 2, 1)),
      }),
    ];
    const lines = slackDigest(alerts, { worst: 3 }).text.split('\n');
    expect(lines.slice(1, 4)).toEqual([
      '• :warning: <https://yelp.example/biz/40|Harbor Dental 40: Yelp: Accurate → Inaccurate (wrong: phone, address)>',
      '• :warning: <https://yelp.example/biz/39|Harbor Dental 39: Yelp: Accurate → Inaccurate (wrong: phone, address)>',
      '• :chart_with_downwards_trend: <https://yelp.example/biz/99|Harbor Dental 99: "dentist portland" on Google: #2 → #9>',
    ]);
  });

  it('makes one digest per account and run', () => {
    const alerts = [
      listingAlert(1),
      listingAlert(2, { accountName: 'west' }),
      listingAlert(3),
      listingAlert(4, { runId: null }),
    ];
    expect(digestMessages(alerts).map((m) => m.text.split('\n')[0])).toEqual([
      ':bell: *2 alerts* for account *east*, run 0b9d6a52: 2 listings newly Inaccurate.',
      ':bell: *1 alert* for account *west*, run 0b9d6a52: 1 listing newly Inaccurate.',
      ':bell: *1 alert* for account *east*: 1 listing newly Inaccurate.',
    ]);
  });

  it('a held volume drop is in the digest with its counts, ahead of the listing alerts', () => {
    const drop = listingAlert(50, {
      kind: VOLUME_DROP,
      dedupeKey: 'volume_drop:1250:listings:2025-03-01',
      listingId: null,
      siteName: null,
      listing: null,
      previousStatus: '4',
      status: '0',
      details: { stream: 'listings', stored: 4, answered: 0, removing: 4 },
    });
    const text = slackDigest([listingAlert(1), listingAlert(2), drop], { worst: 10 }).text;
    expect(text.split('\n')).toEqual([
      ':bell: *3 alerts* for account *east*, run 0b9d6a52: 1 held volume drop, 2 listings newly Inaccurate.',
      '• :arrow_down_small: Harbor Dental 50: listings: 4 stored, 0 answered; removals held until the next run confirms them',
      '• :warning: <https://yelp.example/biz/2|Harbor Dental 2: Yelp: Accurate → Inaccurate (wrong: phone, address)>',
      '• :warning: <https://yelp.example/biz/1|Harbor Dental 1: Yelp: Accurate → Inaccurate (wrong: phone, address)>',
    ]);
    expect(alertWebhookBody(drop)).toMatchObject({
      kind: 'volume_drop',
      business: { id: 1250, name: 'Harbor Dental 50' },
      volume_drop: { stream: 'listings', stored: 4, answered: 0 },
    });
  });

  it('says what changed for every kind', () => {
    expect(whatChanged(listingAlert(1))).toBe(
      'Yelp: Accurate → Inaccurate (wrong: phone, address)',
    );
    expect(
      whatChanged(
        listingAlert(2, {
          kind: RANK_DROP,
          keyword: 'dentist portland',
          siteName: 'Google_new.local',
          details: { rank: null, previousRank: 2, weekAgoRank: 3 },
        }),
      ),
    ).toBe('"dentist portland" on Google_new.local: #2 → not ranked (7 days before: #3)');
    expect(
      whatChanged(
        listingAlert(3, {
          kind: LOW_RATING_REVIEW,
          siteName: 'Google',
          details: { rating: 1, author: 'Sam' },
        }),
      ),
    ).toBe('1★ review on Google by Sam');
    expect(
      whatChanged(
        listingAlert(4, {
          kind: SYNC_FAILED,
          status: 'partial',
          details: { error: 'one credential failed' },
        }),
      ),
    ).toBe(`run ${RUN} ended partial: one credential failed`);
    expect(
      whatChanged(
        listingAlert(5, {
          kind: SYNC_STALE,
          details: { lastSuccessAt: '2025-03-01T03:00:00.000Z' },
        }),
      ),
    ).toBe('no successful run since 2025-03-01T03:00:00.000Z');
    expect(
      whatChanged(
        listingAlert(6, {
          kind: LISTING_BROKEN_AGAIN,
          details: { fixedAt: '2025-02-20T03:00:00.000Z', daysSinceFix: 9, windowDays: 30 },
        }),
      ),
    ).toBe('Yelp: Inaccurate again 9 days after its fix (2025-02-20)');
    expect(slackMessage(listingAlert(7, { kind: LISTING_BROKEN_AGAIN })).text).toMatch(
      /^:repeat: /,
    );
  });
});
