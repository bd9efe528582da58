/**
 * Answers applied (docs/warehouse.md, "Answers applied"; migrations 0014 and 0022): for
 * each business and read, the `raw_bodies.body_hash` of the body whose rows the sync last
 * wrote in full. A read that brings the same body again says nothing the rows do not already say,
 * so the sync neither parses nor writes it (docs/benchmarks.md: most of an
 * unchanged night's CPU). The record is kept honest by three rules:
 *
 * - it is written in the business's transaction, only for the streams written in it, so
 *   it never names a body whose rows did not commit;
 * - a stream written with a record quarantined or a removal held records no body (null):
 *   its rows are not what the body says, so the next read is applied;
 * - it names the write path that wrote it (`APPLIED_BY`): a release that builds rows
 *   differently applies every answer once again.
 *
 * A business archived, or with removals held, has no answers taken as applied; neither
 * has a run asked to reapply (`sync --reapply`, the write workflows' re-sync). No other
 * writer touches a stream's tables while a run holds the sync lock, and runs of the same
 * business exclude each other (src/warehouse/runs/sync-lock.ts).
 */
import { createHash } from 'node:crypto';
import { type ColumnType, CompiledQuery, sql } from 'kysely';
import * as api from '../../api/index.ts';
import { describeShape, isRecordShape } from '../../api/index.ts';
import { ANSWER_READS, type AnswerRead, DAILY_READS, type DailyRead } from '../../streams/index.ts';
import type { Db, Timestamp } from '../database.ts';
import type { BusinessRow } from '../tables/businesses.ts';

/**
 * The write path, as named by hand: raise `name` in a change that makes the same body write
 * different rows through a writer's rule (a schema transform, a hash, a history rule), and
 * set `shapes` to the digest the shapes have then (`shapesDigest()`, which
 * test/warehouse/answers-stamp.test.ts prints). A change of the records' shapes (a column
 * added, renamed or retyped in src/api) needs no edit here: it moves `APPLIED_BY` itself.
 */
export const WRITE_PATH = { name: 'write-path-2', shapes: '65f3339cfe81' } as const;

/**
 * A short digest of every record shape `src/api` exports: each field's table column, SQL
 * type and Airbyte record schema, in the shape's order (nested shapes, such as a business's
 * hours, through the record schema). A column added, renamed or retyped moves it.
 */
export function shapesDigest(exported: Readonly<Record<string, unknown>> = api): string {
  const lines: string[] = [];
  for (const name of Object.keys(exported).sort()) {
    const shape = exported[name];
    if (!isRecordShape(shape)) continue;
    for (const line of describeShape(shape)) lines.push(`${name} ${line}`);
  }
  return createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 12);
}

/** The stamp of a write path over shapes of digest `shapes`: its name, and the shapes' digest when they moved since it was named. */
export function stampOf(writePath: { name: string; shapes: string }, shapes: string): string {
  return shapes === writePath.shapes ? writePath.name : `${writePath.name}+shapes-${shapes}`;
}

/**
 * The write path the record belongs to: a release that builds rows differently names
 * another, and every business's answers are then applied once more by the next run
 * (docs/warehouse.md, "Answers applied"). It moves by itself with the shapes; a writer's
 * rule moves it through `WRITE_PATH.name`.
 *
 * The guard that a change of output cannot keep the stamp is the equality snapshot,
 * test/warehouse/write-path-equality.expected.json: beside the write path's output it keeps
 * the history of which stamp was given for which output digest. Recording a new output
 * under a stamp already given another refuses unless a reason is written
 * (`WRITE_PATH_SNAPSHOT_KEPT`: the same bodies still write the same rows, e.g. a read model
 * its migration fills), and test/warehouse/answers-stamp.test.ts holds `APPLIED_BY` and the
 * current output to that history. So a writer's rule that changes rows without touching a
 * shape is still caught: its new output needs a new name or a reason.
 */
export const APPLIED_BY = stampOf(WRITE_PATH, shapesDigest());

// The reads of a business and the daily ones are the stream descriptors'
// (src/streams/index.ts): one `business_answers` row per business and read.
export { ANSWER_READS, type AnswerRead, DAILY_READS, type DailyRead };

/** Body hashes by read; a read absent or null has no body taken as applied. */
export type AnswerHashes = Partial<Record<AnswerRead, string | null>>;

/** What is recorded of a business's answers, as the sync compares a read against it. */
export interface AppliedAnswers {
  /** The business's stored row, read with the answers (undefined when none is taken as applied). */
  stored?: BusinessRow;
  hashes: AnswerHashes;
  /** The UTC day (`YYYY-MM-DD`) each daily read was written for. */
  days: Partial<Record<DailyRead, string | null>>;
}

export const NO_ANSWERS_APPLIED: AppliedAnswers = { hashes: {}, days: {} };

/** Whether the recorded body of `read` is applied for `day` (any day, for a read not daily). */
export function appliedFor(applied: AppliedAnswers, read: AnswerRead, day: string): boolean {
  if (!(DAILY_READS as readonly string[]).includes(read)) return true;
  return applied.days[read as DailyRead] === day;
}

/** The business's row and, by read, its recorded `[body_hash, applied_on]`. */
type AnswersRow = BusinessRow & {
  answer_reads: Record<string, [string | null, string | null]> | null;
};

// One statement, with the business's row: every business of every run reads it
// (src/warehouse/write/bulk-write.ts says why). The reads come by the primary key's prefix, as one
// JSON object (a date in JSON is its `YYYY-MM-DD` text). A business none of whose reads this
// write path recorded has none taken as applied, its row included.
const APPLIED_ANSWERS = `select b.*, (
    select json_object_agg(a.read, json_build_array(a.body_hash, a.applied_on))
    from business_answers a where a.business_id = b.business_id and a.applied_by = $2
  ) as answer_reads
  from businesses b
  where b.business_id = $1 and b.archived_at is null and b.removals_held is null`;

/**
 * The answers taken as applied for a business: none when the business is not stored,
 * archived, holds removals, or was written by another write path.
 */
export async function readAppliedAnswers(db: Db, businessId: number): Promise<AppliedAnswers> {
  const { rows } = await db.executeQuery<AnswersRow>(
    CompiledQuery.raw(APPLIED_ANSWERS, [businessId, APPLIED_BY]),
  );
  const row = rows[0];
  if (!row?.answer_reads) return NO_ANSWERS_APPLIED;
  const { answer_reads: recorded, ...stored } = row;
  const hashes: AnswerHashes = {};
  for (const read of ANSWER_READS) hashes[read] = recorded[read]?.[0] ?? null;
  const days: AppliedAnswers['days'] = {};
  for (const read of DAILY_READS) days[read] = recorded[read]?.[1] ?? null;
  return { stored, hashes, days };
}

/** What one business write did with each read: written in full, written short, or not at all. */
export type AnswerOutcome = 'applied' | 'applied-short' | 'untouched';

/**
 * Records, in the business's transaction, the body of each read this write applied in
 * full (null for one applied short), and the day for the daily ones, in one statement:
 * a row per read it wrote, the rows of the reads it did not write left as they were (a
 * row another write path left is not read as applied: `readAppliedAnswers`). Nothing is
 * sent when that changes nothing (`before`, as read before the run fetched the business).
 */
export async function recordAppliedAnswers(
  trx: Db,
  businessId: number,
  answers: {
    before: AppliedAnswers;
    /** The hash of each read's body this run. */
    seen: AnswerHashes;
    outcomes: Partial<Record<AnswerRead, AnswerOutcome>>;
    /** The UTC day the daily reads were written for, when they were. */
    day: string;
    at: Date;
  },
): Promise<void> {
  const reads: AnswerRead[] = [];
  const hashes: (string | null)[] = [];
  const days: (string | null)[] = [];
  let changed = false;
  for (const read of ANSWER_READS) {
    const outcome = answers.outcomes[read] ?? 'untouched';
    if (outcome === 'untouched') continue;
    const hash = outcome === 'applied' ? (answers.seen[read] ?? null) : null;
    reads.push(read);
    hashes.push(hash);
    days.push((DAILY_READS as readonly string[]).includes(read) ? answers.day : null);
    if ((answers.before.hashes[read] ?? null) !== hash) changed = true;
    if (hash !== null && !appliedFor(answers.before, read, answers.day)) changed = true;
  }
  if (!changed) return;
  await sql`insert into business_answers
      (business_id, read, body_hash, applied_on, applied_by, updated_at)
    select ${businessId}::bigint, r.read, r.body_hash, r.applied_on, ${APPLIED_BY}::text,
      ${answers.at}::timestamptz
    from unnest(${reads}::text[], ${hashes}::text[], ${days}::date[])
      as r(read, body_hash, applied_on)
    on conflict (business_id, read) do update set body_hash = excluded.body_hash,
      applied_on = excluded.applied_on, applied_by = excluded.applied_by,
      updated_at = excluded.updated_at`.execute(trx);
}

/**
 * The answer each read's rows were last built from (migrations 0014 and 0022;
 * docs/warehouse.md, "Answers applied"): one row per business and read.
 */
export interface BusinessAnswersTable {
  business_id: number;
  /** The read's name (`ANSWER_READS`, src/streams/index.ts). */
  read: string;
  /** The `raw_bodies.body_hash` of the body its rows were written from in full; null: not known. */
  body_hash: string | null;
  /** A daily read's UTC day its rows were written for (a later day's are new rows); else null. */
  applied_on: ColumnType<string | null, string | null, string | null>;
  /** The write path that applied it (src/warehouse/write/applied-answers.ts, APPLIED_BY). */
  applied_by: string;
  updated_at: Timestamp;
}

declare module '../database.ts' {
  interface Database {
    business_answers: BusinessAnswersTable;
  }
}
