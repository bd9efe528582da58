/**
 * The streams, one descriptor each (src/streams/descriptor.ts says what a descriptor
 * holds; docs/contributing.md, "Adding a stream"). Everything that iterates streams reads this list:
 * `sync --streams` and its help, the reads of a business, the re-sync after a write
 * command, the answers record (`business_answers`), the volume guard's removal policy,
 * replay's rule, and the Airbyte catalog. A new stream is an entry here and its file.
 */
import { businesses } from './businesses.ts';
import type { CatalogStream, RemovalPolicy, ReplayRule } from './descriptor.ts';
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

export function streamDescriptor(name: Stream): Descriptor {
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

/** A business read's name: a `business_answers.<read>_hash` column (docs/warehouse.md). */
export type AnswerRead = BusinessReadEntry['read'];
/** What a read's operation answers. */
export type AnswerValue<R extends AnswerRead> = Awaited<
  ReturnType<Extract<BusinessReadEntry, { read: R }>['fetch']>
>;

/** The reads of a business, each with its own body (the answers record's columns). */
export const ANSWER_READS: readonly AnswerRead[] = BUSINESS_READS.map((r) => r.read);

type DailyDescriptor = Extract<Descriptor, { daily: true }>;
/** Reads whose stream writes a row per UTC day: applied only on the day written for. */
export type DailyRead = DailyDescriptor['reads'][number]['read'];
export const DAILY_READS: readonly DailyRead[] = STREAM_DESCRIPTORS.filter(
  (d): d is DailyDescriptor => d.daily,
).flatMap((d) => d.reads.map((r) => r.read));

/** The streams whose reads mark rows gone, and so are guarded against a volume drop. */
export type RemovalStream = Extract<Descriptor, { removals: 'held-on-volume-drop' }>['name'];

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

/** `--streams`' help: the names, comma-separated. */
export function streamList(): string {
  return STREAMS.join(', ');
}
