/**
 * `alerts`, the alert outbox (docs/warehouse.md, "alerts"; docs/alerts.md, "Delivery"):
 * every SQL statement on the table, and its one way in, `raise`, called by every rule
 * inside the writer's own transaction (a reader never sees a change without its alert, nor
 * an alert without its change). What an alert is to a message, claims with their lease,
 * attempts and the sinks' backlog are src/alerts/outbox.ts's, which calls the rest of these.
 *
 * Claims are leases in `next_attempt_at`: a claimed alert is not due again until the
 * lease ends, so two dispatchers (two `serve` replicas, or `sync` and `serve`) never send
 * it at the same time.
 */
import { type ColumnType, type Generated, type Kysely, sql } from 'kysely';
import type { Database, Db, JsonWithDefault, Timestamp } from '../warehouse/database.ts';
import { insertRows } from '../warehouse/write/bulk-write.ts';
import type { NewAlert } from './alert.ts';
import type { AlertKind } from './kinds/kind.ts';

export type { NewAlert } from './alert.ts';

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

/** Of these listings of one business, those with an alert of `kind` detected after `since`. */
export async function listingsWithAlertSince(
  db: Db,
  options: { kind: AlertKind; businessId: number; listingIds: readonly number[]; since: Date },
): Promise<Set<number>> {
  if (options.listingIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('alerts')
    .select('listing_id')
    .distinct()
    .where('kind', '=', options.kind)
    .where('business_id', '=', options.businessId)
    .where('listing_id', 'in', [...options.listingIds])
    .where('detected_at', '>', options.since)
    .execute();
  return new Set(rows.map((row) => Number(row.listing_id)));
}

/**
 * Claims up to `limit` undelivered alerts due at `now`, oldest first, by moving their
 * `next_attempt_at` to `leaseUntil`; returns their ids. `FOR UPDATE SKIP LOCKED`:
 * concurrent claimers take different alerts.
 */
export async function claimDueAlertIds(
  db: Kysely<Database>,
  options: { limit: number; now: Date; leaseUntil: Date; runId?: string },
): Promise<number[]> {
  const claimed = await db
    .updateTable('alerts')
    .set({ next_attempt_at: options.leaseUntil })
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
  return claimed.map((row) => row.alert_id);
}

/** Ids of undelivered alerts above `afterId`, in id order (optionally of one run only). */
export async function undeliveredAlertIdsAfter(
  db: Kysely<Database>,
  options: { afterId: number; limit: number; runId?: string },
): Promise<number[]> {
  let query = db
    .selectFrom('alerts')
    .select('alert_id')
    .where('delivered_at', 'is', null)
    .where('alert_id', '>', options.afterId)
    .orderBy('alert_id')
    .limit(options.limit);
  if (options.runId) query = query.where('run_id', '=', options.runId);
  const ids = await query.execute();
  return ids.map((row) => row.alert_id);
}

/**
 * Alerts by id, oldest first, with what a message needs from the other tables as stored
 * now: the business's name, the listing, a response request and its review, a review.
 */
export async function readAlertRows(db: Kysely<Database>, ids: readonly number[]) {
  if (ids.length === 0) return [];
  return db
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
}

/** One row of `readAlertRows`. */
export type AlertReadRow = Awaited<ReturnType<typeof readAlertRows>>[number];

/** The outcome of one attempt at one alert, as stored (`error` already redacted). */
export interface AttemptToRecord {
  alertId: number;
  deliveredSinks: readonly string[];
  delivered: boolean;
  error: string | null;
  nextAttemptAt: Date | null;
}

/** Counts one attempt per alert and records its outcome, in one statement. */
export async function recordAttempts(
  db: Kysely<Database>,
  at: Date,
  attempts: readonly AttemptToRecord[],
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
      ${attempts.map((a) => a.error)}::text[],
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

/**
 * The most recent alerts' ids and delivery state, newest first; `pending`: undelivered only,
 * and with `pendingFor`, only those one of these sinks has neither taken nor skipped (the
 * sinks that will take an open alert: `alerts --pending`, src/cli/commands/alerts.ts).
 */
export async function recentAlertRows(
  db: Kysely<Database>,
  options: { pending: boolean; limit: number; pendingFor?: readonly string[] },
): Promise<{ alert_id: number; delivered_at: Date | null; last_error: string | null }[]> {
  let query = db
    .selectFrom('alerts')
    .select(['alert_id', 'delivered_at', 'last_error'])
    .orderBy('detected_at', 'desc')
    .orderBy('alert_id', 'desc')
    .limit(options.limit);
  if (options.pending) query = query.where('delivered_at', 'is', null);
  if (options.pending && options.pendingFor) {
    const sinks = JSON.stringify(options.pendingFor);
    query = query.where(
      sql<boolean>`exists (
        select 1 from jsonb_array_elements_text(${sinks}::jsonb) t(sink)
         where not (alerts.delivered_sinks || alerts.skipped_sinks) @> jsonb_build_array(t.sink))`,
    );
  }
  return query.execute();
}

/**
 * Per sink, how many open alerts it has neither taken nor skipped: what a sink not seen
 * yet would skip at its first pass under ALERT_BACKLOG=skip (`markSkipped`), or take
 * under `send`.
 */
export async function countOpenNotTakenBy(
  db: Kysely<Database>,
  sinks: readonly string[],
): Promise<Record<string, number>> {
  if (sinks.length === 0) return {};
  const { rows } = await sql<{ sink: string; n: number }>`
    select s.sink, count(a.alert_id)::int as n
      from jsonb_array_elements_text(${JSON.stringify(sinks)}::jsonb) s(sink)
      left join alerts a
        on a.delivered_at is null
       and not (a.delivered_sinks || a.skipped_sinks) @> jsonb_build_array(s.sink)
     group by s.sink`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.sink, Number(row.n)]));
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

/** Ids of every alert these runs raised. */
export async function alertIdsOfRuns(
  db: Kysely<Database>,
  runIds: readonly string[],
): Promise<number[]> {
  if (runIds.length === 0) return [];
  const ids = await db
    .selectFrom('alerts')
    .select('alert_id')
    .where('run_id', 'in', [...runIds])
    .execute();
  return ids.map((row) => Number(row.alert_id));
}

/** `last_error` of an alert closed because every configured sink skipped it. */
const SKIPPED_NOTE =
  'not sent: raised before its sink was configured (ALERT_BACKLOG=skip; `listings-sync alerts send-backlog` sends it)';

/**
 * Marks every open alert `sink` has not taken as skipped for it, except those of
 * `exceptRunId`; closes, with SKIPPED_NOTE as its `last_error`, each one no sink of
 * `configured` is left to take. Returns how many it marked.
 */
export async function markSkipped(
  db: Db,
  options: {
    sink: string;
    configured: readonly string[];
    at: Date;
    exceptRunId?: string;
  },
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
        -- No run exempted, none is: alerts of no run (serve's sync_stale) are skipped too.
        and (${options.exceptRunId ?? null}::uuid is null
             or a.run_id is distinct from ${options.exceptRunId ?? null}::uuid)
      returning a.alert_id
    )
    select count(*)::int as marked from marked`.execute(db);
  return Number(rows[0]?.marked ?? 0);
}

/** How many alerts each sink skips now, by sink. */
export async function countSkippedBySink(db: Kysely<Database>): Promise<Record<string, number>> {
  const { rows } = await sql<{ sink: string; n: number }>`
    select s.sink, count(*)::int as n
    from alerts a, jsonb_array_elements_text(a.skipped_sinks) s(sink)
    where a.skipped_sinks <> '[]'::jsonb
    group by s.sink`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.sink, Number(row.n)]));
}

/**
 * Makes alerts skipped for these sinks due for them again (`alerts send-backlog`): the sinks
 * leave `skipped_sinks`, and an alert closed as not sent (SKIPPED_NOTE) opens again. Those
 * detected before `since` stay skipped. Returns how many alerts it opened for delivery.
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

export interface AlertsTable {
  alert_id: Generated<number>;
  kind: string;
  dedupe_key: string;
  account_name: string | null;
  /** Null (migration 0007) for `sync_failed` and `sync_stale`: a run or an account. */
  business_id: number | null;
  listing_id: number | null;
  site_name: string | null;
  previous_status: string | null;
  status: string;
  detected_at: Timestamp;
  delivered_at: Timestamp | null;
  attempts: Generated<number>;
  last_error: string | null;
  /** Added: when a failed delivery may be retried; null means now. */
  next_attempt_at: Timestamp | null;
  run_id: string | null;
  /** Migration 0002: names of the sinks that took the alert (`slack`, `webhook`). */
  delivered_sinks: JsonWithDefault;
  /** Migration 0004: the review response request of a `review_response_failed` alert. */
  request_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: the keyword of a `rank_drop`. */
  keyword: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: the review of a `low_rating_review`. */
  review_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: what changed (ranks, a rating, a run's status), per kind. */
  details: JsonWithDefault;
  /**
   * Migration 0018: names of the sinks that will not get the alert, because it was raised
   * before they were configured (docs/alerts.md, "A sink added later").
   */
  skipped_sinks: JsonWithDefault;
}

declare module '../warehouse/database.ts' {
  interface Database {
    alerts: AlertsTable;
  }
}
