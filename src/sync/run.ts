/**
 * A sync run: credentials → businesses → streams → one transaction per business.
 *
 * Failures stay where they happen: an authentication failure stops that credential only;
 * `This business doesn't exist` on a listed business marks it archived; a stream that
 * fails leaves that stream's stored rows untouched (no soft deletes from a failed read);
 * a bad record goes to quarantine and its siblings load. SIGTERM (the `signal`) stops new
 * businesses from starting, lets the ones in flight commit, and ends the run
 * `interrupted`.
 *
 * With the reviews stream, each credential's open review response requests (submitted
 * through `listings-sync api reviews respond`) are polled with operation 10 and every
 * status change recorded; a request that ends `Failed` raises a `review_response_failed`
 * alert.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { AlertRules } from '../alerts/rules.ts';
import { ApiError } from '../api/errors.ts';
import {
  type ApiClient,
  apiStats,
  getBusinessFull,
  getRankings,
  getResponseStatus,
  listBusinesses,
  listCountries,
  listKeywords,
  listListings,
  listReviews,
  listStates,
  listSubCategories,
  observationTime,
} from '../api/index.ts';
import { readableIdOf } from '../api/schemas.ts';
import type {
  BusinessSummary,
  Country,
  Credential,
  ListResult,
  RejectedRecord,
  Review,
  State,
} from '../api/types.ts';
import { type Logger, redactText } from '../log.ts';
import { pruneRawZone, type RawCapture, startRawCapture, writeRawReads } from '../raw/capture.ts';
import { markAccountSynced, upsertAccount } from '../warehouse/accounts.ts';
import {
  type BusinessSnapshot,
  mergeWriteStats,
  type WriteStats,
  writeBusinessSnapshotIsolating,
} from '../warehouse/business-snapshot.ts';
import {
  archiveMissingBusinesses,
  markBusinessMissing,
  storedBusinessSummaries,
} from '../warehouse/businesses.ts';
import {
  type DatabaseTimeouts,
  describeDatabaseError,
  isDatabaseTimeout,
  timeoutsOf,
  type Warehouse,
} from '../warehouse/connection.ts';
import { quarantineRecords } from '../warehouse/quarantine.ts';
import { writeReferenceData } from '../warehouse/reference-data.ts';
import {
  closeInvalidResponseRequest,
  openResponseRequests,
  recordResponseStatus,
  recordResponseStatusError,
} from '../warehouse/review-response-requests.ts';
import { tryAcquireSyncLock } from '../warehouse/sync-lock.ts';
import { interruptAbandonedRuns, recordSyncRunEnd, startSyncRun } from '../warehouse/sync-runs.ts';
import { formatShard, inShard, type Shard } from './shard.ts';

/** What a run can fetch. `businesses` is the full profile read; the list is always read. */
export const STREAMS = [
  'businesses',
  'listings',
  'reviews',
  'rankings',
  'keywords',
  'reference',
] as const;
export type Stream = (typeof STREAMS)[number];

export type RunStatus = 'succeeded' | 'partial' | 'failed' | 'interrupted';

/** Defaults of `businessConcurrency` and `overallBusinessConcurrency`. */
export const DEFAULT_BUSINESS_CONCURRENCY = 8;
export const DEFAULT_OVERALL_BUSINESS_CONCURRENCY = 16;

export interface SyncProgress {
  accountsTotal: number;
  accountsDone: number;
  businessesTotal: number;
  businessesDone: number;
  requests: number;
  elapsedSeconds: number;
}

export interface SyncOptions {
  warehouse: Warehouse;
  api: ApiClient;
  credentials: readonly Credential[];
  logger: Logger;
  streams?: readonly Stream[];
  shard?: Shard;
  /**
   * Only these businesses (of the listed ones), e.g. the one a command just wrote. The
   * others are neither fetched nor archived, and the account's `last_synced_at` stays.
   */
  businessIds?: readonly number[];
  trigger?: string;
  /** Stops new businesses from starting; in-flight ones finish and commit. */
  signal?: AbortSignal;
  /**
   * The run's clock: observation times and rank days. By default each credential's
   * upstream clock (its responses' `Date`), else the local clock; see `observationClock`.
   */
  now?: (credential?: Credential) => Date;
  /** Keep every upstream answer in the raw zone (docs/warehouse.md). Default true. */
  keepRaw?: boolean;
  /** Prune raw zone reads older than this many days when the run ends (RAW_RETENTION_DAYS). */
  rawRetentionDays?: number;
  /** Businesses fetched and written at once, per credential (default 8). */
  businessConcurrency?: number;
  /**
   * Businesses fetched and written at once across all credentials (default 16). Each
   * holds a database connection while it writes, so the pool is sized from it
   * (`warehousePoolSize` in src/warehouse/open.ts).
   */
  overallBusinessConcurrency?: number;
  /** The alert rules the writers raise under (`config.alertRules`); built-in defaults otherwise. */
  alertRules?: AlertRules;
  onProgress?: (progress: SyncProgress) => void;
}

export interface CredentialOutcome {
  name: string;
  status: 'succeeded' | 'partial' | 'failed' | 'skipped';
  businesses: number;
  error?: string;
}

export interface RunStats {
  credentials: CredentialOutcome[];
  businesses: { listed: number; inShard: number; synced: number; failed: number; archived: number };
  streamFailures: number;
  /**
   * What failed, for the summary and `listings-sync runs`: the first `MAX_FAILURES_LISTED`
   * (a run against a broken upstream must not grow `sync_runs.stats` without bound).
   */
  failures: SyncFailure[];
  requests: number;
  retries: number;
  tables: WriteStats;
  quarantined: number;
  alerts: number;
  /** Review response requests polled (operation 10), and what they showed. */
  responseRequests: {
    checked: number;
    changed: number;
    completed: number;
    failed: number;
    /** Closed because the upstream answered `Invalid Request ID` (never asked again). */
    invalid: number;
    errors: number;
  };
  seconds: number;
}

export interface SyncFailure {
  credential: string;
  /** Null for a credential-wide failure (reference data, the business list). */
  businessId: number | null;
  /** A stream name, `business` (the whole business) or `response-status`. */
  stream: string;
  reason: string;
}

/** Failures listed one by one in a run's stats; the count beyond is `streamFailures`. */
export const MAX_FAILURES_LISTED = 50;

function recordFailure(stats: RunStats, failure: SyncFailure): void {
  if (stats.failures.length < MAX_FAILURES_LISTED) {
    stats.failures.push({ ...failure, reason: redactText(failure.reason).slice(0, 300) });
  }
}

export interface SyncResult {
  runId: string;
  status: RunStatus;
  stats: RunStats;
  error?: string;
}

/** The sync lock's key: full runs take it exclusively, shards shared (src/warehouse/sync-lock.ts). */
export const NIGHTLY_LOCK_KEY = 'listings-sync:sync';

export class SyncLockedError extends Error {
  readonly code = 'SYNC_LOCKED';
  constructor() {
    super(
      'Another sync is already running against this warehouse (its advisory lock is held: ' +
        'a full run excludes every other run, a shard excludes full runs and the same shard). ' +
        'Wait for it to finish, or stop it, and run again.',
    );
    this.name = 'SyncLockedError';
  }
}

/** PostgreSQL and socket errors meaning the warehouse itself is gone: the run cannot go on. */
const WAREHOUSE_GONE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

function isWarehouseGone(error: unknown): boolean {
  // No answer within the configured time: the database is stopped or unreachable.
  if (isDatabaseTimeout(error)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && WAREHOUSE_GONE.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection is closed|Client has encountered a connection error|PGlite is closed/i.test(
    message,
  );
}

class WarehouseGoneError extends Error {
  constructor(cause: unknown, timeouts: DatabaseTimeouts | undefined) {
    super(
      `The warehouse stopped answering (${describeDatabaseError(cause, timeouts)}). ` +
        'Businesses committed before this point are kept; run the sync again once the database is back.',
      { cause },
    );
    this.name = 'WarehouseGoneError';
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Fetched<T> = { ok: true; value: T } | { ok: false; error: unknown };

async function settle<T>(promise: Promise<T>): Promise<Fetched<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

function emptyStats(): RunStats {
  return {
    credentials: [],
    businesses: { listed: 0, inShard: 0, synced: 0, failed: 0, archived: 0 },
    streamFailures: 0,
    failures: [],
    requests: 0,
    retries: 0,
    tables: {},
    quarantined: 0,
    alerts: 0,
    responseRequests: { checked: 0, changed: 0, completed: 0, failed: 0, invalid: 0, errors: 0 },
    seconds: 0,
  };
}

/**
 * Run one sync. Resolves with the run's outcome; rejects only when the run could not
 * start (lock held, warehouse unreachable) — everything after `sync_runs` has its row is
 * recorded there.
 */
export async function runSync(options: SyncOptions): Promise<SyncResult> {
  const { warehouse, api, logger } = options;
  const db = warehouse.db;
  const now = observationClock(options, logger);
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
  let runId = '';
  let raw: RawCapture | undefined;
  try {
    const abandoned = await interruptAbandonedRuns(db, formatShard(options.shard));
    if (abandoned)
      logger.warn({ abandoned }, 'earlier runs ended without finishing; marked interrupted');
    runId = await startSyncRun(db, {
      trigger: options.trigger ?? 'cli',
      streams: [...streams],
      accounts: options.credentials.map((c) => c.name),
      shard: formatShard(options.shard),
    });
    const log = logger.child({ runId });
    if (options.keepRaw !== false) raw = startRawCapture(api, options.credentials);
    log.info(
      {
        credentials: options.credentials.length,
        streams: [...streams],
        shard: formatShard(options.shard),
      },
      'sync started',
    );

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

    let fatal: Error | undefined;
    // Reference data is written once per run, by whichever credential gets there first.
    // A credential arriving while that attempt is in flight waits for it; if it failed,
    // the next credential tries again. Only a run where no attempt succeeded is partial.
    let referenceDone = !streams.has('reference');
    let referenceAttempt: Promise<boolean> | undefined;
    let referenceFailure: { credential: string; reason: string } | undefined;
    const attemptReference = (credential: Credential): Promise<boolean> =>
      syncReferenceData(context, credential).then(
        () => {
          referenceDone = true;
          return true;
        },
        (error: unknown) => {
          if (isWarehouseGone(error)) throw new WarehouseGoneError(error, timeoutsOf(db));
          referenceFailure = { credential: credential.name, reason: errorText(error) };
          log.warn(
            { credential: credential.name, err: error },
            'reference data failed; another credential will try',
          );
          return false;
        },
      );
    const context: RunContext = {
      options,
      runId,
      stats,
      streams,
      now,
      raw,
      log,
      progress,
      report,
      fail(error) {
        if (fatal) return;
        fatal = error;
        log.error({ err: error }, 'the run stops: the warehouse failed');
      },
      isStopped: () => fatal !== undefined || options.signal?.aborted === true,
      async writeReferenceOnce(credential) {
        while (!referenceDone) {
          if (referenceAttempt) {
            // Someone else's attempt: wait for it; if it failed, loop and try ourselves.
            await referenceAttempt;
            continue;
          }
          referenceAttempt = attemptReference(credential).finally(() => {
            referenceAttempt = undefined;
          });
          await referenceAttempt;
          return;
        }
      },
      businessSlot: pLimit(
        options.overallBusinessConcurrency ?? DEFAULT_OVERALL_BUSINESS_CONCURRENCY,
      ),
    };

    // Credentials run side by side: each has its own request limits in the client.
    await Promise.all(
      options.credentials.map(async (credential) => {
        const outcome = await syncCredential(context, credential).catch((error: unknown) => {
          if (error instanceof WarehouseGoneError) context.fail(error);
          else if (isWarehouseGone(error))
            context.fail(new WarehouseGoneError(error, timeoutsOf(db)));
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
      }),
    );
    stats.credentials.sort((a, b) => a.name.localeCompare(b.name));
    if (!referenceDone && stats.credentials.some((c) => c.status !== 'failed')) {
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
    if (options.rawRetentionDays !== undefined && !fatal && !options.shard) {
      await pruneRawZone(db, options.rawRetentionDays, now()).catch((error: unknown) =>
        log.warn({ err: error }, 'raw zone: pruning failed; the next run tries again'),
      );
    }
    const status = decideStatus(stats, fatal, options.signal);
    const error = fatal ? fatal.message : summariseFailures(stats);
    await recordSyncRunEnd(db, runId, { status, stats, error: error ?? null }, log);
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
  } finally {
    raw?.stop();
    await lock.release();
  }
}

interface RunContext {
  options: SyncOptions;
  runId: string;
  stats: RunStats;
  streams: Set<Stream>;
  /** Observation time for a credential's records (rank day = its UTC date). */
  now: (credential?: Credential) => Date;
  log: Logger;
  progress: SyncProgress;
  report: () => void;
  fail(error: Error): void;
  isStopped(): boolean;
  writeReferenceOnce(credential: Credential): Promise<void>;
  /** The run-wide limit on businesses in flight, across credentials. */
  businessSlot: LimitFunction;
  /** Holds the run's upstream answers until they are written (src/raw/capture.ts). */
  raw: RawCapture | undefined;
}

/** The credential's reads not written with a business (list, reference, polls), once it is done. */
async function keepAccountReads(context: RunContext, credential: Credential): Promise<void> {
  const reads = context.raw?.takeAccount(credential.name) ?? [];
  try {
    await writeRawReads(
      context.options.warehouse.db,
      { runId: context.runId, observedAt: context.now(credential) },
      reads,
    );
  } catch (error) {
    context.log.warn({ credential: credential.name, err: error }, 'raw zone: reads not kept');
  }
}

/**
 * Which day a sync records (docs/operations.md, "Which day a sync records"): the
 * upstream's date, from the `Date` header of the credential's latest response, so a
 * sandbox whose clock has been advanced records its own days. Without a plausible `Date`
 * (absent, before 2000, or more than a day ahead of ours) the local clock, with one
 * warning per credential.
 */
function observationClock(options: SyncOptions, logger: Logger): (credential?: Credential) => Date {
  const fixed = options.now;
  if (fixed) return (credential) => fixed(credential);
  const warned = new Set<string>();
  return (credential) => {
    if (!credential) return new Date();
    const time = observationTime(options.api, credential);
    if (!time.upstream && !warned.has(credential.name)) {
      warned.add(credential.name);
      logger.warn(
        { credential: credential.name, upstreamDate: time.seen?.toISOString() ?? null },
        'the upstream sent no plausible Date header: rank days follow the local clock',
      );
    }
    return time.at;
  };
}

function decideStatus(stats: RunStats, fatal: Error | undefined, signal?: AbortSignal): RunStatus {
  if (fatal) return 'failed';
  if (signal?.aborted) return 'interrupted';
  const failedCredentials = stats.credentials.filter((c) => c.status === 'failed').length;
  if (stats.credentials.length > 0 && failedCredentials === stats.credentials.length)
    return 'failed';
  const partial =
    failedCredentials > 0 ||
    stats.credentials.some((c) => c.status === 'partial') ||
    stats.businesses.failed > 0 ||
    stats.streamFailures > 0 ||
    stats.quarantined > 0;
  return partial ? 'partial' : 'succeeded';
}

function summariseFailures(stats: RunStats): string | undefined {
  const failed = stats.credentials.filter((c) => c.status === 'failed');
  if (failed.length === 0) return undefined;
  return failed.map((c) => `credential "${c.name}": ${c.error ?? 'failed'}`).join('; ');
}

async function quarantineRejected(
  context: RunContext,
  credential: Credential,
  stream: string,
  rejected: RejectedRecord[],
  businessId: number | null = null,
): Promise<void> {
  if (rejected.length === 0) return;
  const count = await quarantineRecords(
    context.options.warehouse.db,
    context.runId,
    rejected.map((record) => ({
      accountName: credential.name,
      businessId,
      stream,
      location: record.location,
      reason: record.reason,
      payload: record.payload,
    })),
  );
  context.stats.quarantined += count;
}

async function syncReferenceData(context: RunContext, credential: Credential): Promise<void> {
  const { api } = context.options;
  const [countries, subCategories] = await Promise.all([
    listCountries(api, credential),
    listSubCategories(api, credential),
  ]);
  const stateLists = await Promise.all(
    countries.records.map(async (country: Country) => ({
      country,
      result: await listStates(api, credential, country.id),
    })),
  );
  const states: State[] = stateLists.flatMap(({ result }) => result.records);
  await quarantineRejected(context, credential, 'countries', countries.rejected);
  await quarantineRejected(context, credential, 'sub_categories', subCategories.rejected);
  for (const { country, result } of stateLists) {
    await quarantineRejected(context, credential, `states:${country.id}`, result.rejected);
  }
  const written = await writeReferenceData(context.options.warehouse.db, {
    countries: countries.records,
    states,
    subCategories: subCategories.records,
  });
  mergeWriteStats(context.stats.tables, written);
}

async function syncCredential(
  context: RunContext,
  credential: Credential,
): Promise<CredentialOutcome> {
  const { options, stats, log } = context;
  const db = options.warehouse.db;
  const accountLog = log.child({ credential: credential.name });
  await upsertAccount(db, {
    name: credential.name,
    userEmail: credential.userEmail,
    baseUrl: credential.baseUrl,
  });

  let listed: ListResult<BusinessSummary>;
  try {
    listed = await listBusinesses(options.api, credential);
  } catch (error) {
    accountLog.error({ err: error }, 'credential failed: could not list its businesses');
    return { name: credential.name, status: 'failed', businesses: 0, error: errorText(error) };
  }
  await context.writeReferenceOnce(credential);

  // An entry refused for a value the warehouse cannot store (a NUL in a name) whose id
  // reads is still a listed business: it is synced under the summary last stored, and
  // not archived, so its listings and their alerts go on. One never stored waits.
  const readable = new Set(listed.records.map((business) => business.id));
  const unreadable = [
    ...new Set(
      listed.rejected
        .map((record) => readableIdOf(record.payload))
        .filter((id): id is number => id !== null && !readable.has(id)),
    ),
  ];
  const summaries = [
    ...listed.records,
    ...(await storedBusinessSummaries(db, credential.name, unreadable)),
  ];
  const only = options.businessIds ? new Set(options.businessIds) : undefined;
  const inScope = (id: number) => inShard(options.shard, id) && (!only || only.has(id));
  const mine = summaries.filter((business) => inScope(business.id));
  // A refused entry is quarantined, and makes the run partial, only when it may be one of
  // this run's businesses: a re-sync of one business is not partial for another's entry.
  const refusedInScope = listed.rejected.filter((record) => {
    const id = readableIdOf(record.payload);
    return id === null ? !only : inScope(id);
  });
  await quarantineRejected(context, credential, 'businesses', refusedInScope);
  stats.businesses.listed += summaries.length;
  stats.businesses.inShard += mine.length;
  context.progress.businessesTotal += mine.length;
  context.report();
  accountLog.info({ listed: listed.records.length, inShard: mine.length }, 'businesses listed');

  let authFailure: ApiError | undefined;
  let failedBusinesses = 0;
  const limit = pLimit(options.businessConcurrency ?? DEFAULT_BUSINESS_CONCURRENCY);
  await Promise.all(
    mine.map((business) =>
      limit(() =>
        context.businessSlot(async () => {
          if (context.isStopped() || authFailure) return;
          try {
            const outcome = await syncBusiness(context, credential, business);
            if (outcome === 'failed') failedBusinesses += 1;
          } catch (error) {
            if (error instanceof ApiError && error.code === 'AUTH_FAILURE') {
              authFailure ??= error;
              return;
            }
            if (isWarehouseGone(error)) {
              context.fail(new WarehouseGoneError(error, timeoutsOf(db)));
              return;
            }
            failedBusinesses += 1;
            recordFailure(stats, {
              credential: credential.name,
              businessId: business.id,
              stream: 'business',
              reason: describeDatabaseError(error, timeoutsOf(db)),
            });
            accountLog.error(
              {
                businessId: business.id,
                err: error,
                reason: describeDatabaseError(error, timeoutsOf(db)),
              },
              'business failed',
            );
          } finally {
            context.progress.businessesDone += 1;
            context.report();
          }
        }),
      ),
    ),
  );
  stats.businesses.failed += failedBusinesses;

  if (authFailure) {
    accountLog.error({ err: authFailure }, 'credential failed: authentication failed mid-run');
    return {
      name: credential.name,
      status: 'failed',
      businesses: mine.length,
      error: authFailure.message,
    };
  }
  if (!context.isStopped() && context.streams.has('reviews')) {
    await pollResponseRequests(context, credential, options.businessIds);
  }
  const complete = !context.isStopped() && failedBusinesses === 0;
  if (!context.isStopped() && !options.businessIds) {
    // Only a complete list read may archive what it no longer shows; a shard archives
    // only its own businesses.
    const archived = await archiveMissingBusinesses(
      db,
      credential.name,
      [...readable, ...unreadable],
      context.now(credential),
      (id) => inShard(options.shard, id),
    );
    stats.businesses.archived += archived;
    if (complete) await markAccountSynced(db, credential.name, context.now(credential));
  }
  return {
    name: credential.name,
    status: complete && refusedInScope.length === 0 ? 'succeeded' : 'partial',
    businesses: mine.length,
  };
}

/**
 * Fetch every stream of one business concurrently and write them in one transaction.
 * Returns `failed` when any stream failed (what did load is still written).
 */
async function syncBusiness(
  context: RunContext,
  credential: Credential,
  business: BusinessSummary,
): Promise<'ok' | 'failed' | 'missing'> {
  const { options, streams, stats, log } = context;
  const { api } = options;
  const id = business.id;
  const skip = Promise.resolve(null);
  const [full, listings, reviews, socials, rankings, keywords] = await Promise.all([
    settle(streams.has('businesses') ? getBusinessFull(api, credential, id) : skip),
    settle(streams.has('listings') ? listListings(api, credential, id) : skip),
    settle(streams.has('reviews') ? listReviews(api, credential, id, 'review') : skip),
    settle(streams.has('reviews') ? listReviews(api, credential, id, 'social') : skip),
    settle(streams.has('rankings') ? getRankings(api, credential, id) : skip),
    settle(streams.has('keywords') ? listKeywords(api, credential, id) : skip),
  ]);
  const all = [full, listings, reviews, socials, rankings, keywords];
  for (const result of all) {
    if (!result.ok && result.error instanceof ApiError && result.error.code === 'AUTH_FAILURE') {
      throw result.error;
    }
  }
  const observedAt = context.now(credential);
  const kept = context.raw?.takeBusiness(credential.name, id) ?? [];
  const keepReads = (trx: Parameters<typeof writeRawReads>[0]) =>
    writeRawReads(trx, { runId: context.runId, observedAt }, kept);
  if (
    all.some(
      (r) =>
        !r.ok &&
        r.error instanceof ApiError &&
        (r.error.code === 'BUSINESS_NOT_FOUND' || r.error.code === 'INVALID_LOCATION_ID'),
    )
  ) {
    // Listed, then gone: archived between the list and the read.
    if (await markBusinessMissing(options.warehouse.db, credential.name, id, observedAt)) {
      stats.businesses.archived += 1;
    }
    await keepReads(options.warehouse.db);
    log.info(
      { credential: credential.name, businessId: id },
      'business reads as missing: archived',
    );
    return 'missing';
  }

  let failedStreams = 0;
  const value = <T>(result: Fetched<T>, stream: string): T | null => {
    if (result.ok) return result.value;
    failedStreams += 1;
    recordFailure(stats, {
      credential: credential.name,
      businessId: id,
      stream,
      reason: errorText(result.error),
    });
    log.warn(
      { credential: credential.name, businessId: id, stream, err: result.error },
      'stream failed; its stored rows are left as they were',
    );
    return null;
  };
  const rejected: BusinessSnapshot['rejected'] = [];
  const records = <T>(result: ListResult<T> | null, stream: string): T[] | null => {
    if (!result) return null;
    for (const record of result.rejected) rejected.push({ stream, ...record });
    return result.records;
  };

  const fullValue = value(full, 'businesses');
  const reviewList = records(value(reviews, 'reviews'), 'reviews');
  const socialList = records(value(socials, 'reviews'), 'social');
  const snapshot: BusinessSnapshot = {
    accountName: credential.name,
    businessId: id,
    summary: business,
    full: fullValue,
    listings: records(value(listings, 'listings'), 'listings'),
    reviews: reviewList && socialList ? mergeReviews(reviewList, socialList) : null,
    rankings: records(value(rankings, 'rankings'), 'rankings'),
    keywords: records(value(keywords, 'keywords'), 'keywords'),
    rejected,
  };
  // A value the database refuses costs its record (quarantined), never the business.
  const written = await writeBusinessSnapshotIsolating(options.warehouse.db, snapshot, {
    runId: context.runId,
    observedAt,
    ...(options.alertRules ? { alertRules: options.alertRules } : {}),
    inTransaction: keepReads,
  });
  mergeWriteStats(stats.tables, written.stats);
  stats.alerts += written.alerts;
  stats.quarantined += written.quarantined;
  stats.streamFailures += failedStreams;
  if (failedStreams === 0) stats.businesses.synced += 1;
  return failedStreams === 0 ? 'ok' : 'failed';
}

/**
 * Reads the status of each open review response request of the credential (operation
 * 10) and records it: a change appends an event row, `Completed`/`Failed` closes the
 * request, `Failed` raises an alert. `Invalid Request ID` closes it as `Invalid`. Any other
 * failed read leaves the request open (polled again next run), keeps the reason in
 * `last_error`, and makes the run partial.
 */
async function pollResponseRequests(
  context: RunContext,
  credential: Credential,
  businessIds: readonly number[] | undefined,
): Promise<void> {
  const { options, stats, log } = context;
  const db = options.warehouse.db;
  const open = await openResponseRequests(db, {
    accountName: credential.name,
    ...(businessIds ? { businessIds } : {}),
  });
  if (open.length === 0) return;
  const limit = pLimit(options.businessConcurrency ?? DEFAULT_BUSINESS_CONCURRENCY);
  await Promise.all(
    open.map((request) =>
      limit(async () => {
        if (context.isStopped()) return;
        const observedAt = context.now(credential);
        let status: string;
        try {
          ({ status } = await getResponseStatus(
            options.api,
            credential,
            request.business_id,
            request.review_id,
            request.request_id,
          ));
        } catch (error) {
          if (error instanceof ApiError && error.code === 'INVALID_REQUEST_ID') {
            // Permanent: the upstream has no such request. Closed, so no later run polls it
            // or ends partial because of it.
            await closeInvalidResponseRequest(db, {
              requestId: request.request_id,
              status: 'Invalid',
              observedAt,
              runId: context.runId,
              error: errorText(error),
            });
            stats.responseRequests.invalid += 1;
            log.warn(
              { credential: credential.name, requestId: request.request_id, err: error },
              'review response request: the upstream does not know it; closed as Invalid',
            );
            return;
          }
          stats.responseRequests.errors += 1;
          stats.streamFailures += 1;
          recordFailure(stats, {
            credential: credential.name,
            businessId: request.business_id,
            stream: 'response-status',
            reason: errorText(error),
          });
          log.warn(
            { credential: credential.name, requestId: request.request_id, err: error },
            'review response request: status read failed; it stays open',
          );
          await recordResponseStatusError(db, request.request_id, errorText(error), observedAt);
          return;
        }
        const recorded = await recordResponseStatus(db, {
          requestId: request.request_id,
          status,
          observedAt,
          runId: context.runId,
          ...(options.alertRules ? { alertRules: options.alertRules } : {}),
        });
        stats.responseRequests.checked += 1;
        if (!recorded) return;
        if (recorded.changed) stats.responseRequests.changed += 1;
        if (recorded.finished && status === 'Completed') stats.responseRequests.completed += 1;
        if (recorded.finished && status === 'Failed') stats.responseRequests.failed += 1;
        if (recorded.alertRaised) stats.alerts += 1;
        if (recorded.changed) {
          log.info(
            {
              credential: credential.name,
              requestId: request.request_id,
              businessId: request.business_id,
              from: recorded.previousStatus,
              to: status,
            },
            'review response request changed status',
          );
        }
      }),
    ),
  );
}

/** The two review categories together; a review served in both keeps its first category. */
function mergeReviews(reviews: Review[], socials: Review[]): Review[] {
  const seen = new Set(reviews.map((r) => r.id));
  return [...reviews, ...socials.filter((s) => !seen.has(s.id))];
}
