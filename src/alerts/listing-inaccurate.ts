/**
 * `listing_inaccurate`: a listing whose last recorded status was not `Inaccurate` and is
 * now, or one first seen as `Inaccurate` on a business that already had a listings sync.
 * The listings writer reports the transitions (`src/warehouse/changes.ts`); this applies
 * the rule (enabled, flap damping) and raises, in the writer's transaction.
 *
 * Flap damping: a listing with a `listing_inaccurate` alert detected within
 * `flapWindowHours` before this transition raises nothing, so a listing that flips
 * Inaccurate → Accurate → Inaccurate daily alerts once per window, not once per flip.
 */
import type { ListingTurnedInaccurate } from '../warehouse/changes.ts';
import type { Db } from '../warehouse/database.ts';
import { LISTING_INACCURATE, listingInaccurateKey } from './kinds.ts';
import { listingsAlertedSince, raise } from './outbox.ts';
import type { AlertRules } from './rules.ts';

/** Raises the alerts the rule allows for these transitions of one business; returns how many. */
export async function raiseListingInaccurate(
  db: Db,
  rules: AlertRules,
  turned: readonly ListingTurnedInaccurate[],
): Promise<number> {
  const rule = rules.listingInaccurate;
  const first = turned[0];
  if (!rule.enabled || !first) return 0;
  let damped = new Set<number>();
  if (rule.flapWindowMs > 0) {
    damped = await listingsAlertedSince(
      db,
      first.businessId,
      turned.map((t) => t.listingId),
      new Date(first.detectedAt.getTime() - rule.flapWindowMs),
    );
  }
  return raise(
    db,
    turned
      .filter((t) => !damped.has(t.listingId))
      .map((t) => ({
        kind: LISTING_INACCURATE,
        dedupeKey: listingInaccurateKey(t.businessId, t.listingId, t.previousStatusSince),
        accountName: t.accountName,
        businessId: t.businessId,
        listingId: t.listingId,
        siteName: t.siteName,
        previousStatus: t.previousStatus,
        status: t.status,
        detectedAt: t.detectedAt,
        runId: t.runId,
      })),
  );
}
