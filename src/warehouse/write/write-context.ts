import type { RecordStream, RemovalStream, StreamRecord } from '../../streams/index.ts';
import type { Database, Db } from '../database.ts';
import type { ChildOwner } from './bulk-write.ts';
import type { Change } from './changes.ts';
import type { RemovalCheck } from './held-removals.ts';
import type { QuarantinedRecord } from './quarantine.ts';
import type { ReplayTable } from './replay-table.ts';
import type { WriteStats } from './write-stats.ts';

/** What every per-business writer needs to know about the write it is part of. */
export interface BusinessWriteContext extends ChildOwner {
  accountName: string;
  runId: string;
  /**
   * Ids (as text) of records read this run but refused and quarantined, per stream. They
   * are still upstream, so their stored rows are kept as they were, not marked gone.
   */
  refused?: RefusedIds;
  /** Whether a stream's gone rows are marked gone now or held (held-removals.ts); absent: now. */
  removals?: RemovalCheck;
  /**
   * The run's keywords marked gone so far (ids as text), shared by its businesses: a
   * keyword another business takes over in the same run is counted moved, not deleted.
   */
  keywordsGone?: Set<string> | undefined;
}

/** Per stream whose reads mark rows gone, the ids of its refused records (see `refused`). */
export type RefusedIds = Readonly<Record<RemovalStream, ReadonlySet<string>>>;

/** Whether a stored row's id belongs to a record refused this run (see `refused`). */
export function isRefused(ctx: BusinessWriteContext, stream: RemovalStream, id: unknown): boolean {
  return ctx.refused?.[stream].has(String(id).toLowerCase()) ?? false;
}

/** A `businesses` column that a stream's first successful write sets (docs/warehouse.md). */
export type FirstSyncedColumn = Extract<keyof Database['businesses'], `${string}_first_synced_at`>;

/** What a record stream's writer is told besides the business write's context. */
export interface StreamWriteContext extends BusinessWriteContext {
  /**
   * The stored business records an earlier write of the stream (its `firstSynced` column
   * is set): the first write is the baseline, and raises nothing. False for a stream
   * without such a column.
   */
  hadSync: boolean;
}

/** What a record stream's writer did, for the business's write to gather. */
export interface StreamWritten {
  stats: WriteStats;
  /** For the alert rules, in the business's transaction (changes.ts). */
  changes: readonly Change[];
  /** Records the writer refused (reviews.ts: an id another business holds), for quarantine. */
  quarantined?: readonly QuarantinedRecord[];
}

/**
 * One record stream's writer, as `STREAM_WRITERS` (stream-writers.ts) lists it: each
 * writer module exports its own entry beside its write (and its tables' Kysely types,
 * which `Database` in database.ts lists).
 */
export interface StreamWriter<S extends RecordStream> {
  /** Writes the business's records of the stream (its reads succeeded), in its transaction. */
  write(
    db: Db,
    ctx: StreamWriteContext,
    records: readonly StreamRecord<S>[],
  ): Promise<StreamWritten>;
  /**
   * Where a record is, for the quarantine row of one whose value the database refused
   * (`writeBusinessSnapshotIsolating`, warehouse/write/snapshot.ts).
   */
  location(record: StreamRecord<S>): string;
  /** The `businesses` column the stream's first successful write sets, when it has one. */
  firstSynced?: FirstSyncedColumn;
  /** The business's stats count `alerts` whenever the stream is written, none raised included. */
  countsAlerts?: boolean;
  /**
   * How `replay --in-place` seeds and merges each table the writer writes (docs/replay.md,
   * "Replay in place"), parents first: `REPLAY_TABLES` (replay/tables.ts) lists them in
   * `STREAM_WRITERS` order. A table left out keeps its live rows through the replay.
   */
  replay: readonly ReplayTable[];
}
