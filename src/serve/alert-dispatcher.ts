/**
 * Sends pending alerts to every configured sink, at least once, never losing one.
 *
 * Each pass claims due alerts (a lease in `next_attempt_at`, so replicas and the `sync`
 * command never send one alert at the same time), sends each to the sinks that have not
 * taken it yet (`delivered_sinks`), and records the attempt: delivered when every sink
 * took it, otherwise the error and a backed-off `next_attempt_at`. A dispatcher that dies
 * mid-send leaves its claims to expire, and another pass sends them again. Passes in one
 * process run one after another.
 *
 * With no sink configured, alerts stay in the table and each is logged once.
 */

import type { Kysely } from 'kysely';
import pLimit from 'p-limit';
import type { Logger } from '../log.ts';
import type { Database } from '../warehouse/database.ts';
import { type AlertSink, REVIEW_RESPONSE_FAILED_KIND, wrongFields } from './alert-sinks.ts';
import {
  type AlertForDelivery,
  claimDueAlerts,
  recordDeliveryAttempt,
  undeliveredAlerts,
} from './alert-store.ts';

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
  /** Alerts claimed per round. */
  batchSize?: number;
  /** Alerts sent at once. */
  concurrency?: number;
  /** A claim's lease; longer than a send to every sink can take (2 x 10 s timeouts). */
  leaseMs?: number;
  now?: () => Date;
  onDelivered?: (sink: string) => void;
  onFailed?: (sink: string) => void;
}

export interface DispatchResult {
  /** Alerts delivered to every sink in this pass. */
  delivered: number;
  /** Alerts that some sink refused in this pass (they will be retried). */
  failed: number;
  /** Alerts logged because no sink is configured. */
  logged: number;
}

export interface DispatchOptions {
  /** With no sink: log only this run's alerts (the `sync` command). */
  runId?: string;
}

export interface AlertDispatcher {
  readonly sinks: readonly AlertSink[];
  /** One pass; waits for a pass already going, then runs its own. */
  dispatch(options?: DispatchOptions): Promise<DispatchResult>;
  /** Waits for the passes in flight. */
  idle(): Promise<void>;
}

const BATCH_SIZE = 50;
const CONCURRENCY = 4;
const LEASE_MS = 120_000;
/** Rounds per pass: a pass ends even while alerts keep becoming due (backoff of 0 in tests). */
const MAX_ROUNDS = 20;

export function nextAttemptDelay(attempts: number, backoff: Backoff): number {
  const exponential = backoff.baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  const capped = Math.min(backoff.maxMs, exponential);
  // Up to a fifth of jitter, so alerts that failed together do not retry together.
  return Math.round(capped * (0.8 + Math.random() * 0.2));
}

export function createAlertDispatcher(options: DispatcherOptions): AlertDispatcher {
  const { db, sinks, logger } = options;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const now = options.now ?? (() => new Date());
  const log = logger.child({ component: 'alert-dispatcher' });
  const loggedWithoutSink = new Set<number>();
  let tail: Promise<unknown> = Promise.resolve();

  async function deliverOne(alert: AlertForDelivery): Promise<boolean> {
    const taken = new Set(alert.deliveredSinks);
    const errors: string[] = [];
    for (const sink of sinks) {
      if (taken.has(sink.name)) continue;
      try {
        await sink.send(alert);
        taken.add(sink.name);
        options.onDelivered?.(sink.name);
      } catch (error) {
        errors.push(`${sink.name}: ${(error as Error).message}`);
        options.onFailed?.(sink.name);
      }
    }
    const delivered = sinks.every((sink) => taken.has(sink.name));
    const attempts = alert.attempts + 1;
    await recordDeliveryAttempt(db, alert.alertId, {
      deliveredSinks: [...taken].sort(),
      delivered,
      at: now(),
      error: errors.length ? errors.join('; ') : null,
      nextAttemptAt: delivered
        ? null
        : new Date(now().getTime() + nextAttemptDelay(attempts, backoff)),
    });
    if (delivered) {
      log.info({ alertId: alert.alertId, attempts }, 'alert delivered');
    } else {
      log.warn(
        { alertId: alert.alertId, attempts, error: errors.join('; ') },
        'alert not delivered yet; it will be retried',
      );
    }
    return delivered;
  }

  async function logWithoutSinks(runId?: string): Promise<DispatchResult> {
    const pending = await undeliveredAlerts(db, { limit: 1000, ...(runId ? { runId } : {}) });
    let logged = 0;
    for (const alert of pending) {
      if (loggedWithoutSink.has(alert.alertId)) continue;
      loggedWithoutSink.add(alert.alertId);
      logged += 1;
      if (alert.kind === REVIEW_RESPONSE_FAILED_KIND) {
        log.warn(
          {
            alertId: alert.alertId,
            business: alert.businessName,
            businessId: alert.businessId,
            site: alert.siteName,
            requestId: alert.responseRequest?.requestId ?? null,
            reviewId: alert.responseRequest?.reviewId ?? null,
          },
          'review response failed (no alert sink configured; it stays in the alerts table)',
        );
        continue;
      }
      log.warn(
        {
          alertId: alert.alertId,
          business: alert.businessName,
          businessId: alert.businessId,
          site: alert.siteName,
          previousStatus: alert.previousStatus,
          status: alert.status,
          wrong: wrongFields(alert),
          liveLink: alert.listing?.liveLink ?? null,
        },
        'listing newly inaccurate (no alert sink configured; it stays in the alerts table)',
      );
    }
    return { delivered: 0, failed: 0, logged };
  }

  async function pass(dispatchOptions: DispatchOptions): Promise<DispatchResult> {
    if (sinks.length === 0) return logWithoutSinks(dispatchOptions.runId);
    const result: DispatchResult = { delivered: 0, failed: 0, logged: 0 };
    const limit = pLimit(options.concurrency ?? CONCURRENCY);
    const batchSize = options.batchSize ?? BATCH_SIZE;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const claimed = await claimDueAlerts(db, {
        limit: batchSize,
        now: now(),
        leaseMs: options.leaseMs ?? LEASE_MS,
      });
      const outcomes = await Promise.all(claimed.map((alert) => limit(() => deliverOne(alert))));
      for (const delivered of outcomes) {
        if (delivered) result.delivered += 1;
        else result.failed += 1;
      }
      if (claimed.length < batchSize) break;
    }
    return result;
  }

  return {
    sinks,
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
