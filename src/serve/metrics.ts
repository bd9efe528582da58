/**
 * Prometheus metrics of `serve`, on its own Registry (so tests can start several servers
 * in one process, and nothing else's metrics leak in). Names are documented in
 * docs/serve.md ("Metrics"); they are a contract for dashboards.
 *
 * Upstream request counters are read from the scheduler's API client on every scrape
 * (deltas of `apiStats`), so they move during a run, not only after it. What the warehouse
 * knows is read from it on scrape, so it is true whoever ran the load (this process or a
 * CronJob): the last successful run (`sync_runs`), alerts pending per configured sink and
 * alerts raised per kind (`alerts`).
 */
import type { Kysely } from 'kysely';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { countAlertsByKind, countPendingBySink } from '../alerts/outbox-rows.ts';
import { type ApiClient, apiStats } from '../api/index.ts';
import type { SyncResult } from '../sync/run.ts';
import type { Database } from '../warehouse/database.ts';
import { lastSuccessfulRunAt } from '../warehouse/runs/sync-runs.ts';

/**
 * How a delivery to POST /webhooks ended. `unprocessable`: signed JSON the warehouse cannot
 * store as sent (NUL, lone surrogate, too deep), answered 422. `overloaded`: answered 503
 * with Retry-After because WEBHOOK_MAX_IN_FLIGHT deliveries were already being handled. The metric's help text is
 * built from this list, so it names every label value it counts.
 */
export const WEBHOOK_OUTCOMES = [
  'accepted',
  'duplicate',
  'unauthorized',
  'too_large',
  'bad_json',
  'unprocessable',
  'unavailable',
  'overloaded',
] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** How a scheduled run ended: a run status, or it did not start. */
export type RunOutcome = SyncResult['status'] | 'locked' | 'error';

export interface ServeMetrics {
  registry: Registry;
  recordRun(outcome: RunOutcome, seconds: number, result?: SyncResult): void;
  recordSkippedTick(): void;
  recordWebhook(outcome: WebhookOutcome): void;
  /** Deliveries being handled now (WEBHOOK_MAX_IN_FLIGHT bounds it). */
  setWebhooksInFlight(count: number): void;
  recordAlertDelivered(sink: string, alerts?: number): void;
  recordAlertFailed(sink: string, alerts?: number): void;
  /** The Prometheus text. */
  render(): Promise<string>;
}

const PREFIX = 'listings_sync_';

/** The registries a family registers itself in: the server's own, alone. */
type Registers = Registry[];

export function createServeMetrics(options: {
  db: Kysely<Database>;
  api?: ApiClient;
  /** The configured sinks: the pending gauge has one series per sink. */
  sinks?: readonly string[];
}): ServeMetrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const runs = defineRunMetrics(registers);
  readWarehouseOnScrape(options.db, options.sinks ?? [], registers);
  readUpstreamStatsOnScrape(options.api, registers);
  const deliveries = defineAlertDeliveryMetrics(registers);
  const webhooks = defineWebhookMetrics(registers);

  return {
    registry,
    recordRun: (outcome, seconds, result) => recordRun(runs, outcome, seconds, result),
    recordSkippedTick: () => runs.skippedTicks.inc(),
    recordWebhook: (outcome) => webhooks.deliveries.inc({ outcome }),
    setWebhooksInFlight: (count) => webhooks.inFlight.set(count),
    recordAlertDelivered: (sink, alerts = 1) => deliveries.delivered.inc({ sink }, alerts),
    recordAlertFailed: (sink, alerts = 1) => deliveries.failures.inc({ sink }, alerts),
    render: () => registry.metrics(),
  };
}

/** The families a scheduled run of this process moves (recordRun, recordSkippedTick). */
function defineRunMetrics(registers: Registers) {
  return {
    runs: new Counter({
      name: `${PREFIX}runs_total`,
      help: 'Scheduled sync runs by outcome (succeeded, partial, failed, interrupted; locked: another replica held the lock; error: the run could not start).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    runDuration: new Histogram({
      name: `${PREFIX}run_duration_seconds`,
      help: 'Duration of scheduled sync runs, by outcome.',
      labelNames: ['outcome'] as const,
      // A nightly load of a few thousand businesses takes minutes; a sandbox run, seconds.
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
      registers,
    }),
    skippedTicks: new Counter({
      name: `${PREFIX}schedule_ticks_skipped_total`,
      help: 'Schedule ticks skipped because a run of this process was still going.',
      registers,
    }),
    rowsWritten: new Counter({
      name: `${PREFIX}rows_written_total`,
      help: 'Rows written by scheduled runs, by table and operation (inserted, updated, deleted).',
      labelNames: ['table', 'operation'] as const,
      registers,
    }),
    quarantined: new Counter({
      name: `${PREFIX}quarantined_records_total`,
      help: 'Records that failed their schema and went to quarantine, in scheduled runs.',
      registers,
    }),
  };
}

/** A run's outcome and duration, and what its result wrote and quarantined. */
function recordRun(
  metrics: ReturnType<typeof defineRunMetrics>,
  outcome: RunOutcome,
  seconds: number,
  result: SyncResult | undefined,
): void {
  metrics.runs.inc({ outcome });
  metrics.runDuration.observe({ outcome }, seconds);
  if (!result) return;
  for (const [table, counts] of Object.entries(result.stats.tables)) {
    for (const operation of ['inserted', 'updated', 'deleted'] as const) {
      if (counts[operation] > 0) metrics.rowsWritten.inc({ table, operation }, counts[operation]);
    }
  }
  if (result.stats.quarantined > 0) metrics.quarantined.inc(result.stats.quarantined);
}

/**
 * The families read from the warehouse on every scrape, so they are true whoever wrote it:
 * the last successful run (`sync_runs`), alerts raised per kind and alerts pending per
 * configured sink (`alerts`). A query that fails leaves the last value.
 */
function readWarehouseOnScrape(
  db: Kysely<Database>,
  sinks: readonly string[],
  registers: Registers,
): void {
  new Gauge({
    name: `${PREFIX}last_success_timestamp_seconds`,
    help: 'Unix time at which the last successful (succeeded or partial) run finished, whoever ran it (read from sync_runs on scrape); 0 before the first.',
    registers,
    async collect() {
      try {
        const at = await lastSuccessfulRunAt(db);
        this.set(at ? at.getTime() / 1000 : 0);
      } catch {
        // Keep the last value: /readyz reports the database, this gauge should not flap.
      }
    },
  });
  const seenRaised = new Map<string, number>();
  new Counter({
    name: `${PREFIX}alerts_raised_total`,
    help: 'Alerts raised, by kind, by any writer (read from the alerts table on scrape).',
    labelNames: ['kind'] as const,
    registers,
    async collect() {
      try {
        for (const [kind, total] of Object.entries(await countAlertsByKind(db))) {
          const delta = total - (seenRaised.get(kind) ?? 0);
          if (delta > 0) this.inc({ kind }, delta);
          seenRaised.set(kind, Math.max(total, seenRaised.get(kind) ?? 0));
        }
      } catch {
        // Unchanged while the database is unreachable.
      }
    },
  });
  new Gauge({
    name: `${PREFIX}alerts_pending`,
    help: 'Alerts a configured sink has not taken yet, by sink (read from the alerts table on scrape; no series without a sink; the last value is kept while the database is unreachable).',
    labelNames: ['sink'] as const,
    registers,
    async collect() {
      try {
        for (const [sink, n] of Object.entries(await countPendingBySink(db, sinks))) {
          this.set({ sink }, n);
        }
      } catch {
        // Keep the last value: /readyz reports the database, this gauge should not flap.
      }
    },
  });
}

/**
 * The upstream counters, read from the scheduler's API client on every scrape (deltas of
 * `apiStats`), so they move during a run. Without a client they stay empty.
 */
function readUpstreamStatsOnScrape(api: ApiClient | undefined, registers: Registers): void {
  const seenRequests = new Map<string, number>();
  let seenRetries = 0;
  new Counter({
    name: `${PREFIX}upstream_requests_total`,
    help: 'Upstream API calls by operation and outcome (ok, an error code, or aborted).',
    labelNames: ['operation', 'outcome'] as const,
    registers,
    collect() {
      if (!api) return;
      for (const [operation, outcomes] of Object.entries(apiStats(api).byOperation)) {
        for (const [outcome, total] of Object.entries(outcomes)) {
          const key = `${operation}\u0000${outcome}`;
          const delta = total - (seenRequests.get(key) ?? 0);
          if (delta > 0) this.inc({ operation, outcome }, delta);
          seenRequests.set(key, total);
        }
      }
    },
  });
  new Counter({
    name: `${PREFIX}upstream_retries_total`,
    help: 'Upstream attempts repeated after a retryable failure.',
    registers,
    collect() {
      if (!api) return;
      const { retries } = apiStats(api);
      if (retries > seenRetries) this.inc(retries - seenRetries);
      seenRetries = Math.max(seenRetries, retries);
    },
  });
}

/** The families the alert dispatcher moves (recordAlertDelivered, recordAlertFailed). */
function defineAlertDeliveryMetrics(registers: Registers) {
  return {
    delivered: new Counter({
      name: `${PREFIX}alerts_delivered_total`,
      help: 'Alerts taken by a sink, by sink (slack, webhook).',
      labelNames: ['sink'] as const,
      registers,
    }),
    failures: new Counter({
      name: `${PREFIX}alert_delivery_failures_total`,
      help: 'Failed attempts to deliver an alert to a sink, by sink; each is retried with backoff.',
      labelNames: ['sink'] as const,
      registers,
    }),
  };
}

/** The families the webhook intake moves (recordWebhook, setWebhooksInFlight). */
function defineWebhookMetrics(registers: Registers) {
  const deliveries = new Counter({
    name: `${PREFIX}webhook_deliveries_total`,
    help: `Webhook deliveries to POST /webhooks by outcome (${WEBHOOK_OUTCOMES.join(', ')}).`,
    labelNames: ['outcome'] as const,
    registers,
  });
  // Every outcome shows from the start (at 0), so a rate() query has a series to work on.
  for (const outcome of WEBHOOK_OUTCOMES) {
    deliveries.inc({ outcome }, 0);
  }
  const inFlight = new Gauge({
    name: `${PREFIX}webhooks_in_flight`,
    help: 'Webhook deliveries being handled now; at WEBHOOK_MAX_IN_FLIGHT a further one is answered 503.',
    registers,
  });
  return { deliveries, inFlight };
}
