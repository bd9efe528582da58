/**
 * The alert outbox: every SQL statement about `alerts` lives here. One way in, `raise`,
 * called by every writer inside the writer's own transaction (a reader never sees a
 * change without its alert, nor an alert without its change); and the statements the
 * dispatcher, the metrics and `listings-sync alerts` read and record with.
 *
 * Claims are leases in `next_attempt_at`: a claimed alert is not due again until the
 * lease ends, so two dispatchers (two `serve` replicas, or `sync` and `serve`) never send
 * it at the same time. The caller sizes the lease to cover all the work it claims.
 */
import { type Kysely, sql } from 'kysely';
import { redactText } from '../log.ts';
import { insertRows } from '../warehouse/bulk-write.ts';
import type { Database, Db, JsonValue } from '../warehouse/database.ts';
import { type AlertKind, LISTING_INACCURATE } from './kinds.ts';

/** An alert to raise. `details` holds what changed, for messages (ranks, a rating, a run). */
export interface NewAlert {
  kind: AlertKind;
  dedupeKey: string;
  accountName: string | null;
  businessId: number | null;
  listingId?: number | null;
  siteName?: string | null;
  keyword?: string | null;
  reviewId?: string | null;
  requestId?: string | null;
  previousStatus: string | null;
  status: string;
  details?: Record<string, JsonValue>;
  detectedAt: Date;
  runId: string | null;
}

/**
 * Appends alerts in one statement, skipping any whose dedupe_key exists (the same event
 * re-applied); returns how many were raised.
 */
export async function raise(db: Db, alerts: readonly NewAlert[]): Promise<number> {
  if (alerts.length === 0) return 0;
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
      keyword: 'text',
      review_id: 'uuid',
      request_id: 'text',
      previous_status: 'text',
      status: 'text',
      details: 'jsonb',
      detected_at: 'timestamptz',
      run_id: 'uuid',
    },
    alerts.map((alert) => ({
      kind: alert.kind,
      dedupe_key: alert.dedupeKey,
      account_name: alert.accountName,
      business_id: alert.businessId,
      listing_id: alert.listingId ?? null,
      site_name: alert.siteName ?? null,
      keyword: alert.keyword ?? null,
      review_id: alert.reviewId ?? null,
      request_id: alert.requestId ?? null,
      previous_status: alert.previousStatus,
      status: alert.status,
      details: alert.details ?? {},
      detected_at: alert.detectedAt,
      run_id: alert.runId,
    })),
    ['dedupe_key'],
  );
}

/**
 * Of these listings of one business, those with a `listing_inaccurate` alert detected
 * after `since`: flap damping raises nothing for them.
 */
export async function listingsAlertedSince(
  db: Db,
  businessId: number,
  listingIds: readonly number[],
  since: Date,
): Promise<Set<number>> {
  if (listingIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('alerts')
    .select('listing_id')
    .distinct()
    .where('kind', '=', LISTING_INACCURATE)
    .where('business_id', '=', businessId)
    .where('listing_id', 'in', [...listingIds])
    .where('detected_at', '>', since)
    .execute();
  return new Set(rows.map((row) => Number(row.listing_id)));
}

/** One alert with what a message needs. */
export interface AlertForDelivery {
  alertId: number;
  kind: string;
  dedupeKey: string;
  accountName: string | null;
  businessId: number | null;
  businessName: string | null;
  listingId: number | null;
  siteName: string | null;
  keyword: string | null;
  previousStatus: string | null;
  status: string;
  details: Record<string, JsonValue>;
  detectedAt: Date;
  runId: string | null;
  attempts: number;
  deliveredSinks: string[];
  /** The listing as stored now; null when the alert names none or its row is gone. */
  listing: {
    name: string | null;
    nameValid: boolean | null;
    phone: string | null;
    phoneValid: boolean | null;
    address: string | null;
    addressValid: boolean | null;
    liveLink: string | null;
  } | null;
  /** For `review_response_failed`: the request and its review as stored now. */
  responseRequest: {
    requestId: string;
    reviewId: string;
    content: string;
    submittedAt: Date;
    reviewAuthor: string | null;
    reviewPermalink: string | null;
  } | null;
  /** For `low_rating_review`: the review as stored now. */
  review: {
    reviewId: string;
    rating: number | null;
    authorName: string | null;
    content: string | null;
    permalink: string | null;
  } | null;
}

export interface ClaimOptions {
  limit: number;
  now: Date;
  /** How long the claim holds; it must cover all the work done with the claimed alerts. */
  leaseMs: number;
  /** Only this run's alerts (the `sync` command delivers its own and no others). */
  runId?: string;
}

/**
 * Claims up to `limit` undelivered alerts whose next attempt is due, oldest first, by
 * moving their `next_attempt_at` to the end of the lease; returns them with their
 * details. `FOR UPDATE SKIP LOCKED`: concurrent claimers take different alerts.
 */
export async function claimDueAlerts(
  db: Kysely<Database>,
  options: ClaimOptions,
): Promise<AlertForDelivery[]> {
  const leaseUntil = new Date(options.now.getTime() + options.leaseMs);
  const claimed = await db
    .updateTable('alerts')
    .set({ next_attempt_at: leaseUntil })
    .where('alert_id', 'in', (eb) => {
      let due = eb
        .selectFrom('alerts')
        .select('alert_id')
        .where('delivered_at', 'is', null)
        .where((w) =>
          w.or([w('next_attempt_at', 'is', null), w('next_attempt_at', '<=', options.now)]),
        );
      if (options.runId) due = due.where('run_id', '=', options.runId);
      return due
        .orderBy('detected_at')
        .orderBy('alert_id')
        .limit(options.limit)
        .forUpdate()
        .skipLocked();
    })
    .returning('alert_id')
    .execute();
  return readAlerts(
    db,
    claimed.map((row) => row.alert_id),
  );
}

/**
 * Undelivered alerts with an id above `afterId`, in id order: with no sink configured
 * the dispatcher logs each once and pages on from the last id it logged, so a backlog
 * never makes it re-read the same oldest rows.
 */
export async function undeliveredAlertsAfter(
  db: Kysely<Database>,
  options: { afterId: number; limit: number; runId?: string },
): Promise<AlertForDelivery[]> {
  let query = db
    .selectFrom('alerts')
    .select('alert_id')
    .where('delivered_at', 'is', null)
    .where('alert_id', '>', options.afterId)
    .orderBy('alert_id')
    .limit(options.limit);
  if (options.runId) query = query.where('run_id', '=', options.runId);
  const ids = await query.execute();
  return readAlerts(
    db,
    ids.map((row) => row.alert_id),
  );
}

/** Alerts by id with their details, oldest first. */
export async function readAlerts(
  db: Kysely<Database>,
  ids: readonly number[],
): Promise<AlertForDelivery[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('alerts as a')
    .leftJoin('businesses as b', 'b.business_id', 'a.business_id')
    .leftJoin('listings as l', (join) =>
      join.onRef('l.business_id', '=', 'a.business_id').onRef('l.listing_id', '=', 'a.listing_id'),
    )
    .leftJoin('review_response_requests as rr', 'rr.request_id', 'a.request_id')
    .leftJoin('reviews as rv', 'rv.review_id', 'rr.review_id')
    .leftJoin('reviews as lr', 'lr.review_id', 'a.review_id')
    .select([
      'a.alert_id',
      'a.kind',
      'a.dedupe_key',
      'a.account_name',
      'a.business_id',
      'a.listing_id',
      'a.site_name',
      'a.keyword',
      'a.previous_status',
      'a.status',
      'a.details',
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
      'rr.request_id as rr_request_id',
      'rr.review_id as rr_review_id',
      'rr.content as rr_content',
      'rr.submitted_at as rr_submitted_at',
      'rv.author_name as review_author',
      'rv.permalink as review_permalink',
      'a.review_id as lr_review_id',
      'lr.rating as lr_rating',
      'lr.author_name as lr_author',
      'lr.content as lr_content',
      'lr.permalink as lr_permalink',
    ])
    .where('a.alert_id', 'in', [...ids])
    .orderBy('a.detected_at')
    .orderBy('a.alert_id')
    .execute();
  return rows.map((row) => ({
    alertId: Number(row.alert_id),
    kind: row.kind,
    dedupeKey: row.dedupe_key,
    accountName: row.account_name,
    businessId: row.business_id == null ? null : Number(row.business_id),
    businessName: row.business_name ?? null,
    listingId: row.listing_id == null ? null : Number(row.listing_id),
    siteName: row.site_name,
    keyword: row.keyword,
    previousStatus: row.previous_status,
    status: row.status,
    details: isRecord(row.details) ? row.details : {},
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
    review:
      row.lr_review_id == null
        ? null
        : {
            reviewId: row.lr_review_id,
            rating: row.lr_rating == null ? null : Number(row.lr_rating),
            authorName: row.lr_author ?? null,
            content: row.lr_content ?? null,
            permalink: row.lr_permalink ?? null,
          },
  }));
}

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The outcome of one attempt at one alert. */
export interface DeliveryAttempt {
  alertId: number;
  /** Every sink that has taken the alert, this attempt and earlier ones. */
  deliveredSinks: string[];
  /** True when every configured sink has taken it. */
  delivered: boolean;
  /** What failed this attempt (one part per sink); null when nothing failed. */
  error: string | null;
  /** When to try again; ignored when delivered. */
  nextAttemptAt: Date | null;
}

/**
 * Counts one attempt per alert and records its outcome, in one statement; error texts
 * are redacted before they are stored.
 */
export async function recordDeliveryAttempts(
  db: Kysely<Database>,
  at: Date,
  attempts: readonly DeliveryAttempt[],
): Promise<void> {
  if (attempts.length === 0) return;
  await sql`
    update alerts a set
      attempts = a.attempts + 1,
      delivered_sinks = o.delivered_sinks,
      delivered_at = case when o.delivered then ${at}::timestamptz end,
      last_error = o.last_error,
      next_attempt_at = case when o.delivered then null else o.next_attempt_at end
    from unnest(
      ${attempts.map((a) => a.alertId)}::bigint[],
      ${attempts.map((a) => JSON.stringify(a.deliveredSinks))}::jsonb[],
      ${attempts.map((a) => a.delivered)}::boolean[],
      ${attempts.map((a) => (a.error === null ? null : redactText(a.error)))}::text[],
      ${attempts.map((a) => a.nextAttemptAt?.toISOString() ?? null)}::timestamptz[]
    ) as o(alert_id, delivered_sinks, delivered, last_error, next_attempt_at)
    where a.alert_id = o.alert_id`.execute(db);
}

/** Undelivered alerts that each named sink has not taken yet (the per-sink pending gauge). */
export async function countPendingBySink(
  db: Kysely<Database>,
  sinks: readonly string[],
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  if (sinks.length === 0) return counts;
  const row = await db
    .selectFrom('alerts')
    .select(
      sinks.map((sink, i) =>
        sql<number>`count(*) filter (where not delivered_sinks @> jsonb_build_array(${sink}::text))::int`.as(
          `s${i}`,
        ),
      ),
    )
    .where('delivered_at', 'is', null)
    .executeTakeFirst();
  const values = (row ?? {}) as Record<string, number>;
  sinks.forEach((sink, i) => {
    counts[sink] = Number(values[`s${i}`] ?? 0);
  });
  return counts;
}

/** Alerts ever raised, by kind (the raised counter, read from the table on scrape). */
export async function countAlertsByKind(db: Kysely<Database>): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('alerts')
    .select(['kind', sql<number>`count(*)::int`.as('n')])
    .groupBy('kind')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.kind, Number(row.n)]));
}

/** The most recent alerts first, with their details; `pending` keeps the undelivered ones. */
export async function recentAlerts(
  db: Kysely<Database>,
  options: { pending: boolean; limit: number },
): Promise<(AlertForDelivery & { deliveredAt: Date | null; lastError: string | null })[]> {
  let query = db
    .selectFrom('alerts')
    .select(['alert_id', 'delivered_at', 'last_error'])
    .orderBy('detected_at', 'desc')
    .orderBy('alert_id', 'desc')
    .limit(options.limit);
  if (options.pending) query = query.where('delivered_at', 'is', null);
  const rows = await query.execute();
  const byId = new Map(rows.map((row) => [Number(row.alert_id), row]));
  const alerts = await readAlerts(db, [...byId.keys()]);
  return alerts
    .map((alert) => ({
      ...alert,
      deliveredAt: byId.get(alert.alertId)?.delivered_at ?? null,
      lastError: byId.get(alert.alertId)?.last_error ?? null,
    }))
    .reverse();
}

/**
 * Gives back claims the dispatcher did not get to (its time ran out): the alerts are due
 * again at once, for `serve` or the next run, instead of waiting for the lease to end.
 */
export async function releaseClaims(db: Kysely<Database>, alertIds: readonly number[]) {
  if (alertIds.length === 0) return;
  await db
    .updateTable('alerts')
    .set({ next_attempt_at: null })
    .where('alert_id', 'in', [...alertIds])
    .where('delivered_at', 'is', null)
    .execute();
}

/** Every alert these runs raised, with its details (the demo counts the digests they make). */
export async function alertsOfRuns(
  db: Kysely<Database>,
  runIds: readonly string[],
): Promise<AlertForDelivery[]> {
  if (runIds.length === 0) return [];
  const ids = await db
    .selectFrom('alerts')
    .select('alert_id')
    .where('run_id', 'in', [...runIds])
    .execute();
  return readAlerts(
    db,
    ids.map((row) => Number(row.alert_id)),
  );
}
