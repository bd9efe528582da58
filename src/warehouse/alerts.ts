/**
 * `alerts`: the outbox of listings that newly turned Inaccurate. Rows are written by
 * `listings.ts` in the same transaction as the status change; a dispatcher reads the
 * pending ones and marks them delivered or failed.
 *
 * `dedupe_key` is unique, so the same change can never raise twice. For a status change
 * it names the listing and the time its previous status began
 * (`listing_inaccurate:<business>:<listing>:<previous status_changed_at>`), which is the
 * same however often that one transition is re-applied; a later, separate relapse has a
 * different previous period and raises again. A listing first seen as Inaccurate uses
 * `…:first-seen`.
 */
import type { Kysely, Transaction } from 'kysely';
import { redactText } from '../log.ts';
import { insertRows } from './bulk-write.ts';
import type { AlertRow, Database } from './database.ts';

type Db = Kysely<Database> | Transaction<Database>;

export const LISTING_INACCURATE = 'listing_inaccurate';

export interface ListingInaccurateAlert {
  accountName: string;
  businessId: number;
  listingId: number;
  siteName: string;
  previousStatus: string | null;
  /** When the previous status began; null for a listing seen for the first time. */
  previousStatusSince: Date | null;
  status: string;
  detectedAt: Date;
  runId: string | null;
}

export function listingInaccurateDedupeKey(alert: ListingInaccurateAlert): string {
  const since = alert.previousStatusSince ? alert.previousStatusSince.toISOString() : 'first-seen';
  return `${LISTING_INACCURATE}:${alert.businessId}:${alert.listingId}:${since}`;
}

/** Appends alerts, skipping any whose dedupe_key exists; returns how many were raised. */
export async function raiseListingAlerts(
  db: Db,
  alerts: readonly ListingInaccurateAlert[],
): Promise<number> {
  return insertRows(
    db,
    'alerts',
    {
      kind: 'text',
      dedupe_key: 'text',
      account_name: 'text',
      business_id: 'bigint',
      listing_id: 'bigint',
      site_name: 'text',
      previous_status: 'text',
      status: 'text',
      detected_at: 'timestamptz',
      run_id: 'uuid',
    },
    alerts.map((alert) => ({
      kind: LISTING_INACCURATE,
      dedupe_key: listingInaccurateDedupeKey(alert),
      account_name: alert.accountName,
      business_id: alert.businessId,
      listing_id: alert.listingId,
      site_name: alert.siteName,
      previous_status: alert.previousStatus,
      status: alert.status,
      detected_at: alert.detectedAt,
      run_id: alert.runId,
    })),
    ['dedupe_key'],
  );
}

export interface ListAlertsOptions {
  /** true: only undelivered alerts whose next attempt is due; false: only delivered. */
  pending?: boolean;
  limit: number;
  /** "Now" for the due check; the current time by default. */
  now?: Date;
}

/** Alerts oldest first. */
export async function listAlerts(db: Db, options: ListAlertsOptions): Promise<AlertRow[]> {
  let query = db.selectFrom('alerts').selectAll().orderBy('detected_at').orderBy('alert_id');
  if (options.pending === true) {
    const now = options.now ?? new Date();
    query = query
      .where('delivered_at', 'is', null)
      .where((eb) => eb.or([eb('next_attempt_at', 'is', null), eb('next_attempt_at', '<=', now)]));
  } else if (options.pending === false) {
    query = query.where('delivered_at', 'is not', null);
  }
  return query.limit(options.limit).execute();
}

export async function markAlertDelivered(db: Db, alertId: number, at: Date): Promise<void> {
  await db
    .updateTable('alerts')
    .set((eb) => ({ delivered_at: at, attempts: eb('attempts', '+', 1), last_error: null }))
    .where('alert_id', '=', alertId)
    .execute();
}

/** Counts a failed delivery; the error text is redacted before it is stored. */
export async function recordAlertFailure(
  db: Db,
  alertId: number,
  error: string,
  nextAttemptAt: Date | null,
): Promise<void> {
  await db
    .updateTable('alerts')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      last_error: redactText(error),
      next_attempt_at: nextAttemptAt,
    }))
    .where('alert_id', '=', alertId)
    .execute();
}
