/**
 * The one entry point the sync calls per business, inside the transaction it opens:
 *
 *   await db.transaction().execute((trx) => writeBusinessSnapshot(trx, snapshot, ctx));
 *
 * so a reader never sees half a business, and one business's failure rolls back only
 * that business. What the writers changed goes, in the same transaction, to the caller's
 * `onChanges` (the alert rules, `src/alerts`), so the alerts commit with the data. A null
 * stream means its read failed this run: nothing of that stream is touched (no upserts,
 * no removals, its `*_synced_at` stays). A read that would remove most of a stream's rows
 * is held instead (`removalLimit`, held-removals.ts).
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { BusinessFull, BusinessSummary } from '../../api/index.ts';
import { utcDay } from '../../calendar-day.ts';
import {
  BUSINESS_READS,
  REMOVAL_STREAMS,
  type RecordStream,
  type RemovalStream,
  type StreamRecords,
  streamOfQuarantined,
} from '../../streams/index.ts';
import type { Database } from '../database.ts';
import { lockBusiness, writeBusiness } from '../tables/businesses.ts';
import {
  type AnswerHashes,
  type AnswerOutcome,
  type AnswerRead,
  type AppliedAnswers,
  recordAppliedAnswers,
} from './applied-answers.ts';
import type { Change, ChangeHandler } from './changes.ts';
import { type RemovalLimit, type RemovalsHeld, removalDecisions } from './held-removals.ts';
import { quarantineRecords } from './quarantine.ts';
import { WRITE_ORDER } from './stream-writers.ts';
import type { BusinessWriteContext, FirstSyncedColumn, RefusedIds } from './write-context.ts';
import { addCounts, mergeWriteStats, type WriteStats } from './write-stats.ts';

export type { TableCounts, WriteStats } from './write-stats.ts';
export { mergeWriteStats } from './write-stats.ts';

export interface RejectedInSnapshot {
  stream: string;
  location: string;
  reason: string;
  payload: unknown;
}

export interface BusinessSnapshot {
  accountName: string;
  businessId: number;
  /** From the list operation (always present). */
  summary: BusinessSummary;
  /** null: the full read failed this run; the stored profile is kept, summary fields refresh. */
  full: BusinessFull | null;
  /**
   * Each record stream's records, by stream (src/streams/index.ts, `StreamRecords`: the
   * reviews are both categories, `review` and `social`). Absent or null: the stream is not
   * written, so none of its rows changes and none is marked gone.
   */
  records: StreamRecords;
  /** Records that failed their schema: quarantined in the same transaction. */
  rejected: RejectedInSnapshot[];
  /**
   * The bodies of this run's reads and what was recorded as applied before they were
   * fetched: the streams written in full record their bodies (warehouse/write/applied-answers.ts).
   */
  answers?: { before: AppliedAnswers; seen: AnswerHashes };
}

export interface WriteContext {
  runId: string;
  /** The run's observation time; ranks use its UTC date as observed_on. */
  observedAt: Date;
  /**
   * Called with what the writers changed, in the business's transaction; returns the
   * alerts it raised. `alertsUnder(rules)` from `src/alerts`; none raised when absent.
   */
  onChanges?: ChangeHandler;
  /** Runs last, in the business's transaction: the sync keeps its raw reads here. */
  inTransaction?: (trx: Transaction<Database>) => Promise<void>;
  /**
   * When a read is a volume drop whose removals are held until the next run confirms them
   * (held-removals.ts); absent: every removal applies at once.
   */
  removalLimit?: RemovalLimit;
  /**
   * Rows new to their business go by COPY (`BusinessWriteContext.copyNewRows`): for a
   * PostgreSQL warehouse over pg. A write that a COPY fails with a unique violation (a
   * row's id stored under another business) is written again with the upsert alone.
   */
  copyNewRows?: boolean;
  /** The run's keywords marked gone so far (`BusinessWriteContext.keywordsGone`). */
  keywordsGone?: Set<string>;
}

export interface SnapshotWriteResult {
  stats: WriteStats;
  /** Alerts `onChanges` raised, of every kind (`src/alerts`). */
  alerts: number;
  quarantined: number;
  /** The streams whose removals this write held (a volume drop), with their counts. */
  removalsHeld: RemovalsHeld[];
}

export async function writeBusinessSnapshot(
  trx: Transaction<Database>,
  snapshot: BusinessSnapshot,
  ctx: WriteContext,
): Promise<SnapshotWriteResult> {
  const write: BusinessWriteContext = {
    accountName: snapshot.accountName,
    businessId: snapshot.businessId,
    runId: ctx.runId,
    observedAt: ctx.observedAt,
    refused: refusedIds(snapshot.rejected),
    copyNewRows: ctx.copyNewRows,
    keywordsGone: ctx.keywordsGone,
  };
  const stored = await lockBusiness(trx, snapshot.businessId);
  write.newBusiness = stored === undefined;
  const removals = removalDecisions(stored?.removals_held, ctx.removalLimit, ctx);
  write.removals = removals.check;
  const records = (stream: RecordStream): readonly unknown[] | null =>
    snapshot.records[stream] ?? null;
  // Each stream's first write sets its column, once (businesses.ts).
  const synced: Partial<Record<FirstSyncedColumn, boolean>> = {};
  for (const { stream, writer } of WRITE_ORDER) {
    if (writer.firstSynced) synced[writer.firstSynced] = records(stream) !== null;
  }
  const stats = await writeBusiness(trx, write, {
    summary: snapshot.summary,
    full: snapshot.full,
    stored,
    synced,
  });

  const changes: Change[] = [];
  // The read's refused records, then those a writer refused (reviews.ts).
  const rejected: RejectedInSnapshot[] = [...snapshot.rejected];
  // Each written stream's record count: what its read answered, for a held drop.
  const answered: Partial<Record<RecordStream, number>> = {};
  let countsAlerts = false;
  for (const { stream, writer } of WRITE_ORDER) {
    const list = records(stream);
    if (list === null) continue;
    const hadSync = writer.firstSynced !== undefined && stored?.[writer.firstSynced] != null;
    const written = await writer.write(trx, { ...write, hadSync }, list);
    mergeWriteStats(stats, written.stats);
    changes.push(...written.changes);
    rejected.push(...(written.quarantined ?? []));
    answered[stream] = list.length;
    if (writer.countsAlerts) countsAlerts = true;
  }
  const removalsHeld = await removals.finish(trx, snapshot.businessId, answered);
  for (const held of removalsHeld) {
    changes.push({
      type: 'removals_held',
      accountName: snapshot.accountName,
      businessId: snapshot.businessId,
      runId: ctx.runId,
      detectedAt: ctx.observedAt,
      ...held,
    });
  }
  if (snapshot.answers) {
    await recordAppliedAnswers(trx, snapshot.businessId, {
      ...snapshot.answers,
      outcomes: answerOutcomes(snapshot, rejected, removalsHeld),
      day: utcDay(ctx.observedAt),
      at: ctx.observedAt,
    });
  }
  // In the writers' order (stream-writers.ts): the order the alerts were raised in before.
  const alerts = ctx.onChanges && changes.length > 0 ? await ctx.onChanges(trx, changes) : 0;
  // A listings write always counts alerts (0 included); the other streams when they raise.
  if (countsAlerts || alerts > 0) addCounts(stats, 'alerts', { inserted: alerts });
  const quarantined = await quarantineRecords(
    trx,
    ctx.runId,
    rejected.map((record) => ({
      accountName: snapshot.accountName,
      businessId: snapshot.businessId,
      ...record,
    })),
  );
  if (quarantined > 0) addCounts(stats, 'quarantine', { inserted: quarantined });
  if (ctx.inTransaction) await ctx.inTransaction(trx);
  return { stats, alerts, quarantined, removalsHeld };
}

/**
 * What this write did with each read: not written (its stream left as stored), written
 * in full, or written short (a record quarantined, by the read or by a writer, or its
 * removals held), so that its rows are not what its body says. The reads of one stream
 * share its outcome (a refused social item makes both review reads short).
 */
function answerOutcomes(
  snapshot: BusinessSnapshot,
  rejected: readonly RejectedInSnapshot[],
  removalsHeld: readonly RemovalsHeld[],
): Partial<Record<AnswerRead, AnswerOutcome>> {
  const short = new Set<string>();
  for (const record of rejected) short.add(streamOfQuarantined(record.stream) ?? record.stream);
  for (const held of removalsHeld) short.add(held.stream);
  const outcomes: Partial<Record<AnswerRead, AnswerOutcome>> = {};
  for (const { read, stream } of BUSINESS_READS) {
    // The profile's read is the business row's; every other stream's, its records'.
    const written =
      stream === 'businesses'
        ? snapshot.full !== null
        : snapshot.records[stream as RecordStream] != null;
    outcomes[read] = !written ? 'untouched' : short.has(stream) ? 'applied-short' : 'applied';
  }
  return outcomes;
}

/**
 * The ids of the refused records whose id reads, per stream, as `isRefused` compares them:
 * a record's `id`, as the upstream's record and the client's both name it.
 */
function refusedIds(rejected: readonly RejectedInSnapshot[]): RefusedIds {
  const ids = new Map<string, Set<string>>(REMOVAL_STREAMS.map((s) => [s, new Set<string>()]));
  for (const record of rejected) {
    const refused = ids.get(streamOfQuarantined(record.stream) ?? record.stream);
    if (refused === undefined) continue;
    const payload = record.payload as { id?: unknown } | null;
    const id = typeof payload === 'object' && payload !== null ? payload.id : undefined;
    if (typeof id === 'number' || typeof id === 'string') {
      refused.add(String(id).trim().toLowerCase());
    }
  }
  return Object.fromEntries(ids) as Record<RemovalStream, Set<string>>;
}

/**
 * PostgreSQL error codes meaning "this value cannot be stored": class 22 (data exception:
 * out of range, invalid text representation, untranslatable character, …) and 54000
 * (program limit: an index row too large). The schemas are meant to refuse every such
 * value first; these are the net under them.
 */
export function isUnstorableValueError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code === '54000');
}

function refusal(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  return `the database refused a value: ${String(e.message)} (SQLSTATE ${String(e.code)})`;
}

/** Thrown inside a probing transaction so that nothing it wrote is kept. */
class ProbeDone extends Error {}

/**
 * Writes a business in one transaction, like `writeBusinessSnapshot`; when PostgreSQL
 * refuses a value (`isUnstorableValueError`), finds the records that hold one, moves
 * them to the snapshot's rejected list (quarantine, with the database's reason) and
 * writes the rest, so one unstorable record never costs its business or its alerts.
 *
 * The search runs only on that failure path: in a transaction that is rolled back, each
 * list stream is written alone under a savepoint and split in halves until the failing
 * records are found (about 2·log2(n) probes per bad record).
 */
export async function writeBusinessSnapshotIsolating(
  db: Kysely<Database>,
  snapshot: BusinessSnapshot,
  ctx: WriteContext,
): Promise<SnapshotWriteResult> {
  try {
    return await db.transaction().execute((trx) => writeBusinessSnapshot(trx, snapshot, ctx));
  } catch (error) {
    if (ctx.copyNewRows && isUniqueViolation(error)) {
      return writeBusinessSnapshotIsolating(db, snapshot, { ...ctx, copyNewRows: false });
    }
    if (!isUnstorableValueError(error)) throw error;
  }
  // The search and the write after it go without COPY: one statement per part, as probed.
  const upserting: WriteContext = { ...ctx, copyNewRows: false };
  let cleaned: BusinessSnapshot | undefined;
  await db
    .transaction()
    .execute(async (trx) => {
      cleaned = await withoutUnstorable(trx, snapshot, upserting);
      throw new ProbeDone();
    })
    .catch((error: unknown) => {
      if (!(error instanceof ProbeDone)) throw error;
    });
  const next = cleaned as BusinessSnapshot;
  return db.transaction().execute((trx) => writeBusinessSnapshot(trx, next, upserting));
}

/** A unique violation (23505): what a COPY of rows taken for new meets when one is not. */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}

async function withoutUnstorable(
  trx: Transaction<Database>,
  snapshot: BusinessSnapshot,
  ctx: WriteContext,
): Promise<BusinessSnapshot> {
  let probeCount = 0;
  /** Undefined when `candidate` writes; the database's error when it refuses a value. */
  const probe = async (candidate: BusinessSnapshot): Promise<unknown> => {
    const name = sql.id(`probe_${++probeCount}`);
    await sql`savepoint ${name}`.execute(trx);
    try {
      await writeBusinessSnapshot(trx, candidate, ctx);
      return undefined;
    } catch (error) {
      if (!isUnstorableValueError(error)) throw error;
      return error;
    } finally {
      await sql`rollback to savepoint ${name}`.execute(trx);
    }
  };

  const rejected = [...snapshot.rejected];
  const alone: BusinessSnapshot = { ...snapshot, records: {}, rejected: [] };
  let full = snapshot.full;
  const profileError = full ? await probe(alone) : undefined;
  if (profileError) {
    rejected.push({
      stream: 'businesses',
      location: `business ${snapshot.businessId}`,
      reason: refusal(profileError),
      payload: full,
    });
    full = null;
  }
  const base: BusinessSnapshot = { ...alone, full };

  const kept: Partial<Record<RecordStream, readonly unknown[] | null>> = {};
  for (const { stream, writer } of WRITE_ORDER) {
    const records = snapshot.records[stream];
    if (!records || records.length === 0) {
      kept[stream] = records;
      continue;
    }
    const bad = new Map<unknown, unknown>();
    const search = async (part: readonly unknown[], error?: unknown): Promise<void> => {
      const failure = error ?? (await probe({ ...base, records: { [stream]: part } }));
      if (!failure) return;
      if (part.length === 1) {
        bad.set(part[0], failure);
        return;
      }
      const middle = Math.ceil(part.length / 2);
      const before = bad.size;
      await search(part.slice(0, middle));
      await search(part.slice(middle));
      // Each half writes alone but not together: keep none of them rather than loop.
      if (bad.size === before) for (const record of part) bad.set(record, failure);
    };
    await search(records);
    for (const [record, error] of bad) {
      rejected.push({
        stream,
        location: writer.location(record),
        reason: refusal(error),
        payload: record,
      });
    }
    kept[stream] = records.filter((record: unknown) => !bad.has(record));
  }
  return { ...snapshot, records: kept as StreamRecords, full, rejected };
}
