/**
 * The alert kinds (`alerts.kind`) and their dedupe keys: the one place a kind's name is
 * spelled. `alerts.dedupe_key` is unique, so one event can never raise twice however
 * often a run re-applies it; each key below says what "one event" is for its kind.
 *
 * Glossary:
 * - *raise*: insert into the outbox (`alerts`) inside the writer's transaction;
 * - *deliver*: a sink took the alert (`delivered_sinks`; `delivered_at` once all did);
 * - *digest*: one message about several alerts of one account and run.
 */

export const LISTING_INACCURATE = 'listing_inaccurate';
export const LISTING_BROKEN_AGAIN = 'listing_broken_again';
export const RANK_DROP = 'rank_drop';
export const LOW_RATING_REVIEW = 'low_rating_review';
export const REVIEW_RESPONSE_FAILED = 'review_response_failed';
export const SYNC_FAILED = 'sync_failed';
export const SYNC_STALE = 'sync_stale';
export const VOLUME_DROP = 'volume_drop';

export const ALERT_KINDS = [
  LISTING_INACCURATE,
  RANK_DROP,
  LOW_RATING_REVIEW,
  REVIEW_RESPONSE_FAILED,
  SYNC_FAILED,
  SYNC_STALE,
  VOLUME_DROP,
  LISTING_BROKEN_AGAIN,
] as const;

export type AlertKind = (typeof ALERT_KINDS)[number];

/**
 * Most urgent first: a digest lists its "worst" alerts in this order. A load that did
 * not happen hides every other alert, so it leads.
 */
export const KIND_SEVERITY: Readonly<Record<AlertKind, number>> = {
  [SYNC_FAILED]: 0,
  [SYNC_STALE]: 1,
  // Rows the warehouse would have lost: BI is wrong tomorrow unless someone looks.
  [VOLUME_DROP]: 2,
  [REVIEW_RESPONSE_FAILED]: 3,
  // A listing that broke again soon after its fix: a cause the fix did not reach, ahead
  // of a first break. Between two whole numbers so the kinds above keep theirs.
  [LISTING_BROKEN_AGAIN]: 3.5,
  [LISTING_INACCURATE]: 4,
  [LOW_RATING_REVIEW]: 5,
  [RANK_DROP]: 6,
};

export function isAlertKind(kind: string): kind is AlertKind {
  return (ALERT_KINDS as readonly string[]).includes(kind);
}

/**
 * A listing turning Inaccurate: the listing and the time its previous status began, the
 * same however often that one transition is re-applied; a later relapse has a different
 * previous period and raises again. A listing first seen as Inaccurate uses `first-seen`.
 */
export function listingInaccurateKey(
  businessId: number,
  listingId: number,
  previousStatusSince: Date | null,
): string {
  const since = previousStatusSince ? previousStatusSince.toISOString() : 'first-seen';
  return `${LISTING_INACCURATE}:${businessId}:${listingId}:${since}`;
}

/**
 * A listing Inaccurate again soon after a fix: once per fix (the listing and the time of
 * the fix it undid), however often that transition is re-applied.
 */
export function listingBrokenAgainKey(businessId: number, listingId: number, fixedAt: Date) {
  return `${LISTING_BROKEN_AGAIN}:${businessId}:${listingId}:${fixedAt.toISOString()}`;
}

/** A rank drop: at most one per series (business, site, keyword) and UTC day. */
export function rankDropKey(businessId: number, site: string, keyword: string, day: string) {
  return `${RANK_DROP}:${businessId}:${site}:${keyword}:${day}`;
}

/** A low rating: once per review, whatever later edits do. */
export function lowRatingReviewKey(reviewId: string): string {
  return `${LOW_RATING_REVIEW}:${reviewId}`;
}

/** A failed review response: once per request (a request fails once). */
export function reviewResponseFailedKey(requestId: string): string {
  return `${REVIEW_RESPONSE_FAILED}:${requestId}`;
}

/** A failed run: once per run (the last of the consecutive failures that crossed the threshold). */
export function syncFailedKey(runId: string): string {
  return `${SYNC_FAILED}:${runId}`;
}

/**
 * A stale account: once per silence, named by the last success it follows (`never` when
 * the account has none), so the next silence after a success raises again.
 */
export function syncStaleKey(accountName: string, lastSuccess: Date | null): string {
  return `${SYNC_STALE}:${accountName}:${lastSuccess ? lastSuccess.toISOString() : 'never'}`;
}

/**
 * A held volume drop: once per business, stream and UTC day (`YYYY-MM-DD`), so a second
 * run the same night that still holds the drop does not raise it again.
 */
export function volumeDropKey(businessId: number, stream: string, day: string): string {
  return `${VOLUME_DROP}:${businessId}:${stream}:${day}`;
}

/**
 * A held business list: once per account, list (`businesses`, or a shard's
 * `businesses:I/N`) and UTC day. `account:` keeps it apart from a business's keys, whose
 * ids are numbers.
 */
export function volumeDropListKey(accountName: string, list: string, day: string): string {
  return `${VOLUME_DROP}:account:${accountName}:${list}:${day}`;
}
