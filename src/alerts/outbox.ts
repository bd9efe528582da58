/**
 * What the dispatcher and `listings-sync alerts` read and record with, over the outbox's
 * statements (src/alerts/outbox-rows.ts, where alerts are raised and claims are leases, and
 * src/alerts/sink-rows.ts): what an alert is to a message, a claim sized by its caller,
 * attempts with their errors redacted, and the sinks' backlog.
 *
 * A sink's backlog (docs/alerts.md, "A sink added later"): the first time a dispatcher runs
 * with a sink, `recordSinksSeen` writes its `alert_sinks` row and, under ALERT_BACKLOG=skip,
 * marks the alerts raised before as skipped for it (`skipped_sinks`).
 */
import type { Kysely } from 'kysely';
import { redactText } from '../log.ts';
import type { Database, JsonValue } from '../warehouse/database.ts';
import type { AlertForDelivery } from './alert.ts';
import {
  type AlertReadRow,
  alertIdsOfRuns,
  claimDueAlertIds,
  markSkipped,
  readAlertRows,
  recentAlertRows,
  recordAttempts,
  undeliveredAlertIdsAfter,
} from './outbox-rows.ts';
import { type AlertSinksTable, insertNewSinks, setSinkSkipped } from './sink-rows.ts';

export type { AlertForDelivery } from './alert.ts';

/** What a sink does with the alerts raised before it was first configured (ALERT_BACKLOG). */
export type BacklogPolicy = AlertSinksTable['backlog'];

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
  const ids = await claimDueAlertIds(db, {
    limit: options.limit,
    now: options.now,
    leaseUntil,
    ...(options.runId ? { runId: options.runId } : {}),
  });
  return readAlerts(db, ids);
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
  return readAlerts(db, await undeliveredAlertIdsAfter(db, options));
}

/** Alerts by id with their details, oldest first. */
export async function readAlerts(
  db: Kysely<Database>,
  ids: readonly number[],
): Promise<AlertForDelivery[]> {
  const rows = await readAlertRows(db, ids);
  return rows.map(alertForDelivery);
}

/** What a message needs of one alert, from its row and the rows it names. */
function alertForDelivery(row: AlertReadRow): AlertForDelivery {
  return {
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
  };
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
  await recordAttempts(
    db,
    at,
    attempts.map((a) => ({ ...a, error: a.error === null ? null : redactText(a.error) })),
  );
}

/**
 * The most recent alerts first, with their details; `pending` keeps the undelivered ones
 * (with `pendingFor`, those one of these sinks will still take: `recentAlertRows`).
 */
export async function recentAlerts(
  db: Kysely<Database>,
  options: { pending: boolean; limit: number; pendingFor?: readonly string[] },
): Promise<(AlertForDelivery & { deliveredAt: Date | null; lastError: string | null })[]> {
  const rows = await recentAlertRows(db, options);
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

/** Every alert these runs raised, with its details (the demo counts the digests they make). */
export async function alertsOfRuns(
  db: Kysely<Database>,
  runIds: readonly string[],
): Promise<AlertForDelivery[]> {
  return readAlerts(db, await alertIdsOfRuns(db, runIds));
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
 * not sent (`delivered_at` set, `last_error` outbox-rows.ts's SKIPPED_NOTE), so no pass claims it again.
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
    const inserted = await insertNewSinks(trx, options.sinks, options.at);
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
      await setSinkSkipped(trx, row.sink, skipped);
      seen.push({ sink: row.sink, backlog: 'skip', skipped });
    }
    return seen;
  });
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
