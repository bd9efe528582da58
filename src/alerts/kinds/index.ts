/**
 * One entry per alert kind: its label, severity, icon, message and raise (the entry's
 * shape is `AlertKindEntry`, src/alerts/kinds/kind.ts; its rule is in
 * src/config/alert-rules.ts). The messages (src/alerts/messages.ts) and the raising from
 * the writers' changes (src/alerts/raise-for-changes.ts) read them from here. The object
 * must hold exactly the kinds of `ALERT_RULE_KINDS`: a kind without an entry, or an entry
 * without one of its parts, fails the type check (docs/alerts.md, "Each kind's exact
 * trigger").
 */

import { type AlertKind, type AlertKindEntry, isAlertKind } from './kind.ts';
import { listingBrokenAgain } from './listing-broken-again.ts';
import { listingInaccurate } from './listing-inaccurate.ts';
import { lowRatingReview } from './low-rating-review.ts';
import { rankDrop } from './rank-drop.ts';
import { reviewResponseFailed } from './review-response-failed.ts';
import { syncFailed, syncStale } from './sync-health.ts';
import { volumeDrop } from './volume-drop.ts';

export { LISTING_BROKEN_AGAIN } from './listing-broken-again.ts';
export { LISTING_INACCURATE } from './listing-inaccurate.ts';
export { LOW_RATING_REVIEW } from './low-rating-review.ts';
export { RANK_DROP } from './rank-drop.ts';
export { REVIEW_RESPONSE_FAILED } from './review-response-failed.ts';
export { SYNC_FAILED, SYNC_STALE } from './sync-health.ts';
export { VOLUME_DROP } from './volume-drop.ts';

/**
 * Every kind's entry, in the order of `ALERT_RULE_KINDS`. Kinds raised from the same
 * change type raise in this order: `listing_inaccurate` before `listing_broken_again`.
 */
export const ALERT_KIND_ENTRIES = {
  listing_inaccurate: listingInaccurate,
  rank_drop: rankDrop,
  low_rating_review: lowRatingReview,
  review_response_failed: reviewResponseFailed,
  sync_failed: syncFailed,
  sync_stale: syncStale,
  volume_drop: volumeDrop,
  listing_broken_again: listingBrokenAgain,
} as const satisfies { [K in AlertKind]: AlertKindEntry<K> };

/** The entry of a kind read from the outbox; undefined for a kind this version does not know. */
export function kindEntry(kind: string): AlertKindEntry | undefined {
  return isAlertKind(kind) ? ALERT_KIND_ENTRIES[kind] : undefined;
}

/** Most urgent first: each kind's `severity`. */
export const KIND_SEVERITY: Readonly<Record<AlertKind, number>> = Object.fromEntries(
  Object.values(ALERT_KIND_ENTRIES).map((entry) => [entry.kind, entry.severity]),
) as Record<AlertKind, number>;

/** A kind's severity; a kind this version does not know comes last. */
export function kindSeverity(kind: string): number {
  return isAlertKind(kind) ? KIND_SEVERITY[kind] : 99;
}
