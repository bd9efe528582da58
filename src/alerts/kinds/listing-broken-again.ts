/**
 * `listing_broken_again`: a listing that turns `Inaccurate` within `windowDays` of its last
 * fix (the sync that last read it as not `Inaccurate` after an Inaccurate episode;
 * `listing_fixes`, docs/warehouse.md "v_listing_fixes"). The listings writer reports each
 * transition with that fix (`lastFixedAt`); this applies the rule and raises, in the
 * writer's transaction. It is raised beside `listing_inaccurate`, whose own rule (and flap
 * damping) is unchanged: this one says the fix did not hold.
 */

import type { Db } from '../../warehouse/database.ts';
import type { ListingTurnedInaccurate } from '../../warehouse/write/changes.ts';
import { detail } from '../message-text.ts';
import type { AlertForDelivery } from '../outbox.ts';
import { type NewAlert, raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import type { AlertKind, AlertKindEntry } from './kind.ts';
import { turnedInaccurateFields } from './listing-inaccurate.ts';

export const LISTING_BROKEN_AGAIN = 'listing_broken_again' satisfies AlertKind;

/**
 * A listing Inaccurate again soon after a fix: once per fix (the listing and the time of
 * the fix it undid), however often that transition is re-applied.
 */
export function listingBrokenAgainKey(businessId: number, listingId: number, fixedAt: Date) {
  return `${LISTING_BROKEN_AGAIN}:${businessId}:${listingId}:${fixedAt.toISOString()}`;
}

const DAY_MS = 86_400_000;

/** The alerts the rule raises for these transitions (pure). */
export function listingsBrokenAgain(
  rules: AlertRules,
  turned: readonly ListingTurnedInaccurate[],
): NewAlert[] {
  const rule = rules.listingBrokenAgain;
  if (!rule.enabled) return [];
  const alerts: NewAlert[] = [];
  for (const t of turned) {
    if (!t.lastFixedAt) continue;
    const sinceFix = t.detectedAt.getTime() - t.lastFixedAt.getTime();
    if (sinceFix < 0 || sinceFix > rule.windowMs) continue;
    alerts.push({
      kind: LISTING_BROKEN_AGAIN,
      dedupeKey: listingBrokenAgainKey(t.businessId, t.listingId, t.lastFixedAt),
      ...turnedInaccurateFields(t),
      details: {
        fixedAt: t.lastFixedAt.toISOString(),
        daysSinceFix: Math.round((sinceFix / DAY_MS) * 10) / 10,
        windowDays: rule.windowDays,
      },
    });
  }
  return alerts;
}

/** Raises the rule's alerts for one business's transitions; returns how many were raised. */
export async function raiseListingBrokenAgain(
  db: Db,
  rules: AlertRules,
  turned: readonly ListingTurnedInaccurate[],
): Promise<number> {
  return raise(db, listingsBrokenAgain(rules, turned));
}

function summary(alert: AlertForDelivery): string {
  const days = detail(alert, 'daysSinceFix');
  const fixedAt = detail(alert, 'fixedAt');
  return (
    `${alert.siteName ?? 'a directory'}: Inaccurate again` +
    (typeof days === 'number'
      ? ` ${days} ${days === 1 ? 'day' : 'days'} after its fix`
      : ' after its fix') +
    (typeof fixedAt === 'string' ? ` (${fixedAt.slice(0, 10)})` : '')
  );
}

export const listingBrokenAgain: AlertKindEntry<typeof LISTING_BROKEN_AGAIN> = {
  kind: LISTING_BROKEN_AGAIN,
  label: ['listing broken again', 'listings broken again'],
  // A cause the fix did not reach, ahead of a first break (`listing_inaccurate`, 4).
  // Between two whole numbers so the kinds around it keep theirs.
  severity: 3.5,
  icon: ':repeat:',
  summary,
  // Raised after `listing_inaccurate` for the same transitions (its entry comes later).
  raise: { on: 'listing_turned_inaccurate', raise: raiseListingBrokenAgain },
};
