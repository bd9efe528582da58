/**
 * One business of a run: fetch its streams concurrently (`fetchBusinessAnswers`), then
 * turn the answers into one snapshot written in one transaction (`writeBusiness`), the
 * single place a business's fetched answers reach the warehouse. A stream that fails
 * leaves that stream's stored rows untouched; a bad record goes to quarantine and its
 * siblings load; `This business doesn't exist` marks a listed business archived.
 */

import { removalLimitUnder } from '../alerts/kinds/volume-drop.ts';
import { alertsUnder } from '../alerts/raise-for-changes.ts';
import { DEFAULT_ALERT_RULES } from '../alerts/rules.ts';
import { AnswerUnchanged, type CallOptions } from '../api/client.ts';
import type { BusinessSummary, Credential, ListResult } from '../api/index.ts';
import { ApiError } from '../api/transport/errors.ts';
import { utcDay } from '../calendar-day.ts';
import { keptBody } from '../raw/body.ts';
import { writeRawReads } from '../raw/capture.ts';
import {
  type AnswerValue,
  BUSINESS_READS,
  CLAIMING_READS,
  quarantineStream,
  RECORD_STREAMS,
  type StreamRecords,
  streamRecords,
} from '../streams/index.ts';
import { inSpan } from '../tracing.ts';
import type { Db } from '../warehouse/database.ts';
import { markBusinessMissing, summaryLeavesRow } from '../warehouse/tables/businesses.ts';
import {
  type AnswerHashes,
  type AnswerRead,
  type AppliedAnswers,
  appliedFor,
  NO_ANSWERS_APPLIED,
  readAppliedAnswers,
} from '../warehouse/write/applied-answers.ts';
import {
  type BusinessSnapshot,
  mergeWriteStats,
  writeBusinessSnapshotIsolating,
} from '../warehouse/write/snapshot.ts';
import { addCounts } from '../warehouse/write/write-stats.ts';
import type { RunContext } from './run-context.ts';
import { errorText, recordFailure } from './stats.ts';
import { retryingAborts } from './transaction-retry.ts';
import type { Claims, WriteOrder } from './write-order.ts';

/**
 * An error that ends the credential's remaining work rather than one stream: its token was
 * refused (`AUTH_FAILURE`), or the upstream asked it to pause longer than a run waits
 * (`PAUSE_TOO_LONG`: every later call of the credential would fail the same way).
 */
export function isCredentialStop(error: unknown): error is ApiError {
  return (
    error instanceof ApiError && (error.code === 'AUTH_FAILURE' || error.code === 'PAUSE_TOO_LONG')
  );
}

/**
 * A read's outcome, kept rather than thrown, so one failed stream spares the others.
 * `unchanged`: the body is the one its stream's rows were last built from
 * (src/warehouse/write/applied-answers.ts), not parsed; `parse()` reads it when needed.
 */
export type Fetched<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown }
  | { ok: 'unchanged'; parse: () => T };

async function settle<T>(promise: Promise<T>): Promise<Fetched<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    if (error instanceof AnswerUnchanged) return { ok: 'unchanged', parse: error.parse as () => T };
    return { ok: false, error };
  }
}

/** A parsed value from a read, parsing an unchanged one now: for when it must be written. */
function parsedNow<T>(result: Fetched<T>): Fetched<T> {
  if (result.ok !== 'unchanged') return result;
  try {
    return { ok: true, value: result.parse() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Reads every stream of the run for one business, at once; a stream not asked for is null.
 * Each body is hashed as the raw zone keeps it (`seen`); one that is the body its rows
 * were last built from (`applied`, read while the requests are out) is not parsed.
 */
export async function fetchBusinessAnswers(
  context: RunContext,
  credential: Credential,
  id: number,
  /** Called once the reads that carry global ids have ended, with those ids (write-order.ts). */
  onClaims?: (claims: Claims) => void,
) {
  const { streams, call } = context;
  const { api, warehouse, reapply } = context.options;
  const applied: Promise<AppliedAnswers> = reapply
    ? Promise.resolve(NO_ANSWERS_APPLIED)
    : // Not knowing only costs the parse: the write will meet the database's error itself.
      readAppliedAnswers(warehouse.db, id).catch(() => NO_ANSWERS_APPLIED);
  const seen: AnswerHashes = {};
  const secrets = [credential.authToken, credential.userEmail];
  const options = (read: AnswerRead): CallOptions => ({
    ...call,
    unchanged: async (text) => {
      const { hash } = keptBody(text, secrets);
      seen[read] = hash;
      return (await applied).hashes[read] === hash;
    },
  });
  const skip = Promise.resolve(null);
  // Each call counted in flight, and aborted by the run's stop.
  const read = <T>(wanted: boolean, start: () => Promise<T>) =>
    settle(wanted ? context.inFlight.track(start()) : skip);
  // Every read of the stream descriptors (src/streams/index.ts), started at once in their order.
  const reading = BUSINESS_READS.map((entry) =>
    read(
      streams.has(entry.stream),
      (): Promise<unknown> => entry.fetch(api, credential, id, options(entry.read)),
    ),
  );
  if (onClaims) {
    const claiming = BUSINESS_READS.flatMap((entry, i) =>
      CLAIMING_READS.has(entry.read)
        ? [
            (reading[i] as Promise<Fetched<unknown>>).then(
              (result) => [entry.read, result] as const,
            ),
          ]
        : [],
    );
    // Claims that cannot be read are never made known: the businesses above this one then
    // wait for it to be done (WriteOrder.finish), as for one that failed.
    void Promise.all(claiming)
      .then((results) => onClaims(claimsOf(results)))
      .catch(() => {});
  }
  const settled = await Promise.all(reading);
  const reads = Object.fromEntries(
    BUSINESS_READS.map((entry, i) => [entry.read, settled[i]]),
  ) as BusinessReads;
  return { reads, applied: await applied, seen };
}

/**
 * The global ids a business's parsed answers carry, read off each record by its stream's
 * `claims` (src/streams). An answer that is the one its rows were built from (`unchanged`)
 * carries none new: its ids are already stored, under it or not.
 */
function claimsOf(results: readonly (readonly [string, Fetched<unknown>])[]): Claims {
  const claims = new Set<string>();
  for (const [read, result] of results) {
    const claimsOfRecord = CLAIMING_READS.get(read);
    if (!claimsOfRecord || result.ok !== true || !result.value) continue;
    for (const record of (result.value as ListResult<unknown>).records ?? []) {
      for (const claim of claimsOfRecord(record)) claims.add(claim);
    }
  }
  return claims;
}

/** Each read's outcome, by read name; null for a stream the run did not ask for. */
export type BusinessReads = { [R in AnswerRead]: Fetched<AnswerValue<R> | null> };

/** A business's answers in one run, stream by stream, with what was applied before. */
export type BusinessAnswers = Awaited<ReturnType<typeof fetchBusinessAnswers>>;

function answersOf(answers: BusinessAnswers): Fetched<unknown>[] {
  return Object.values(answers.reads);
}

/**
 * Fetch every stream of one business concurrently and write them in one transaction.
 * Returns `failed` when any stream failed (what did load is still written); throws an
 * authentication failure or a too-long pause (`isCredentialStop`) for the credential to
 * stop on, writing nothing of this business.
 */
export function syncBusiness(
  context: RunContext,
  credential: Credential,
  business: BusinessSummary,
  /** The credential's write order (write-order.ts): when this business may write. */
  order?: WriteOrder,
): Promise<'ok' | 'failed' | 'missing' | 'stopped'> {
  return inSpan(
    'sync.business',
    { 'listings.credential': credential.name, 'listings.business_id': business.id },
    async (span) => {
      const outcome = await syncBusinessInSpan(context, credential, business, order);
      span.setAttribute('listings.business_status', outcome);
      return outcome;
    },
  );
}

async function syncBusinessInSpan(
  context: RunContext,
  credential: Credential,
  business: BusinessSummary,
  order: WriteOrder | undefined,
): Promise<'ok' | 'failed' | 'missing' | 'stopped'> {
  const { options, stats, log } = context;
  const id = business.id;
  const answers = await fetchBusinessAnswers(
    context,
    credential,
    id,
    order ? (claims) => order.claim(id, claims) : undefined,
  );
  // The run stopped while this business was being read: a read cut short by the stop is
  // not the upstream's failure, so nothing of it is written (a later run reads it whole).
  if (context.call.signal?.aborted && answersOf(answers).some((r) => !r.ok)) return 'stopped';
  for (const result of answersOf(answers)) {
    if (!result.ok && isCredentialStop(result.error)) throw result.error;
  }
  // One owner rule: a lower business that carries one of these ids writes first.
  if (order) {
    const claims = claimsOf(
      BUSINESS_READS.filter((entry) => CLAIMING_READS.has(entry.read)).map(
        (entry) => [entry.read, answers.reads[entry.read] as Fetched<unknown>] as const,
      ),
    );
    await order.turn(id, claims, (on) =>
      log.debug(
        { credential: credential.name, businessId: id, waitsOn: on },
        'business read; waiting for its turn to write (a lower business may carry one of its ids)',
      ),
    );
  }
  const observedAt = options.businessObservedAt?.(credential, id) ?? context.now(credential);
  // The business's upstream answers, kept in its own transaction (docs/warehouse.md, "Raw zone").
  const kept = context.raw?.takeBusiness(credential.name, id) ?? [];
  const keepReads = (trx: Parameters<typeof writeRawReads>[0]) =>
    writeRawReads(trx, { runId: context.runId, observedAt }, kept);
  if (
    answersOf(answers).some(
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
  return writeBusiness(context, credential, business, answers, observedAt, keepReads);
}

/**
 * A business's snapshot from its answers: each failed stream recorded (and counted in
 * `failedStreams`) and left out, each refused record kept for quarantine, each stream's
 * records built from its reads unless all of them are as its rows already are.
 */
function snapshotOf(
  context: RunContext,
  credential: Credential,
  business: BusinessSummary,
  answers: BusinessAnswers,
  observedAt: Date,
): { snapshot: BusinessSnapshot; failedStreams: number } {
  const { stats, log } = context;
  const id = business.id;
  const { reads, applied, seen } = answers;
  let failedStreams = 0;
  const rejected: BusinessSnapshot['rejected'] = [];
  const value = <T>(result: Fetched<T>, stream: string): T | null => {
    if (result.ok === 'unchanged') {
      // Its rows already say what it says: neither parsed nor written.
      stats.answersUnchanged = (stats.answersUnchanged ?? 0) + 1;
      return null;
    }
    if (result.ok) return result.value;
    failedStreams += 1;
    recordFailure(stats, {
      credential: credential.name,
      businessId: id,
      stream,
      reason: errorText(result.error),
    });
    // An answer refused whole (TOO_MANY_RECORDS) leaves a summary for quarantine.
    const refused = result.error instanceof ApiError ? (result.error.rejected ?? []) : [];
    for (const record of refused) rejected.push({ stream, ...record });
    log.warn(
      { credential: credential.name, businessId: id, stream, err: result.error },
      'stream failed; its stored rows are left as they were',
    );
    return null;
  };
  const listed = <T>(result: ListResult<T> | null, stream: string): T[] | null => {
    if (!result) return null;
    stats.duplicates += result.duplicates ?? 0;
    for (const record of result.rejected) rejected.push({ stream, ...record });
    return result.records;
  };

  const day = utcDay(observedAt);
  const full = value(reads.business, 'businesses');
  // Each record stream's records from its reads (src/streams/index.ts, `streamRecords`).
  const records: StreamRecords = {};
  for (const { name } of RECORD_STREAMS) {
    const entries = BUSINESS_READS.filter((entry) => entry.stream === name);
    // A stream is written whole: its reads all as their rows already are (and, for a stream
    // that writes a row per day, on the day they were written for) leave it unwritten; any
    // other, and every read of it is parsed. Listings and ranks written for another day are
    // written again for this one.
    const unchanged = entries.every(
      (entry) => reads[entry.read].ok === 'unchanged' && appliedFor(applied, entry.read, day),
    );
    const byRead: Partial<Record<AnswerRead, readonly unknown[]>> = {};
    let whole = true;
    for (const entry of entries) {
      const read: Fetched<unknown> = reads[entry.read];
      const result = unchanged ? read : parsedNow(read);
      const list = listed(
        value(result, name) as ListResult<unknown> | null,
        quarantineStream(entry),
      );
      if (list === null) whole = false;
      else byRead[entry.read] = list;
    }
    (records as Record<string, readonly unknown[] | null>)[name] = whole
      ? streamRecords(name, byRead)
      : null;
  }
  const snapshot: BusinessSnapshot = {
    accountName: credential.name,
    businessId: id,
    summary: business,
    full,
    records,
    rejected,
    answers: { before: applied, seen },
  };
  return { snapshot, failedStreams };
}

/**
 * Turns one business's answers into its snapshot and writes it in one transaction (a
 * reader never sees half a business). A failed stream is recorded and left out (its
 * stored rows stay); a value the database refuses costs its record (quarantined), never
 * the business.
 */
export async function writeBusiness(
  context: RunContext,
  credential: Credential,
  business: BusinessSummary,
  answers: BusinessAnswers,
  observedAt: Date,
  /** Runs last in the business's transaction: the raw reads of these answers. */
  inTransaction?: (db: Db) => Promise<void>,
): Promise<'ok' | 'failed'> {
  const { options, stats, log } = context;
  const id = business.id;
  const { applied } = answers;
  const { snapshot, failedStreams } = snapshotOf(
    context,
    credential,
    business,
    answers,
    observedAt,
  );
  const { rejected, records } = snapshot;
  if (
    failedStreams === 0 &&
    rejected.length === 0 &&
    snapshot.full === null &&
    Object.values(records).every((list) => list === null) &&
    applied.stored !== undefined &&
    summaryLeavesRow(applied.stored, business, credential.name)
  ) {
    // Every read is as its rows already are and the list changes no field of the business
    // row: the transaction would write nothing, so only the raw reads are kept.
    await inTransaction?.(options.warehouse.db);
    addCounts(stats.tables, 'businesses', { unchanged: 1 });
    addCounts(stats.tables, 'business_versions', { inserted: 0 });
    stats.businesses.synced += 1;
    return 'ok';
  }
  // A deadlock or serialization failure reruns the whole transaction (transaction-retry.ts).
  const written = await retryingAborts(
    () =>
      inSpan(
        'warehouse.transaction',
        { 'db.system.name': options.warehouse.kind, 'listings.business_id': id },
        () =>
          writeBusinessSnapshotIsolating(options.warehouse.db, snapshot, {
            runId: context.runId,
            observedAt,
            onChanges: alertsUnder(options.alertRules),
            removalLimit: removalLimitUnder(options.alertRules ?? DEFAULT_ALERT_RULES),
            copyNewRows: options.warehouse.kind === 'postgres',
            keywordsGone: context.keywordsGone,
            ...(inTransaction ? { inTransaction } : {}),
          }),
      ),
    { businessId: id, credential: credential.name },
    log,
  );
  for (const held of written.removalsHeld) {
    // Not a failure: the read loaded; only its removals wait for the next run (docs/warehouse.md).
    stats.removalsHeld = (stats.removalsHeld ?? 0) + 1;
    log.warn(
      { credential: credential.name, businessId: id, ...held },
      'volume drop: the read would remove most of the stored rows; removals held until the next run confirms them',
    );
  }
  mergeWriteStats(stats.tables, written.stats);
  stats.alerts += written.alerts;
  stats.quarantined += written.quarantined;
  stats.streamFailures += failedStreams;
  if (failedStreams === 0) stats.businesses.synced += 1;
  return failedStreams === 0 ? 'ok' : 'failed';
}
