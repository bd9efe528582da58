/**
 * What one stream is, in one entry (docs/contributing.md, "Adding a stream"), the way
 * src/config/settings.ts is one entry per setting: every loop over streams reads the list
 * in src/streams/index.ts, never a list of its own.
 *
 * Glossary:
 * - a *stream* is what `sync --streams` names: a unit a run fetches and writes together;
 * - a *read* is one upstream answer of a business (`reviews` has two: reviews and social
 *   items); its body hash is what `business_answers` records, one row per business and read
 *   (docs/warehouse.md, "Answers applied");
 * - a *record stream* is a per-business stream other than the profile (`businesses` is the
 *   business row itself): the sync hands its records to the stream's writer
 *   (src/warehouse/write/stream-writers.ts);
 * - a *catalog stream* is what the Airbyte source offers (docs/airbyte.md, "Streams"): a
 *   stream may offer several (reviews and review_responses come from one answer).
 *
 * This folder imports the upstream client's public face (src/api/index.ts), the settings'
 * names and zod, nothing else of ours: the warehouse, the sync and the Airbyte source all
 * read it, so it can import none of them.
 */
import type { z } from 'zod';
import type { ApiClient, CallOptions, Credential, OperationName } from '../api/index.ts';
import type { AnswerBoundSettings } from '../config/index.ts';

/** One upstream read of a business: the answer `business_answers` keeps a body hash of. */
export interface BusinessRead<Read extends string = string, Value = unknown> {
  /** The read's name: its `business_answers.read`. */
  read: Read;
  operation: OperationName;
  fetch(
    api: ApiClient,
    credential: Credential,
    businessId: number,
    options: CallOptions,
  ): Promise<Value>;
  /**
   * The `quarantine.stream` the records this read refuses go under, when not the stream's
   * name (the socials read's are `social`).
   */
  quarantineAs?: string;
}

/** A stream as the Airbyte catalog lists it (docs/airbyte.md, "Streams"). */
export interface CatalogStream<Name extends string = string> {
  name: Name;
  /** The record's schema; `discover` gives its JSON schema (zod 4's `z.toJSONSchema`). */
  schema: z.ZodObject;
  primaryKey: string[][];
  /** Incremental streams only: the cursor field. */
  cursor?: string;
  /**
   * A stream whose records come from one read of each business: the read, and its records
   * from the read's answer. Absent: the source reads it its own way (reviews with their
   * responses, the incremental rankings, the reference data).
   */
  perBusiness?: {
    read: string;
    records(account: string, businessId: number, answer: never): Record<string, unknown>[];
  };
}

/**
 * What a read that would mark gone most of the stream's stored rows does
 * (docs/warehouse.md, "How removals work"): `held-on-volume-drop`, its removals wait for the
 * next run to confirm them; `none`, the stream marks nothing gone.
 */
export type RemovalPolicy = 'held-on-volume-drop' | 'none';

/**
 * How replay (docs/replay.md) rebuilds the stream from the raw zone: `business-reads`, from
 * each committed business's kept reads; `run-reads`, only when the kept run read it (the
 * reference data a run reads once, not per business).
 */
export type ReplayRule = 'business-reads' | 'run-reads';

export interface StreamDescriptor<
  Name extends string = string,
  Reads extends readonly BusinessRead[] = readonly BusinessRead[],
  Catalog extends readonly CatalogStream[] = readonly CatalogStream[],
> {
  name: Name;
  /** For `--help` and the docs. */
  description: string;
  /**
   * `business`: read per business, written in the business's transaction (and so synced
   * again after a write command); `run`: read once per run (reference data).
   */
  scope: 'business' | 'run';
  /** The per-business reads, in the order they are started; empty for a `run` stream. */
  reads: Reads;
  /** Operations read once per run (`run` scope), for the docs. */
  runOperations?: readonly OperationName[];
  /**
   * The stream writes a row per UTC day (listings' `listing_accuracy_days`; ranks' day
   * element of `rank_months`): its body counts as applied only on the day it was written for.
   */
  daily: boolean;
  /**
   * The settings that bound one of its answers (docs/configuration.md, "Limits"): only
   * the settings table's answer bounds type-check here.
   */
  bounds: readonly AnswerBoundSettings[keyof AnswerBoundSettings][];
  /**
   * A record stream's records of one business from its reads' records, by read name, when
   * every read succeeded; absent: the one read's records. The sync builds the stream's
   * records with it (src/sync/business.ts), and the writer writes them.
   */
  records?: (byRead: never) => readonly unknown[];
  /**
   * The global ids one record of its reads carries (ids the upstream may show under two
   * businesses: docs/warehouse.md, "Rules as implemented", "Ids under two businesses"), each as
   * `<kind>:<id>`; absent: its records carry none. The sync lets the lowest business that
   * carries one of them write first (src/sync/write-order.ts).
   */
  claims?: (record: never) => Iterable<string>;
  removals: RemovalPolicy;
  replay: ReplayRule;
  catalog: Catalog;
}

/** Keeps a descriptor's literal types (names, reads, policies) for what derives from it. */
export function defineStream<const D extends StreamDescriptor>(descriptor: D): D {
  return Object.freeze(descriptor);
}
