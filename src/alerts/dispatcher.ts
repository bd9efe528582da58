/**
 * Sends pending alerts to every configured sink, at least once, never losing one.
 *
 * Each round claims due alerts (a lease in `next_attempt_at`), turns them into work
 * items (per sink: one per alert, or one per account and run for a grouping sink), sends
 * them a few at a time, and records every alert's attempt in one statement: delivered
 * when every sink took it, otherwise the errors and a backed-off `next_attempt_at`.
 *
 * Bounds (docs/alerts.md, "Delivery"):
 * - the lease covers the work claimed: every send is bounded by the sink timeout, so a
 *   round of N items at concurrency C ends within ceil(N / C) timeouts; the lease is that
 *   plus a margin, and an item whose lease is nearly over is not started. Two replicas
 *   with a slow sink therefore never hold the same alert at once;
 * - `deadline`: the `sync` command delivers only its own run's alerts and starts no send
 *   that could not end, at the sink timeout, by the deadline; a send once started is
 *   never cut short (a cut one may have reached the receiver, and `serve` would send it
 *   again); what it did not get to is released for `serve` at once;
 * - with no sink, each alert is logged once, paging on by alert id, so a backlog of any
 *   size never makes a pass re-read the same oldest rows.
 *
 * Before its first pass, a dispatcher records its sinks (`recordSinks`): a sink seen for
 * the first time skips or takes the alerts raised before it, as its `backlog` says
 * (ALERT_BACKLOG; docs/alerts.md, "A sink added later"). A sink skips only what was raised
 * before; the run `sync` delivers is its own, never backlog.
 */
import type { Kysely } from 'kysely';
import pLimit from 'p-limit';
import type { Logger } from '../log.ts';
import type { Database } from '../warehouse/database.ts';
import { digestGroupKey, whatChanged, wrongFields } from './messages.ts';
import {
  type AlertForDelivery,
  claimDueAlerts,
  type DeliveryAttempt,
  recordDeliveryAttempts,
  recordSinksSeen,
  undeliveredAlertsAfter,
} from './outbox.ts';
import { releaseClaims } from './outbox-rows.ts';
import { type AlertSink, DEFAULT_SINK_TIMEOUT_MS } from './sinks.ts';

export interface Backoff {
  /** Delay after the first failed attempt; doubled per attempt. */
  baseMs: number;
  maxMs: number;
}

/**
 * 30 s, doubling to at most an hour: a sink down for a deploy is retried within minutes; one
 * down for a day costs 24 requests an hour per alert, not thousands. No attempt limit:
 * an alert is never given up on.
 */
export const DEFAULT_BACKOFF: Backoff = { baseMs: 30_000, maxMs: 3_600_000 };

export interface DispatcherOptions {
  db: Kysely<Database>;
  sinks: readonly AlertSink[];
  logger: Logger;
  backoff?: Backoff;
  /** Alerts claimed per round; large enough that a run's alerts make one digest. */
  batchSize?: number;
  /** Sends in flight at once. */
  concurrency?: number;
  /** The longest one send may take (the sinks' own timeout); sizes the lease. */
  sinkTimeoutMs?: number;
  now?: () => Date;
  onDelivered?: (sink: string, alerts: number) => void;
  onFailed?: (sink: string, alerts: number) => void;
}

export interface DispatchResult {
  /** Alerts delivered to every sink in this pass. */
  delivered: number;
  /** Alerts that some sink refused in this pass (they will be retried). */
  failed: number;
  /** Alerts logged because no sink is configured. */
  logged: number;
  /** Claimed alerts left for later because the deadline or the lease ran out. */
  released: number;
}

export interface DispatchOptions {
  /** Only this run's alerts (the `sync` command). */
  runId?: string;
  /** Start no send that could not end (at the sink timeout) by this; none is cut short. */
  deadline?: Date;
}

export interface AlertDispatcher {
  readonly sinks: readonly AlertSink[];
  /**
   * Records the sinks as configured (once per dispatcher; the first pass does it too):
   * `serve` calls it at start, before it raises anything, so that what it raises is not
   * taken for backlog.
   */
  recordSinks(options?: { exceptRunId?: string }): Promise<void>;
  /** One pass; waits for a pass already going, then runs its own. */
  dispatch(options?: DispatchOptions): Promise<DispatchResult>;
  /** Waits for the passes in flight. */
  idle(): Promise<void>;
}

const BATCH_SIZE = 200;
const CONCURRENCY = 4;
/** Time for the claim and record statements around the sends. */
const LEASE_MARGIN_MS = 60_000;
/** Rounds per pass: a pass ends even while alerts keep becoming due (backoff of 0 in tests). */
const MAX_ROUNDS = 20;
/** Alerts logged per page when no sink is configured. */
const LOG_PAGE = 1000;

export function nextAttemptDelay(attempts: number, backoff: Backoff): number {
  const exponential = backoff.baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  const capped = Math.min(backoff.maxMs, exponential);
  // Up to a fifth of jitter, so alerts that failed together do not retry together.
  return Math.round(capped * (0.8 + Math.random() * 0.2));
}

/** How long a claim of `alerts` alerts must hold for every send to every sink to finish. */
export function leaseFor(
  alerts: number,
  sinks: number,
  concurrency: number,
  sinkTimeoutMs: number,
): number {
  return Math.ceil((alerts * sinks) / concurrency) * sinkTimeoutMs + LEASE_MARGIN_MS;
}

interface WorkItem {
  sink: AlertSink;
  alerts: AlertForDelivery[];
}

/** What the log says of an alert when no sink is configured. */
function alertLogFields(alert: AlertForDelivery): Record<string, unknown> {
  return {
    alertId: alert.alertId,
    kind: alert.kind,
    business: alert.businessName,
    businessId: alert.businessId,
    site: alert.siteName,
    change: whatChanged(alert),
    ...(alert.listing ? { wrong: wrongFields(alert), liveLink: alert.listing.liveLink } : {}),
    ...(alert.responseRequest
      ? {
          requestId: alert.responseRequest.requestId,
          reviewId: alert.responseRequest.reviewId,
        }
      : {}),
  };
}

/** Each sink's sends of the claimed alerts it has not taken: one an alert, or one a digest group. */
function workItems(sinks: readonly AlertSink[], claimed: AlertForDelivery[]): WorkItem[] {
  const items: WorkItem[] = [];
  for (const sink of sinks) {
    const open = claimed.filter(
      (alert) =>
        !alert.deliveredSinks.includes(sink.name) && !alert.skippedSinks.includes(sink.name),
    );
    if (sink.grouping === 'each') {
      for (const alert of open) items.push({ sink, alerts: [alert] });
      continue;
    }
    const groups = new Map<string, AlertForDelivery[]>();
    for (const alert of open) {
      const key = digestGroupKey(alert);
      groups.set(key, [...(groups.get(key) ?? []), alert]);
    }
    for (const group of groups.values()) items.push({ sink, alerts: group });
  }
  return items;
}

/** What a round needs of its dispatcher. */
interface RoundContext {
  db: DispatcherOptions['db'];
  sinks: readonly AlertSink[];
  log: Logger;
  now: () => Date;
  batchSize: number;
  concurrency: number;
  sinkTimeoutMs: number;
  backoff: Backoff;
  options: DispatcherOptions;
}

/** One round of a pass: claim a batch, send it, record each alert's attempt. */
async function round(
  context: RoundContext,
  dispatchOptions: DispatchOptions,
  result: DispatchResult,
): Promise<number> {
  const { db, sinks, log, now, batchSize, concurrency, sinkTimeoutMs, backoff, options } = context;
  const started = now();
  const leaseMs = leaseFor(batchSize, sinks.length, concurrency, sinkTimeoutMs);
  const leaseEnd = started.getTime() + leaseMs - LEASE_MARGIN_MS;
  const claimed = await claimDueAlerts(db, {
    limit: batchSize,
    now: started,
    leaseMs,
    ...(dispatchOptions.runId ? { runId: dispatchOptions.runId } : {}),
  });
  if (claimed.length === 0) return 0;
  // A send is started only if it can end, at the sink's own timeout, before the deadline
  // (`sync`'s delivery budget) and before the lease nears its end; once started it is
  // never cut short. Cutting one would record as failed a message the receiver may
  // already have taken, and `serve` would send it again (docs/alerts.md,
  // "Delivery"): only a crash may repeat a delivery.
  const deadline = dispatchOptions.deadline?.getTime() ?? Infinity;
  const latestStart = Math.min(leaseEnd, deadline) - sinkTimeoutMs;
  const taken = new Map(claimed.map((alert) => [alert.alertId, new Set(alert.deliveredSinks)]));
  const errors = new Map<number, string[]>();
  const attempted = new Set<number>();
  const limit = pLimit(concurrency);
  await Promise.all(
    workItems(sinks, claimed).map((item) =>
      limit(async () => {
        // One that could not end in time is left for a later pass (or `serve`).
        if (now().getTime() > latestStart) return;
        for (const alert of item.alerts) attempted.add(alert.alertId);
        try {
          await item.sink.send(item.alerts);
          for (const alert of item.alerts) taken.get(alert.alertId)?.add(item.sink.name);
          options.onDelivered?.(item.sink.name, item.alerts.length);
        } catch (error) {
          for (const alert of item.alerts) {
            errors.set(alert.alertId, [
              ...(errors.get(alert.alertId) ?? []),
              `${item.sink.name}: ${(error as Error).message}`,
            ]);
          }
          options.onFailed?.(item.sink.name, item.alerts.length);
        }
      }),
    ),
  );

  const at = now();
  const attempts: DeliveryAttempt[] = [];
  const unattempted: number[] = [];
  for (const alert of claimed) {
    const sinksTaken = taken.get(alert.alertId) ?? new Set<string>();
    // A sink that skips the alert (raised before it was configured) is done with it.
    const delivered = sinks.every(
      (sink) => sinksTaken.has(sink.name) || alert.skippedSinks.includes(sink.name),
    );
    if (!attempted.has(alert.alertId) && !delivered) {
      unattempted.push(alert.alertId);
      continue;
    }
    const failure = errors.get(alert.alertId);
    attempts.push({
      alertId: alert.alertId,
      deliveredSinks: [...sinksTaken].sort(),
      delivered,
      error: failure ? failure.join('; ') : null,
      nextAttemptAt: delivered
        ? null
        : new Date(at.getTime() + nextAttemptDelay(alert.attempts + 1, backoff)),
    });
    if (delivered) result.delivered += 1;
    else result.failed += 1;
  }
  await recordDeliveryAttempts(db, at, attempts);
  await releaseClaims(db, unattempted);
  result.released += unattempted.length;
  const failed = attempts.filter((a) => !a.delivered);
  if (attempts.length > failed.length) {
    log.info({ alerts: attempts.length - failed.length }, 'alerts delivered');
  }
  if (failed.length) {
    log.warn(
      { alerts: failed.length, error: failed[0]?.error },
      'alerts not delivered yet; they will be retried',
    );
  }
  if (unattempted.length) {
    log.info(
      { alerts: unattempted.length, sinkTimeoutMs },
      deadline <= leaseEnd
        ? 'alerts left for serve: a send could not end within the delivery time of sync ' +
            '(ALERT_SYNC_DELIVERY_SECONDS) at the sink timeout (ALERT_SINK_TIMEOUT_SECONDS)'
        : 'alerts left for the next pass: the claim lease is nearly over',
    );
  }
  return unattempted.length ? 0 : claimed.length;
}

export function createAlertDispatcher(options: DispatcherOptions): AlertDispatcher {
  const { db, sinks, logger } = options;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const now = options.now ?? (() => new Date());
  const concurrency = options.concurrency ?? CONCURRENCY;
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const sinkTimeoutMs = options.sinkTimeoutMs ?? DEFAULT_SINK_TIMEOUT_MS;
  const log = logger.child({ component: 'alert-dispatcher' });
  let lastLoggedId = 0;
  let tail: Promise<unknown> = Promise.resolve();
  let recorded: Promise<void> | undefined;

  function recordSinks(recordOptions: { exceptRunId?: string } = {}): Promise<void> {
    if (sinks.length === 0) return Promise.resolve();
    recorded ??= recordSinksSeen(db, {
      sinks: sinks.map((sink) => ({ name: sink.name, backlog: sink.backlog ?? 'send' })),
      at: now(),
      ...(recordOptions.exceptRunId ? { exceptRunId: recordOptions.exceptRunId } : {}),
    }).then(
      (seen) => {
        for (const first of seen) {
          log.info(
            { sink: first.sink, backlog: first.backlog, skipped: first.skipped },
            first.backlog === 'skip'
              ? `alert sink ${first.sink} is configured for the first time: ${first.skipped} ` +
                  'alerts raised before are not sent to it (ALERT_BACKLOG=skip; ' +
                  '`listings-sync alerts` lists them, `listings-sync alerts send-backlog` sends them)'
              : `alert sink ${first.sink} is configured for the first time: the alerts still ` +
                  'pending are sent to it (ALERT_BACKLOG=send)',
          );
        }
      },
      (error: unknown) => {
        // Tried again by the next pass.
        recorded = undefined;
        throw error;
      },
    );
    return recorded;
  }

  async function logWithoutSinks(runId?: string): Promise<DispatchResult> {
    let logged = 0;
    for (;;) {
      const page = await undeliveredAlertsAfter(db, {
        afterId: lastLoggedId,
        limit: LOG_PAGE,
        ...(runId ? { runId } : {}),
      });
      for (const alert of page) {
        lastLoggedId = Math.max(lastLoggedId, alert.alertId);
        logged += 1;
        log.warn(
          alertLogFields(alert),
          `${alert.kind.replace(/_/g, ' ')} (no alert sink configured; it stays in the alerts table)`,
        );
      }
      if (page.length < LOG_PAGE) break;
    }
    return { delivered: 0, failed: 0, logged, released: 0 };
  }

  async function pass(dispatchOptions: DispatchOptions): Promise<DispatchResult> {
    if (sinks.length === 0) return logWithoutSinks(dispatchOptions.runId);
    await recordSinks(dispatchOptions.runId ? { exceptRunId: dispatchOptions.runId } : {});
    const result: DispatchResult = { delivered: 0, failed: 0, logged: 0, released: 0 };
    for (let i = 0; i < MAX_ROUNDS; i++) {
      const deadline = dispatchOptions.deadline?.getTime();
      if (deadline !== undefined && now().getTime() + sinkTimeoutMs > deadline) {
        if (i === 0) {
          log.info(
            { sinkTimeoutMs, deadline: dispatchOptions.deadline },
            'alerts left for serve: no send could end within the delivery time of sync ' +
              '(ALERT_SYNC_DELIVERY_SECONDS) at the sink timeout (ALERT_SINK_TIMEOUT_SECONDS)',
          );
        }
        break;
      }
      const claimed = await round(
        { db, sinks, log, now, batchSize, concurrency, sinkTimeoutMs, backoff, options },
        dispatchOptions,
        result,
      );
      if (claimed < batchSize) break;
    }
    return result;
  }

  return {
    sinks,
    recordSinks,
    dispatch(dispatchOptions = {}) {
      const run = tail.then(() => pass(dispatchOptions));
      tail = run.catch(() => {});
      return run;
    },
    async idle() {
      await tail;
    },
  };
}
