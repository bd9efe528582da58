/**
 * The alert outbox as the dispatcher sees it: claim due alerts (a lease, so two
 * dispatchers, in two replicas or in `sync` and `serve`, never send the same alert at the
 * same time), read what a message needs (business name, the listing's _valid flags and
 * live link), and record each attempt per sink.
 */
import { type Kysely, sql } from 'kysely';
import { redactText } from '../log.ts';
import type { Database } from '../warehouse/database.ts';

/** One alert with what a message needs. */
export interface AlertForDelivery {
  alertId: number;
  kind: string;
  dedupeKey: string;
  accountName: string | null;
  businessId: number;
  businessName: string | null;
  listingId: number | null;
  siteName: string | null;
  previousStatus: string | null;
  status: string;
  detectedAt: Date;
  runId: string | null;
  attempts: number;
  deliveredSinks: string[];
  /** The listing as stored now; null when the listing row is gone. */
  listing: {
    name: string | null;
    nameValid: boolean | null;
    phone: string | null;
    phoneValid: boolean | null;
    address: string | null;
    addressValid: boolean | null;
    liveLink: string | null;
  } | null;
  /**
   * For a `review_response_failed` alert: the request and its review as stored now;
   * null for other kinds.
   */
  responseRequest: {
    requestId: string;
    reviewId: string;
    content: string;
    submittedAt: Date;
    reviewAuthor: string | null;
    reviewPermalink: string | null;
  } | null;
}

export interface ClaimOptions {
  limit: number;
  now: Date;
  /** How long a claim holds: a dispatcher that dies mid-send frees its alerts after this. */
  leaseMs: number;
}

/**
 * Claims up to `limit` undelivered alerts whose next attempt is due, oldest first, by
 * moving their `next_attempt_at` past the lease; returns them with their details.
 * `FOR UPDATE SKIP LOCKED`: concurrent claimers take different alerts.
 */
export async function claimDueAlerts(
  db: Kysely<Database>,
  options: ClaimOptions,
): Promise<AlertForDelivery[]> {
  const sdb = db;
  const leaseUntil = new Date(options.now.getTime() + options.leaseMs);
  const claimed = await sdb
    .updateTable('alerts')
    .set({ next_attempt_at: leaseUntil })
    .where('alert_id', 'in', (eb) =>
      eb
        .selectFrom('alerts')
        .select('alert_id')
        .where('delivered_at', 'is', null)
        .where((w) =>
          w.or([w('next_attempt_at', 'is', null), w('next_attempt_at', '<=', options.now)]),
        )
        .orderBy('detected_at')
        .orderBy('alert_id')
        .limit(options.limit)
        .forUpdate()
        .skipLocked(),
    )
    .returning('alert_id')
    .execute();
  if (claimed.length === 0) return [];
  return readAlerts(
    db,
    claimed.map((row) => row.alert_id),
  );
}

/** Undelivered alerts (due or not), oldest first, with their details. */
export async function undeliveredAlerts(
  db: Kysely<Database>,
  options: { limit: number; runId?: string },
): Promise<AlertForDelivery[]> {
  let query = db
    .selectFrom('alerts')
    .select('alert_id')
    .where('delivered_at', 'is', null)
    .orderBy('detected_at')
    .orderBy('alert_id')
    .limit(options.limit);
  if (options.runId) query = query.where('run_id', '=', options.runId);
  const ids = await query.execute();
  return ids.length
    ? readAlerts(
        db,
        ids.map((row) => row.alert_id),
      )
    : [];
}

async function readAlerts(db: Kysely<Database>, ids: number[]): Promise<AlertForDelivery[]> {
  const rows = await db
    .selectFrom('alerts as a')
    .leftJoin('businesses as b', 'b.business_id', 'a.business_id')
    .leftJoin('listings as l', (join) =>
      join.onRef('l.business_id', '=', 'a.business_id').onRef('l.listing_id', '=', 'a.listing_id'),
    )
    .leftJoin('review_response_requests as rr', 'rr.request_id', 'a.request_id')
    .leftJoin('reviews as rv', 'rv.review_id', 'rr.review_id')
    .select([
      'rr.request_id as rr_request_id',
      'rr.review_id as rr_review_id',
      'rr.content as rr_content',
      'rr.submitted_at as rr_submitted_at',
      'rv.author_name as review_author',
      'rv.permalink as review_permalink',
      'a.alert_id',
      'a.kind',
      'a.dedupe_key',
      'a.account_name',
      'a.business_id',
      'a.listing_id',
      'a.site_name',
      'a.previous_status',
      'a.status',
      'a.detected_at',
      'a.run_id',
      'a.attempts',
      'a.delivered_sinks',
      'b.name as business_name',
      'l.listing_id as stored_listing_id',
      'l.name as listing_name',
      'l.name_valid',
      'l.phone',
      'l.phone_valid',
      'l.street',
      'l.city',
      'l.state',
      'l.postal_code',
      'l.address_valid',
      'l.live_link',
    ])
    .where('a.alert_id', 'in', ids)
    .orderBy('a.detected_at')
    .orderBy('a.alert_id')
    .execute();
  return rows.map((row) => ({
    alertId: row.alert_id,
    kind: row.kind,
    dedupeKey: row.dedupe_key,
    accountName: row.account_name,
    businessId: row.business_id,
    businessName: row.business_name ?? null,
    listingId: row.listing_id,
    siteName: row.site_name,
    previousStatus: row.previous_status,
    status: row.status,
    detectedAt: row.detected_at,
    runId: row.run_id,
    attempts: row.attempts,
    deliveredSinks: Array.isArray(row.delivered_sinks)
      ? row.delivered_sinks.filter((s): s is string => typeof s === 'string')
      : [],
    listing:
      row.stored_listing_id == null
        ? null
        : {
            name: row.listing_name ?? null,
            nameValid: row.name_valid ?? null,
            phone: row.phone ?? null,
            phoneValid: row.phone_valid ?? null,
            address:
              [row.street, row.city, row.state, row.postal_code].filter(Boolean).join(', ') || null,
            addressValid: row.address_valid ?? null,
            liveLink: row.live_link ?? null,
          },
    responseRequest:
      row.rr_request_id == null
        ? null
        : {
            requestId: row.rr_request_id,
            reviewId: row.rr_review_id ?? '',
            content: row.rr_content ?? '',
            submittedAt: row.rr_submitted_at ?? row.detected_at,
            reviewAuthor: row.review_author ?? null,
            reviewPermalink: row.review_permalink ?? null,
          },
  }));
}

export interface DeliveryAttempt {
  /** Every sink that has taken the alert, this attempt and earlier ones. */
  deliveredSinks: string[];
  /** True when every configured sink has taken it. */
  delivered: boolean;
  at: Date;
  /** What failed this attempt (one line per sink); null when nothing failed. */
  error: string | null;
  /** When to try again; ignored when delivered. */
  nextAttemptAt: Date | null;
}

/** Counts one attempt and records its outcome; the error text is redacted before it is stored. */
export async function recordDeliveryAttempt(
  db: Kysely<Database>,
  alertId: number,
  attempt: DeliveryAttempt,
): Promise<void> {
  await db
    .updateTable('alerts')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      delivered_sinks: JSON.stringify(attempt.deliveredSinks),
      delivered_at: attempt.delivered ? attempt.at : null,
      last_error: attempt.error === null ? null : redactText(attempt.error),
      next_attempt_at: attempt.delivered ? null : attempt.nextAttemptAt,
    }))
    .where('alert_id', '=', alertId)
    .execute();
}

/** Undelivered alerts, for the pending gauge. */
export async function countUndeliveredAlerts(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('alerts')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('delivered_at', 'is', null)
    .executeTakeFirst();
  return row?.n ?? 0;
}

/** A row of `listings-sync alerts`. */
export interface AlertListRow {
  alertId: number;
  businessId: number;
  businessName: string | null;
  siteName: string | null;
  previousStatus: string | null;
  status: string;
  detectedAt: Date;
  deliveredAt: Date | null;
  attempts: number;
  lastError: string | null;
}

/** The most recent alerts first; `pending` keeps the undelivered ones. */
export async function recentAlerts(
  db: Kysely<Database>,
  options: { pending: boolean; limit: number },
): Promise<AlertListRow[]> {
  let query = db
    .selectFrom('alerts as a')
    .leftJoin('businesses as b', 'b.business_id', 'a.business_id')
    .select([
      'a.alert_id',
      'a.business_id',
      'b.name as business_name',
      'a.site_name',
      'a.previous_status',
      'a.status',
      'a.detected_at',
      'a.delivered_at',
      'a.attempts',
      'a.last_error',
    ])
    .orderBy('a.detected_at', 'desc')
    .orderBy('a.alert_id', 'desc')
    .limit(options.limit);
  if (options.pending) query = query.where('a.delivered_at', 'is', null);
  const rows = await query.execute();
  return rows.map((row) => ({
    alertId: row.alert_id,
    businessId: row.business_id,
    businessName: row.business_name ?? null,
    siteName: row.site_name,
    previousStatus: row.previous_status,
    status: row.status,
    detectedAt: row.detected_at,
    deliveredAt: row.delivered_at,
    attempts: row.attempts,
    lastError: row.last_error,
  }));
}
