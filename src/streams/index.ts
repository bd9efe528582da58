/**
 * The streams, one descriptor each (src/streams/descriptor.ts says what a descriptor
 * holds; docs/contributing.md, "Adding a stream"). Everything that iterates streams reads this list:
 * `sync --streams` and its help, the reads of a business and the records the sync builds
 * from them, the re-sync after a write command, the answers record (`business_answers`),
 * the quarantine's stream names, the volume guard's removal policy, replay's rule, and the
 * Airbyte catalog. A new stream is an entry here and its file.
 */
import type { ListResult } from '../api/index.ts';
import { businesses } from './businesses.ts';
import type { BusinessRead, CatalogStream, RemovalPolicy, ReplayRule } from './descriptor.ts';
import { keywords } from './keywords.ts';
import { listings } from './listings.ts';
import { rankings } from './rankings.ts';
import { reference } from './reference.ts';
import { reviews } from './reviews.ts';

export type {
  BusinessRead,
  CatalogStream,
  RemovalPolicy,
  ReplayRule,
  StreamDescriptor,
} from './descriptor.ts';

/** In the order a run starts a business's reads, and the catalog lists its streams. */
export const STREAM_DESCRIPTORS = [
  businesses,
  listings,
  reviews,
  rankings,
  keywords,
  reference,
] as const;

type Descriptor = (typeof STREAM_DESCRIPTORS)[number];
export type Stream = Descriptor['name'];

/** What a run can fetch. `businesses` is the full profile read; the list is always read. */
export const STREAMS: readonly Stream[] = STREAM_DESCRIPTORS.map((d) => d.name);

function streamDescriptor(name: Stream): Descriptor {
  return STREAM_DESCRIPTORS.find((d) => d.name === name) as Descriptor;
}

/** The streams read per business: what the re-sync after a write command syncs again. */
export const BUSINESS_STREAMS: readonly Stream[] = STREAM_DESCRIPTORS.filter(
  (d) => d.scope === 'business',
).map((d) => d.name);

/** One business read, with the stream it belongs to. */
type ReadOf<D extends Descriptor> = D['reads'][number] & { stream: D['name'] };
export type BusinessReadEntry = { [N in Stream]: ReadOf<Extract<Descriptor, { name: N }>> }[Stream];

/** Every read of a business, in the order a run starts them. */
export const BUSINESS_READS: readonly BusinessReadEntry[] = STREAM_DESCRIPTORS.flatMap((d) =>
  d.reads.map((r) => ({ ...r, stream: d.name }) as BusinessReadEntry),
);

/** The reads whose records carry global ids, with how to read them off a record (`claims`). */
export const CLAIMING_READS: ReadonlyMap<string, (record: unknown) => Iterable<string>> = new Map(
  STREAM_DESCRIPTORS.flatMap((d) => {
    const claims = (d as { claims?: (record: never) => Iterable<string> }).claims;
    return claims
      ? d.reads.map((r) => [r.read, claims as (record: unknown) => Iterable<string>] as const)
      : [];
  }),
);

/** A business read's name: a `business_answers.read` (docs/warehouse.md, "Answers applied"). */
export type AnswerRead = BusinessReadEntry['read'];
/** What a read's operation answers. */
export type AnswerValue<R extends AnswerRead> = Awaited<
  ReturnType<Extract<BusinessReadEntry, { read: R }>['fetch']>
>;

/** The reads of a business, each with its own body (the answers record's rows). */
export const ANSWER_READS: readonly AnswerRead[] = BUSINESS_READS.map((r) => r.read);

type DailyDescriptor = Extract<Descriptor, { daily: true }>;
/** Reads whose stream writes a row per UTC day: applied only on the day written for. */
export type DailyRead = DailyDescriptor['reads'][number]['read'];
export const DAILY_READS: readonly DailyRead[] = STREAM_DESCRIPTORS.filter(
  (d): d is DailyDescriptor => d.daily,
).flatMap((d) => d.reads.map((r) => r.read));

/**
 * The record streams: every per-business stream but the profile (`businesses`, whose read
 * is the business row itself, src/warehouse/tables/businesses.ts). The sync builds each one's
 * records from its reads (`streamRecords`) and the warehouse writes them with the stream's
 * writer (src/warehouse/write/stream-writers.ts), in the order of that registry.
 */
type RecordDescriptor = Exclude<Extract<Descriptor, { scope: 'business' }>, { name: 'businesses' }>;
export type RecordStream = RecordDescriptor['name'];
export const RECORD_STREAMS: readonly RecordDescriptor[] = STREAM_DESCRIPTORS.filter(
  (d): d is RecordDescriptor => d.scope === 'business' && d.name !== 'businesses',
);

/** The record of a list read (its `ListResult`'s), as the client normalised it. */
type ReadRecord<R extends AnswerRead> = AnswerValue<R> extends ListResult<infer T> ? T : never;
type RecordOf<D extends RecordDescriptor> = D extends {
  records: (byRead: never) => readonly (infer T)[];
}
  ? T
  : ReadRecord<D['reads'][number]['read']>;
/** What a record stream's writer writes: one of its records. */
export type StreamRecord<S extends RecordStream> = RecordOf<Extract<RecordDescriptor, { name: S }>>;
/**
 * A business's records this run, by record stream. Absent or null: not written this run
 * (not asked for, failed, or every read as its rows already are), its stored rows untouched.
 */
export type StreamRecords = { [S in RecordStream]?: readonly StreamRecord<S>[] | null };

/**
 * A record stream's records from each of its reads' records (every read succeeded): the
 * descriptor's `records`, or its one read's.
 */
export function streamRecords<S extends RecordStream>(
  stream: S,
  byRead: Readonly<Partial<Record<AnswerRead, readonly unknown[]>>>,
): readonly StreamRecord<S>[] {
  const d: { reads: readonly BusinessRead[]; records?: (byRead: never) => readonly unknown[] } =
    streamDescriptor(stream);
  const records = d.records as ((byRead: unknown) => readonly unknown[]) | undefined;
  const read = d.reads[0]?.read as AnswerRead;
  return (records ? records(byRead) : (byRead[read] ?? [])) as readonly StreamRecord<S>[];
}

/** The `quarantine.stream` a read's refused records go under: its own, or its stream's name. */
export function quarantineStream(entry: BusinessReadEntry): string {
  return (entry as BusinessRead).quarantineAs ?? entry.stream;
}

/**
 * The stream a `quarantine.stream` name is a record of (`social` is a review), or
 * undefined for a name of no stream.
 */
export function streamOfQuarantined(name: string): Stream | undefined {
  if ((STREAMS as readonly string[]).includes(name)) return name as Stream;
  return BUSINESS_READS.find((entry) => quarantineStream(entry) === name)?.stream;
}

/** The streams whose reads mark rows gone, and so are guarded against a volume drop. */
export type RemovalStream = Extract<Descriptor, { removals: 'held-on-volume-drop' }>['name'];

export const REMOVAL_STREAMS: readonly RemovalStream[] = STREAM_DESCRIPTORS.filter(
  (d): d is Extract<Descriptor, { removals: 'held-on-volume-drop' }> =>
    d.removals === 'held-on-volume-drop',
).map((d) => d.name);

/** The removal policy of a stream (docs/warehouse.md, "How removals work"). */
export function removalPolicy(stream: Stream): RemovalPolicy {
  return streamDescriptor(stream).removals;
}

/** How replay rebuilds a stream (docs/replay.md). */
export function replayRule(stream: Stream): ReplayRule {
  return streamDescriptor(stream).replay;
}

/** The Airbyte catalog's streams (docs/airbyte.md, "Streams"), in the descriptors' order. */
export type CatalogStreamName = Descriptor['catalog'][number]['name'];
export const CATALOG_STREAMS: readonly CatalogStream<CatalogStreamName>[] =
  STREAM_DESCRIPTORS.flatMap((d) => d.catalog as readonly CatalogStream<CatalogStreamName>[]);
