/**
 * The alert outbox: every SQL statement about `alerts` lives here. One way in, `raise`,
 * called by every writer inside the writer's own transaction (a reader never sees a
 * change without its alert, nor an alert without its change); and the statements the
 * dispatcher, the metrics and `listings-sync alerts` read and record with.
 *
 * Claims are leases in `next_attempt_at`: a claimed alert is not due again until the
 * lease ends, so two dispatchers (two `serve` replicas, or `sync` and `serve`) never send
 * it at the same time. The caller sizes the lease to cover all the work it claims.
 *
 * A sink's backlog (docs/alerts.md, "A sink added later"): the first time a dispatcher runs
 * with a sink, `recordSinksSeen` writes its `alert_sinks` row and, under ALERT_BACKLOG=skip,
 * marks the alerts raised before as skipped for it (`skipped_sinks`).
 */
import { type ColumnType, type Kysely, sql } from 'kysely';
import { redactText } from '../log.ts';
import { insertRows } from '../warehouse/bulk-write.ts';
import type { Database, Db, JsonValue, JsonWithDefault, Timestamp } from '../warehouse/database.ts';
import { type AlertKind, LISTING_INACCURATE } from './kinds.ts';

/** What a sink does with the alerts raised before it was first configured (ALERT_BACKLOG). */
export type BacklogPolicy = 'skip' | 'send';

/** Migration 0018's table: one row per sink name, written the first time a dispatcher runs with it. */
export interface AlertSinksTable {
  sink: string;
  first_seen_at: Timestamp;
  /** ALERT_BACKLOG when the sink was first seen. */
  backlog: BacklogPolicy;
  /** Alerts raised before that it was marked as skipping. */
  skipped: ColumnType<number, number | undefined, number>;
}

/** Migration 0018's table and column, on top of the warehouse's `Database`. */
type BacklogTables = {
  alert_sinks: AlertSinksTable;
  alerts: { skipped_sinks: JsonWithDefault };
};

/** `last_error` of an alert closed because every configured sink skipped it. */
export const SKIPPED_NOTE =
  'not sent: raised before its sink was configured (ALERT_BACKLOG=skip; `listings-sync alerts send-backlog` sends it)';

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
  /** Sinks that will not get it: it was raised before they were configured (ALERT_BACKLOG=skip). */
  skippedSinks: string[];
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
    .withTables<BacklogTables>()
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
      'a.skipped_sinks',
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
    deliveredSinks: sinkNames(row.delivered_sinks),
    skippedSinks: sinkNames(row.skipped_sinks),
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

function sinkNames(value: JsonValue): string[] {
  return Array.isArray(value) ? value.filter((s): s is string => typeof s === 'string') : [];
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

/** Undelivered alerts that each named sink has neither taken nor skipped (the per-sink pending gauge). */
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
        sql<number>`count(*) filter (where not (delivered_sinks || skipped_sinks) @> jsonb_build_array(${sink}::text))::int`.as(
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

/** A sink a dispatcher runs with, and what it does with the alerts raised before it. */
export interface SinkToRecord {
  name: string;
  backlog: BacklogPolicy;
}

/** A sink seen for the first time: what it decided and how many older alerts it skipped. */
export interface SinkFirstSeen {
  sink: string;
  backlog: BacklogPolicy;
  skipped: number;
}

/**
 * Records the sinks a dispatcher runs with; returns those seen for the first time. A sink
 * seen before keeps its row: its decision was made then (docs/alerts.md, "A sink added
 * later"). A new one under `skip` is marked as skipping every alert still open that it has
 * not taken, except those of `exceptRunId` (the run `sync` is delivering: it ran with the
 * sink configured); an alert that then has no configured sink left to take it is closed,
 * not sent (`delivered_at` set, `last_error` SKIPPED_NOTE), so no pass claims it again.
 * Under `send` nothing is marked: the open alerts go to it like new ones.
 *
 * One transaction: a second dispatcher that starts meanwhile waits on the `alert_sinks`
 * row, then finds the sink seen and the marks in place, so it never sends what this one
 * skips.
 */
export async function recordSinksSeen(
  db: Kysely<Database>,
  options: { sinks: readonly SinkToRecord[]; at: Date; exceptRunId?: string },
): Promise<SinkFirstSeen[]> {
  if (options.sinks.length === 0) return [];
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .withTables<BacklogTables>()
      .insertInto('alert_sinks')
      .values(
        options.sinks.map((sink) => ({
          sink: sink.name,
          first_seen_at: options.at,
          backlog: sink.backlog,
        })),
      )
      .onConflict((oc) => oc.column('sink').doNothing())
      .returning(['sink', 'backlog'])
      .execute();
    const seen: SinkFirstSeen[] = [];
    // Sink by sink: the second sees the first's marks, so an alert both skip is closed.
    for (const row of inserted) {
      if (row.backlog !== 'skip') {
        seen.push({ sink: row.sink, backlog: row.backlog, skipped: 0 });
        continue;
      }
      const skipped = await markSkipped(trx, {
        sink: row.sink,
        configured: options.sinks.map((sink) => sink.name),
        at: options.at,
        ...(options.exceptRunId ? { exceptRunId: options.exceptRunId } : {}),
      });
      await trx
        .withTables<BacklogTables>()
        .updateTable('alert_sinks')
        .set({ skipped })
        .where('sink', '=', row.sink)
        .execute();
      seen.push({ sink: row.sink, backlog: 'skip', skipped });
    }
    return seen;
  });
}

/**
 * Marks every open alert `sink` has not taken as skipped for it, except those of
 * `exceptRunId`; closes, not sent, those no sink of `configured` is left to take. Returns
 * how many it marked.
 */
async function markSkipped(
  db: Db,
  options: { sink: string; configured: readonly string[]; at: Date; exceptRunId?: string },
): Promise<number> {
  const configured = JSON.stringify(options.configured);
  const { rows } = await sql<{ marked: number }>`
    with me as (select jsonb_build_array(${options.sink}::text) as sink),
    marked as (
      update alerts a set
        skipped_sinks = a.skipped_sinks || me.sink,
        delivered_at = case
          when (a.delivered_sinks || a.skipped_sinks || me.sink) @> ${configured}::jsonb
          then ${options.at}::timestamptz end,
        next_attempt_at = case
          when (a.delivered_sinks || a.skipped_sinks || me.sink) @> ${configured}::jsonb
          then null else a.next_attempt_at end,
        last_error = case
          when (a.delivered_sinks || a.skipped_sinks || me.sink) @> ${configured}::jsonb
          then ${SKIPPED_NOTE}::text else a.last_error end
      from me
      where a.delivered_at is null
        and not (a.delivered_sinks || a.skipped_sinks) @> me.sink
        and a.run_id is distinct from ${options.exceptRunId ?? null}::uuid
      returning a.alert_id
    )
    select count(*)::int as marked from marked`.execute(db);
  return Number(rows[0]?.marked ?? 0);
}

/**
 * Starts sinks from now (`alerts skip-backlog`): every alert still open that one of `sinks`
 * has not taken is marked skipped for it, as when a sink is first seen under `skip`.
 * `configured`: every sink configured, to close what none is left to take. Returns how
 * many alerts it marked, per sink.
 */
export async function skipPending(
  db: Kysely<Database>,
  options: { sinks: readonly string[]; configured: readonly string[]; at: Date },
): Promise<Record<string, number>> {
  return db.transaction().execute(async (trx) => {
    const marked: Record<string, number> = {};
    for (const sink of options.sinks) {
      marked[sink] = await markSkipped(trx, {
        sink,
        configured: options.configured,
        at: options.at,
      });
    }
    return marked;
  });
}

/** How many alerts each sink skips now (`listings-sync alerts`), by sink. */
export async function countSkippedBySink(db: Kysely<Database>): Promise<Record<string, number>> {
  const { rows } = await sql<{ sink: string; n: number }>`
    select s.sink, count(*)::int as n
    from alerts a, jsonb_array_elements_text(a.skipped_sinks) s(sink)
    where a.skipped_sinks <> '[]'::jsonb
    group by s.sink`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.sink, Number(row.n)]));
}

/** Every sink ever seen, oldest first (what `listings-sync alerts` says of each). */
export async function sinksSeen(
  db: Kysely<Database>,
): Promise<{ sink: string; firstSeenAt: Date; backlog: BacklogPolicy; skipped: number }[]> {
  const rows = await db
    .withTables<BacklogTables>()
    .selectFrom('alert_sinks')
    .select(['sink', 'first_seen_at', 'backlog', 'skipped'])
    .orderBy('first_seen_at')
    .orderBy('sink')
    .execute();
  return rows.map((row) => ({
    sink: row.sink,
    firstSeenAt: row.first_seen_at,
    backlog: row.backlog,
    skipped: row.skipped,
  }));
}

/**
 * Makes alerts skipped for these sinks due for them again (`alerts send-backlog`): the sinks
 * leave `skipped_sinks`, and an alert closed as not sent opens again. Those detected before
 * `since` stay skipped. Returns how many alerts it opened for delivery.
 */
export async function reopenSkipped(
  db: Kysely<Database>,
  options: { sinks: readonly string[]; since?: Date },
): Promise<number> {
  if (options.sinks.length === 0) return 0;
  const sinks = [...options.sinks];
  const result = await sql`
    update alerts a set
      skipped_sinks = a.skipped_sinks - ${sinks}::text[],
      delivered_at = null,
      next_attempt_at = null,
      last_error = case when a.last_error = ${SKIPPED_NOTE}::text then null else a.last_error end
    where exists (
        select 1 from jsonb_array_elements_text(a.skipped_sinks) s(sink)
        where s.sink = any(${sinks}::text[]))
      and a.detected_at >= ${options.since ?? new Date(0)}::timestamptz`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
