/**
 * `listing_broken_again` (src/alerts/kinds/listing-broken-again.ts): which transitions the rule
 * turns into alerts, under the rules file's window. The sandbox nights of
 * test/warehouse/views/local-seo-views.test.ts check it end to end against the listings served.
 */
import { describe, expect, it } from 'vitest';
import { listingsBrokenAgain } from '../../src/alerts/kinds/listing-broken-again.ts';
import { DEFAULT_ALERT_RULES, parseAlertRules } from '../../src/alerts/rules.ts';
import type { ListingTurnedInaccurate } from '../../src/warehouse/write/changes.ts';

const NOW = new Date('2026-03-31T04:00:00Z');
const DAY = 86_400_000;

function turned(listingId: number, lastFixedAt: Date | null): ListingTurnedInaccurate {
  return {
    accountName: 'east',
    businessId: 7,
    listingId,
    siteName: 'Yelp',
    previousStatus: 'Accurate',
    previousStatusSince: lastFixedAt,
    status: 'Inaccurate',
    detectedAt: NOW,
    runId: null,
    lastFixedAt,
  };
}

describe('listing_broken_again', () => {
  const on = parseAlertRules({ rules: { listing_broken_again: { enabled: true } } }, 'test');

  it('is off by default, and its window is 30 days unless the rules file says otherwise', () => {
    expect(DEFAULT_ALERT_RULES.listingBrokenAgain).toEqual({
      enabled: false,
      windowDays: 30,
      windowMs: 30 * DAY,
    });
    expect(
      listingsBrokenAgain(DEFAULT_ALERT_RULES, [turned(1, new Date(NOW.getTime() - DAY))]),
    ).toEqual([]);
  });

  it('fires within the window of the last fix, never without a fix', () => {
    const alerts = listingsBrokenAgain(on, [
      turned(1, new Date(NOW.getTime() - 30 * DAY)),
      turned(2, new Date(NOW.getTime() - 30 * DAY - 1)),
      turned(3, null),
      turned(4, new Date(NOW.getTime() - 2.5 * DAY)),
    ]);
    expect(alerts.map((a) => [a.listingId, a.details])).toEqual([
      [1, { fixedAt: '2026-03-01T04:00:00.000Z', daysSinceFix: 30, windowDays: 30 }],
      [4, { fixedAt: '2026-03-28T16:00:00.000Z', daysSinceFix: 2.5, windowDays: 30 }],
    ]);
    expect(alerts[0]?.dedupeKey).toBe('listing_broken_again:7:1:2026-03-01T04:00:00.000Z');
    expect(alerts[0]).toMatchObject({ kind: 'listing_broken_again', status: 'Inaccurate' });
  });

  it('takes its window from the rules file', () => {
    const week = parseAlertRules(
      { rules: { listing_broken_again: { enabled: true, windowDays: 7 } } },
      'test',
    );
    const fixes = [
      turned(1, new Date(NOW.getTime() - 6 * DAY)),
      turned(2, new Date(NOW.getTime() - 8 * DAY)),
    ];
    expect(listingsBrokenAgain(week, fixes).map((a) => a.listingId)).toEqual([1]);
    expect(() =>
      parseAlertRules({ rules: { listing_broken_again: { windowDays: 0 } } }, 'test'),
    ).toThrow(
      /rule "listing_broken_again", field "windowDays": must be a whole number from 1 to 365/,
    );
  });
});
