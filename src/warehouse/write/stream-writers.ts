/**
 * The record streams' writers, one entry per stream (docs/contributing.md, "Adding a
 * stream"): what `writeBusinessSnapshot` (warehouse/write/snapshot.ts) loops over, in this order.
 * Each writer module exports its own entry (`StreamWriter` in write-context.ts: the write,
 * where a record is for quarantine, the `businesses` column its first write sets, its
 * tables' entries for `replay --in-place`, which replay/tables.ts lists in this order). The
 * descriptors (src/streams) cannot name their writers, since the warehouse imports them; this
 * list is typed over their names instead, so a record stream without a writer, or a writer
 * of no stream, fails the type check.
 */
import type { RecordStream } from '../../streams/index.ts';
import type { Db } from '../database.ts';
import { keywordsWriter } from '../tables/keywords.ts';
import { listingsWriter } from '../tables/listings.ts';
import { rankingsWriter } from '../tables/rankings.ts';
import { reviewsWriter } from '../tables/reviews.ts';
import type { ReplayTable } from './replay-table.ts';
import type {
  FirstSyncedColumn,
  StreamWriteContext,
  StreamWriter,
  StreamWritten,
} from './write-context.ts';

/**
 * In write order, which is also the order the alerts of one business are raised in:
 * listings, then reviews, then ranks. Keywords come before ranks: a rank series created
 * this run resolves its keyword id from the keywords just written.
 */
export const STREAM_WRITERS = {
  listings: listingsWriter,
  reviews: reviewsWriter,
  keywords: keywordsWriter,
  rankings: rankingsWriter,
} as const satisfies { [S in RecordStream]: StreamWriter<S> };

/** A writer as a loop over the streams sees it: records of whichever stream it is handed. */
export interface AnyStreamWriter {
  write(db: Db, ctx: StreamWriteContext, records: readonly unknown[]): Promise<StreamWritten>;
  location(record: unknown): string;
  firstSynced?: FirstSyncedColumn;
  countsAlerts?: boolean;
  replay: readonly ReplayTable[];
}

/**
 * The writers in write order, each with its stream. The loop hands each writer only its
 * own stream's records (`BusinessSnapshot.records[stream]`), which the types of a loop
 * cannot follow: hence the one cast, here.
 */
export const WRITE_ORDER: readonly { stream: RecordStream; writer: AnyStreamWriter }[] = (
  Object.keys(STREAM_WRITERS) as RecordStream[]
).map((stream) => ({ stream, writer: STREAM_WRITERS[stream] as unknown as AnyStreamWriter }));
