/**
 * A sync run: credentials → businesses → streams → one transaction per business. This
 * file is the run's lifecycle: the lock, the `sync_runs` row, the credentials side by
 * side, the outcome. The parts: src/sync/credential.ts (list, scope, archive),
 * src/sync/business.ts (fetch and write one business), src/sync/response-requests.ts
 * (operation 10), src/sync/reference-data.ts, src/sync/stats.ts (counts and status),
 * src/sync/observation-clock.ts (which day a sync records).
 *
 * Failures stay where they happen: an authentication failure stops that credential only;
 * `This business doesn't exist` on a listed business marks it archived; a stream that
 * fails leaves that stream's stored rows untouched (no soft deletes from a failed read);
 * a bad record goes to quarantine and its siblings load. SIGTERM (the `signal`) stops new
 * work from starting, aborts the upstream requests in flight, gives the business
 * transactions in flight a bounded grace (`stopGraceMs`, cut short by `stopNow`) to
 * commit, and ends the run `interrupted`. A warehouse outage (src/warehouse/driver/outage.ts)
 * ends it `failed`.
 */
import type { Span } from '@opentelemetry/api';
import pLimit from 'p-limit';
import { answerSettings, apiStats } from '../api/index.ts';
import type { Config } from '../config/index.ts';
import { ListingsSyncError } from '../errors.ts';
import {
  type LineageRun,
  lineageCommand,
  NO_CALLS,
  startLineageRun,
  syncRunEnd,
} from '../lineage/run.ts';
import type { Logger } from '../log.ts';
import { type RawCapture, startRawCapture } from '../raw/capture.ts';
import { pruneRawZone } from '../raw/retention.ts';
import { currentTraceId, inSpan } from '../tracing.ts';
import { timeoutsOf } from '../warehouse/driver/connection.ts';
import { requireCurrentSchema } from '../warehouse/driver/open.ts';
import { isWarehouseGone, WarehouseGoneError } from '../warehouse/driver/outage.ts';
import { tryAcquireSyncLock } from '../warehouse/runs/sync-lock.ts';
import {
  interruptAbandonedRuns,
  recordSyncRunEnd,
  startSyncRun,
} from '../warehouse/runs/sync-runs.ts';
import { syncCredential } from './credential.ts';
import { InFlight, STILL_WORKING_EVERY_MS, startStillWorking, systemTicker } from './in-flight.ts';
import { type ObservationClock, observationClock } from './observation-clock.ts';
import {
  DEFAULT_OVERALL_BUSINESS_CONCURRENCY,
  DEFAULT_STOP_GRACE_MS,
  STREAMS,
  type Stream,
  type SyncOptions,
  type SyncProgress,
  syncOptionsFromConfig,
} from './options.ts';
import { referenceDataOnce, syncReferenceData } from './reference-data.ts';
import { keepAccountReads, type RunContext } from './run-context.ts';
import { formatShard } from './shard.ts';
import {
  type CredentialOutcome,
  decideStatus,
  emptyStats,
  errorText,
  type RunStats,
  type RunStatus,
  recordFailure,
  summariseFailures,
} from './stats.ts';

// src/replay/replay.ts still imports these from here.
export { STREAMS, type Stream } from './options.ts';

export interface SyncResult {
  runId: string;
  status: RunStatus;
  stats: RunStats;
  error?: string;
}

/** The sync lock's key: full runs take it exclusively, shards shared (src/warehouse/runs/sync-lock.ts). */
export const NIGHTLY_LOCK_KEY = 'listings-sync:sync';

export class SyncLockedError extends ListingsSyncError {
  readonly code = 'SYNC_LOCKED';
  constructor() {
    super(
      'Another sync is already running against this warehouse (its advisory lock is held: ' +
        'a full run excludes every other run, a shard excludes full runs and the same shard). ' +
        'Wait for it to finish, or stop it, and run again.',
    );
  }
}

/**
 * A run of the configured warehouse (`sync`, `serve`'s schedule): refused while its schema
 * is behind the code (`requireCurrentSchema`), then `runSync` with the configuration's
 * options (`syncOptionsFromConfig`) under the caller's.
 */
export async function runConfiguredSync(config: Config, options: SyncOptions): Promise<SyncResult> {
  await requireCurrentSchema(options.warehouse);
  return runSync({ ...syncOptionsFromConfig(config), ...options });
}

/**
 * Run one sync. Resolves with the run's outcome; rejects only when the run could not
 * start (lock held, warehouse unreachable) — everything after `sync_runs` has its row is
 * recorded there.
 */
export function runSync(options: SyncOptions): Promise<SyncResult> {
  // One trace per run (docs/running.md, "Traces"): credentials, businesses, upstream
  // requests and warehouse transactions are its spans.
  return inSpan(
    'sync.run',
    {
      'listings.trigger': options.trigger ?? 'cli',
      'listings.credentials': options.credentials.length,
      ...(options.shard ? { 'listings.shard': formatShard(options.shard) } : {}),
    },
    (span) => runSyncInSpan(options, span),
  );
}

async function runSyncInSpan(options: SyncOptions, span: Span): Promise<SyncResult> {
  const { warehouse, api } = options;
  const traceId = currentTraceId();
  // The run's log lines carry its trace id, to go from a line to its trace.
  const logger = traceId ? options.logger.child({ traceId }) : options.logger;
  const now = observationClock(api, options.now, logger);
  const streams = new Set<Stream>(options.streams ?? STREAMS);
  // A full run has the warehouse to itself; shards of one night share the nightly key and
  // each holds its own shard key, so they run side by side but never beside a full run.
  const lock = await tryAcquireSyncLock(
    warehouse,
    options.shard
      ? {
          shared: [NIGHTLY_LOCK_KEY],
          exclusive: [`${NIGHTLY_LOCK_KEY}:shard:${formatShard(options.shard)}`],
        }
      : { exclusive: [NIGHTLY_LOCK_KEY] },
  );
  if (!lock) throw new SyncLockedError();

  const started = performance.now();
  const apiBefore = apiStats(api);
  const stats = emptyStats();
  const held: RunHeld = { stopStillWorking: () => {} };
  // Aborted when the run is over: its stop listeners and grace timer go with it, so a
  // signal shared by many runs (serve) neither arms a finished run's grace nor keeps the
  // process waiting for it.
  const runOver = new AbortController();
  try {
    const { runId, log } = await startRun(options, streams, { logger, now, traceId, span }, held);
    const { progress, report } = progressReporter(options, apiBefore, started);
    // Aborted when the run stops: every upstream call of the run takes its signal.
    const requests = new AbortController();
    const ticker = options.ticker ?? systemTicker;
    const inFlight = new InFlight(ticker);
    held.stopStillWorking = startStillWorking(
      ticker,
      options.stillWorkingEveryMs ?? STILL_WORKING_EVERY_MS,
      inFlight,
      progress,
      log,
    );
    // Resolves once the stopped run has waited its grace (or a second stop cut it short).
    const graceOver = graceAfterStop(options, runOver.signal, requests, inFlight, log);
    const { context, reference, fatal } = createRunContext(
      { options, runId, stats, streams, now, log, progress, report, raw: held.raw, inFlight },
      requests.signal,
    );

    const credentialsWork = syncCredentials(context);
    const work = Promise.all(credentialsWork);
    const ended = await Promise.race([work.then(() => true), graceOver.then(() => false)]);
    // The run is over: a stop that comes now is not this run's (its listeners go).
    runOver.abort();
    held.stopStillWorking();
    if (!ended) {
      log.warn(
        { requestsInFlight: inFlight.count, businessesDone: progress.businessesDone },
        'stopped: work still in flight after the grace is not waited for (a process that exits now rolls its transactions back)',
      );
      // What is still in flight is not waited for; an error it ends with is not the run's.
      work.catch(() => {});
      // Every credential's, not the first to fail: Promise.all stops following the others.
      held.leftInFlight = Promise.allSettled(credentialsWork);
    }
    return await finishRun(context, {
      span,
      lineage: held.lineage,
      reference,
      fatal,
      ended,
      apiBefore,
      started,
    });
  } finally {
    await releaseRun(held, runOver, lock, logger);
  }
}

/** What a run holds until it is over, for its end (`releaseRun`) to let go of. */
interface RunHeld {
  raw?: RawCapture;
  lineage?: LineageRun;
  /** Work a stopped run left in flight after its grace: the lock is held until it settles. */
  leftInFlight?: Promise<unknown>;
  stopStillWorking: () => void;
}

/**
 * The run's start: earlier runs that never finished marked interrupted, its `sync_runs`
 * row, the raw capture (`held.raw`), the `sync started` line and lineage's START
 * (`held.lineage`). Returns the run's id and its log.
 */
async function startRun(
  options: SyncOptions,
  streams: ReadonlySet<Stream>,
  run: { logger: Logger; now: ObservationClock; traceId: string | undefined; span: Span },
  held: RunHeld,
): Promise<{ runId: string; log: Logger }> {
  const { warehouse, api } = options;
  const { logger, now, traceId, span } = run;
  const db = warehouse.db;
  const abandoned = await interruptAbandonedRuns(db, formatShard(options.shard));
  if (abandoned)
    logger.warn({ abandoned }, 'earlier runs ended without finishing; marked interrupted');
  const runId = await startSyncRun(db, {
    trigger: options.trigger ?? 'cli',
    streams: [...streams],
    accounts: options.credentials.map((c) => c.name),
    shard: formatShard(options.shard),
    settings: { ...answerSettings(api) },
    traceId: traceId ?? null,
  });
  span.setAttribute('listings.run_id', runId);
  const log = logger.child({ runId });
  // Each read is stamped when it is observed, on the credential's clock.
  if (options.keepRaw !== false) held.raw = startRawCapture(api, options.credentials, now);
  log.info(
    {
      credentials: options.credentials.length,
      streams: [...streams],
      shard: formatShard(options.shard),
    },
    'sync started',
  );
  // Lineage (docs/lineage.md): START goes now, not waited for; off, nothing is loaded.
  held.lineage = startLineageRun(
    {
      runId,
      command: lineageCommand(options.trigger),
      shard: formatShard(options.shard),
      credentials: options.credentials,
      streams: [...streams],
    },
    { warehouse, logger: log },
  );
  return { runId, log };
}

/** The run's progress, and `report` to tell `onProgress` of it (requests and seconds so far). */
function progressReporter(
  options: SyncOptions,
  apiBefore: ReturnType<typeof apiStats>,
  started: number,
): { progress: SyncProgress; report: () => void } {
  const { api } = options;
  const progress: SyncProgress = {
    accountsTotal: options.credentials.length,
    accountsDone: 0,
    businessesTotal: 0,
    businessesDone: 0,
    requests: 0,
    elapsedSeconds: 0,
  };
  const report = () => {
    if (!options.onProgress) return;
    progress.requests = apiStats(api).requests - apiBefore.requests;
    progress.elapsedSeconds = (performance.now() - started) / 1000;
    options.onProgress({ ...progress });
  };
  return { progress, report };
}

/**
 * The run's stop: once `options.signal` aborts (before the run is over), the upstream
 * requests in flight are aborted. Resolves once the stopped run has waited its grace, or a
 * second stop (`stopNow`) cut it short.
 */
function graceAfterStop(
  options: SyncOptions,
  runOver: AbortSignal,
  requests: AbortController,
  inFlight: InFlight,
  log: Logger,
): Promise<void> {
  const graceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  const stopped = whenAborted(options.signal, runOver).then(() => {
    log.warn(
      { graceSeconds: graceMs / 1000, requestsInFlight: inFlight.count },
      'stopping: no new work starts, upstream requests in flight are aborted, business ' +
        'transactions in flight may commit',
    );
    requests.abort(new Error('the sync run was stopped'));
  });
  return stopped.then(() =>
    Promise.race([delay(graceMs, runOver), whenAborted(options.stopNow, runOver)]),
  );
}

/**
 * What the parts of the run share (run-context.ts), with its stop switch (`fail`,
 * `isStopped`), the reference data written once, and the run-wide business limit.
 * `fatal` is the error that ends the run `failed`, if one did.
 */
function createRunContext(
  base: Omit<
    RunContext,
    'fail' | 'isStopped' | 'writeReferenceOnce' | 'businessSlot' | 'call' | 'keywordsGone'
  >,
  signal: AbortSignal,
) {
  const { options, log } = base;
  let fatal: Error | undefined;
  const reference = referenceDataOnce(
    base.streams.has('reference'),
    (credential) => syncReferenceData(context, credential),
    log,
    options.warehouse.db,
  );
  const context: RunContext = {
    ...base,
    fail(error) {
      if (fatal) return;
      fatal = error;
      log.error({ err: error }, 'the run stops: the warehouse failed');
    },
    isStopped: () => fatal !== undefined || options.signal?.aborted === true,
    writeReferenceOnce: (credential) => reference.write(credential),
    businessSlot: pLimit(
      options.overallBusinessConcurrency ?? DEFAULT_OVERALL_BUSINESS_CONCURRENCY,
    ),
    call: { signal },
    keywordsGone: new Set(),
  };
  return { context, reference, fatal: (): Error | undefined => fatal };
}

/**
 * Credentials run side by side: each has its own request limits in the client. Each one's
 * outcome is counted as it ends (a warehouse outage fails the run).
 */
function syncCredentials(context: RunContext): Promise<void>[] {
  const { options, stats, progress, report } = context;
  const db = options.warehouse.db;
  return options.credentials.map(async (credential) => {
    const outcome = await syncCredential(context, credential).catch((error: unknown) => {
      if (error instanceof WarehouseGoneError) context.fail(error);
      else if (isWarehouseGone(error)) context.fail(new WarehouseGoneError(error, timeoutsOf(db)));
      const outcome: CredentialOutcome = {
        name: credential.name,
        status: 'failed',
        businesses: 0,
        error: errorText(error),
      };
      return outcome;
    });
    await keepAccountReads(context, credential);
    stats.credentials.push(outcome);
    progress.accountsDone += 1;
    report();
  });
}

/**
 * The run's outcome: the reference data's failure counted, the requests and seconds, the
 * raw zone pruned (a full run whose work ended), the `sync_runs` row and lineage's end
 * recorded, and the `sync finished` line.
 */
async function finishRun(
  context: RunContext,
  run: {
    span: Span;
    lineage: LineageRun | undefined;
    reference: ReturnType<typeof referenceDataOnce>;
    /** The error that ends the run `failed`, if one did, as it is when asked. */
    fatal: () => Error | undefined;
    /** False when work was still in flight after the grace. */
    ended: boolean;
    apiBefore: ReturnType<typeof apiStats>;
    started: number;
  },
): Promise<SyncResult> {
  const { options, stats, log, runId } = context;
  const { api } = options;
  const db = options.warehouse.db;
  const { span, lineage, reference, fatal, ended, apiBefore, started } = run;
  stats.credentials.sort((a, b) => a.name.localeCompare(b.name));
  const referenceFailure = reference.failure();
  if (!reference.done() && stats.credentials.some((c) => c.status !== 'failed')) {
    stats.streamFailures += 1;
    if (referenceFailure) {
      recordFailure(stats, { ...referenceFailure, businessId: null, stream: 'reference' });
    }
  }

  const apiAfter = apiStats(api);
  stats.requests = apiAfter.requests - apiBefore.requests;
  stats.retries = apiAfter.retries - apiBefore.retries;
  stats.seconds = Math.round((performance.now() - started) / 10) / 100;

  // A shard leaves pruning to full runs: another shard may be writing reads of a body.
  // So does a run whose work is still in flight after its grace: a business transaction
  // that has not committed may yet write reads of a body that pruning would delete.
  if (options.rawRetentionDays !== undefined && !fatal() && !options.shard) {
    if (!ended) {
      log.warn(
        { days: options.rawRetentionDays },
        'raw zone: not pruned, work still in flight; the next full run prunes it',
      );
    } else {
      await pruneRawZone(db, options.rawRetentionDays).then(
        (pruned) => log.info({ ...pruned, days: options.rawRetentionDays }, 'raw zone pruned'),
        (error: unknown) =>
          log.warn({ err: error }, 'raw zone: pruning failed; the next run tries again'),
      );
    }
  }
  const failed = fatal();
  const status = decideStatus(stats, failed, options.signal);
  const error = failed ? failed.message : summariseFailures(stats);
  await recordSyncRunEnd(db, runId, { status, stats, error: error ?? null }, log);
  await lineage?.end(
    syncRunEnd(status, stats.tables, { before: apiBefore, after: apiAfter }, error),
  );
  span.setAttribute('listings.run_status', status);
  log.info(
    {
      status,
      seconds: stats.seconds,
      requests: stats.requests,
      retries: stats.retries,
      businesses: stats.businesses,
      quarantined: stats.quarantined,
      alerts: stats.alerts,
    },
    'sync finished',
  );
  return { runId, status, stats, ...(error ? { error } : {}) };
}

/**
 * The run's end, however it ended: lineage's FAIL if it never recorded its outcome, the
 * stop listeners, the raw capture and the still-working line stopped, and the sync lock
 * released (once the work a stopped run left in flight settles).
 */
async function releaseRun(
  held: RunHeld,
  runOver: AbortController,
  lock: { release(): Promise<void> },
  logger: Logger,
): Promise<void> {
  const { lineage, raw, leftInFlight } = held;
  // A run that threw after its START (a warehouse outage as it ended) still ends FAIL.
  await lineage?.end(
    syncRunEnd('failed', {}, NO_CALLS, 'the run ended before its outcome was recorded'),
  );
  runOver.abort();
  raw?.stop();
  held.stopStillWorking();
  // Until the work left in flight settles (or the process exits, which ends the lock's
  // session), no other run may start: its transactions may still commit, older
  // observations over a later run's rows, or a read of a body that run's pruning deleted.
  if (leftInFlight) {
    void leftInFlight
      .then(() => lock.release())
      .then(() =>
        logger.info('sync lock released: the work a stopped run left in flight has ended'),
      )
      .catch(() => {});
  } else {
    await lock.release();
  }
}

/**
 * Resolves when `signal` aborts (at once if it has); never without one, nor once `until`
 * aborts first (its listener is then removed).
 */
function whenAborted(signal: AbortSignal | undefined, until: AbortSignal): Promise<void> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    until.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), {
      once: true,
    });
  });
}

/** Resolves after `ms`, or at once when `cancel` aborts (the timer is cleared). */
function delay(ms: number, cancel: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (cancel.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(resolve, ms);
    cancel.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
