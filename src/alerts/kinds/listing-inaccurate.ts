/**
 * `listing_inaccurate`: a listing whose last recorded status was not `Inaccurate` and is
 * now, or one first seen as `Inaccurate` on a business that already had a listings sync.
 * The listings writer reports the transitions (`src/warehouse/write/changes.ts`); this applies
 * the rule (enabled, flap damping) and raises, in the writer's transaction.
 *
 * Flap damping: a listing with a `listing_inaccurate` alert detected within
 * `flapWindowHours` before this transition raises nothing, so a listing that flips
 * Inaccurate → Accurate → Inaccurate daily alerts once per window, not once per flip.
 */

import type { Db } from '../../warehouse/database.ts';
import type { ListingTurnedInaccurate } from '../../warehouse/write/changes.ts';
import {
  businessLabel,
  detectedLine,
  isWebLink,
  type SlackMessage,
  slackEscape,
  wrongFields,
} from '../message-text.ts';
import type { AlertForDelivery } from '../outbox.ts';
import { listingsWithAlertSince, raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import type { AlertKind, AlertKindEntry } from './kind.ts';

export const LISTING_INACCURATE = 'listing_inaccurate' satisfies AlertKind;

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
 * What an alert of a listing's turn to Inaccurate says of it, whichever kind raises it
 * (this one, or `listing_broken_again`): the listing, its statuses, when and in which run.
 */
export function turnedInaccurateFields(t: ListingTurnedInaccurate) {
  return {
    accountName: t.accountName,
    businessId: t.businessId,
    listingId: t.listingId,
    siteName: t.siteName,
    previousStatus: t.previousStatus,
    status: t.status,
    detectedAt: t.detectedAt,
    runId: t.runId,
  };
}

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
    damped = await listingsWithAlertSince(db, {
      kind: LISTING_INACCURATE,
      businessId: first.businessId,
      listingIds: turned.map((t) => t.listingId),
      since: new Date(first.detectedAt.getTime() - rule.flapWindowMs),
    });
  }
  return raise(
    db,
    turned
      .filter((t) => !damped.has(t.listingId))
      .map((t) => ({
        kind: LISTING_INACCURATE,
        dedupeKey: listingInaccurateKey(t.businessId, t.listingId, t.previousStatusSince),
        ...turnedInaccurateFields(t),
      })),
  );
}

function summary(alert: AlertForDelivery): string {
  const wrong = wrongFields(alert);
  return (
    `${alert.siteName ?? 'a directory'}: ${alert.previousStatus ?? '(first seen)'} → ${alert.status}` +
    (wrong.length ? ` (wrong: ${wrong.join(', ')})` : '')
  );
}

function slack(alert: AlertForDelivery): SlackMessage {
  const site = alert.siteName ?? 'a directory';
  const wrong = wrongFields(alert);
  const lines = [
    `:warning: *${slackEscape(businessLabel(alert))}* is now *${slackEscape(alert.status)}* on *${slackEscape(site)}*` +
      (alert.previousStatus ? ` (was ${slackEscape(alert.previousStatus)})` : ' (first seen)'),
    wrong.length
      ? `Wrong on the directory: ${wrong.join(', ')}.`
      : 'The directory did not say which field is wrong.',
  ];
  const link = alert.listing?.liveLink;
  if (isWebLink(link)) lines.push(`<${link}|View the live listing>`);
  lines.push(detectedLine(alert));
  return { text: lines.join('\n') };
}

export const listingInaccurate: AlertKindEntry<typeof LISTING_INACCURATE> = {
  kind: LISTING_INACCURATE,
  label: ['listing newly Inaccurate', 'listings newly Inaccurate'],
  severity: 4,
  icon: ':warning:',
  summary,
  slack,
  webhook: (alert) => ({
    listing: {
      id: alert.listingId,
      site_name: alert.siteName,
      previous_status: alert.previousStatus,
      status: alert.status,
      wrong_fields: wrongFields(alert),
      name_valid: alert.listing?.nameValid ?? null,
      phone_valid: alert.listing?.phoneValid ?? null,
      address_valid: alert.listing?.addressValid ?? null,
      live_link: alert.listing?.liveLink ?? null,
    },
  }),
  // One business's transitions go together: flap damping reads them at once.
  raise: { on: 'listing_turned_inaccurate', raise: raiseListingInaccurate },
};
