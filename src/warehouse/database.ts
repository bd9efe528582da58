/**
 * The warehouse's tables as Kysely sees them: `Database`, one interface per table, and the
 * row shapes (`BusinessRow = Selectable<BusinessesTable>`) the rest of the code reads. The
 * tables a writer module writes have their interface in that module, beside the values it
 * writes (businesses.ts, listings.ts, reviews.ts, keywords.ts, rankings.ts), so a new
 * column is one writer file (docs/contributing.md, "Adding a column"); `Database` names
 * them from there, and a stream writer's module declares its own tables in it (see
 * `Database`). The column types below are shared by every table.
 *
 * Type mapping (the same on pg and PGlite, see `connection.ts`):
 * - bigint ids and counts come back as JS numbers (upstream ids are far below 2^53);
 * - numeric (review ratings) comes back as a number;
 * - timestamptz comes back as a Date; date (`observed_on`) as a `YYYY-MM-DD` string;
 * - jsonb comes back parsed; it is written as a JSON string (`JSON.stringify`), because
 *   the two drivers serialise a JS array parameter differently (pg: a Postgres array).
 *
 * The column lists are the public warehouse contract in docs/warehouse.md plus the additions
 * documented in docs/warehouse.md.
 */
import type { ColumnType, Generated, Kysely, Selectable, Transaction } from 'kysely';
import type { AnyShape, RowOf, RowSqlOf } from '../api/index.ts';
import type { BusinessesTable, BusinessVersionsTable } from './tables/businesses.ts';
import type { CountriesTable, StatesTable, SubCategoriesTable } from './tables/reference-data.ts';

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A jsonb column: parsed on read, a JSON string on write. */
export type Json = ColumnType<JsonValue, string, string>;
/** A jsonb column with a database default. */
export type JsonWithDefault = ColumnType<JsonValue, string | undefined, string>;
/** A timestamptz column: a Date on read; a Date or ISO string on write. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamptz column with a database default (`now()`). */
export type TimestampWithDefault = ColumnType<Date, Date | string | undefined, Date | string>;
/** A numeric column, read as a JS number. */
export type Numeric = ColumnType<number, number | string, number | string>;

/**
 * The columns of a table a record's shape fills (src/api/record-shape.ts), as Kysely sees
 * them: timestamptz as `Timestamp`, numeric as `Numeric`, jsonb as `JsonWithDefault`, text
 * as `string` (a field's list of values is the schema's to check, not the table's), the
 * rest as the row holds them. A writer's table type extends it with the columns it adds.
 */
export type TableColumns<S extends AnyShape> = {
  [K in keyof RowOf<S>]: ColumnOf<RowSqlOf<S>[K], RowOf<S>[K]>;
};
type ColumnOf<Q, V> = Q extends 'timestamptz'
  ? Timestamp | Extract<V, null>
  : Q extends 'numeric'
    ? Numeric | Extract<V, null>
    : Q extends 'jsonb'
      ? JsonWithDefault
      : Q extends 'text'
        ? string | Extract<V, null>
        : V;

export interface AccountsTable {
  name: string;
  user_email: string;
  base_url: string;
  last_synced_at: Timestamp | null;
  created_at: TimestampWithDefault;
  updated_at: TimestampWithDefault;
  /**
   * Added (0016): the business lists held on a volume drop, by list key (`HeldRemovals`'s
   * entry shape, `businessListKey` in held-removals.ts); null when none is held.
   */
  removals_held: ColumnType<JsonValue | null, string | null | undefined, string | null>;
}

export interface WebhookEventsTable {
  event_key: string;
  event: string | null;
  account_id: number | null;
  /** As delivered: a numeric string for location-scoped events, null for brand-scoped. */
  location_id: string | null;
  emitted_at: Timestamp | null;
  received_at: TimestampWithDefault;
  payload: Json;
}

export interface SocialPostBoostsTable {
  ad_run_id: string;
  event_key: string;
  account_id: number | null;
  location_id: string | null;
  post_id: string | null;
  social_profile_id: string | null;
  platform: string | null;
  boost_state: string | null;
  is_boost: boolean | null;
  emitted_at: Timestamp | null;
  received_at: TimestampWithDefault;
}

export interface AlertsTable {
  alert_id: Generated<number>;
  kind: string;
  dedupe_key: string;
  account_name: string | null;
  /** Null (migration 0007) for `sync_failed` and `sync_stale`: a run or an account. */
  business_id: number | null;
  listing_id: number | null;
  site_name: string | null;
  previous_status: string | null;
  status: string;
  detected_at: Timestamp;
  delivered_at: Timestamp | null;
  attempts: Generated<number>;
  last_error: string | null;
  /** Added: when a failed delivery may be retried; null means now. */
  next_attempt_at: Timestamp | null;
  run_id: string | null;
  /** Migration 0002: names of the sinks that took the alert (`slack`, `webhook`). */
  delivered_sinks: JsonWithDefault;
  /** Migration 0004: the review response request of a `review_response_failed` alert. */
  request_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: the keyword of a `rank_drop`. */
  keyword: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: the review of a `low_rating_review`. */
  review_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0007: what changed (ranks, a rating, a run's status), per kind. */
  details: JsonWithDefault;
  /**
   * Migration 0018: names of the sinks that will not get the alert, because it was raised
   * before they were configured (docs/alerts.md, "A sink added later").
   */
  skipped_sinks: JsonWithDefault;
}

/**
 * Migration 0018: one row per sink name, written the first time a dispatcher runs with it
 * (docs/warehouse.md, "alert_sinks").
 */
export interface AlertSinksTable {
  sink: string;
  first_seen_at: Timestamp;
  /** ALERT_BACKLOG when the sink was first seen. */
  backlog: 'skip' | 'send';
  /** How many alerts raised before it were marked as skipping it. */
  skipped: ColumnType<number, number | undefined, number>;
}

/** Migration 0004: a review response submitted through the command line (operation 9). */
export interface ReviewResponseRequestsTable {
  request_id: string;
  account_name: string;
  business_id: number;
  review_id: string;
  content: string;
  /** The last status operation 10 answered (`Created` at submission). */
  status: string;
  submitted_at: Timestamp;
  status_checked_at: Timestamp | null;
  /** When it reached `Completed` or `Failed`; null while open (polled by every sync). */
  completed_at: Timestamp | null;
  /** Why the last status read failed; null after a successful read. */
  last_error: string | null;
}

/** Migration 0004: each status a request was seen in, first observation first. */
export interface ReviewResponseRequestEventsTable {
  request_id: string;
  status: string;
  observed_at: Timestamp;
  previous_status: string | null;
  run_id: string | null;
}

export type SyncRunStatus = 'running' | 'succeeded' | 'partial' | 'failed' | 'interrupted';

export interface SyncRunsTable {
  run_id: string;
  started_at: TimestampWithDefault;
  finished_at: Timestamp | null;
  status: ColumnType<SyncRunStatus, SyncRunStatus, SyncRunStatus>;
  trigger: string;
  streams: Json;
  accounts: Json;
  shard: string | null;
  stats: Json | null;
  error: string | null;
  /** Migration 0015: the settings that shaped the run's writes (`RunSettings`); null before. */
  settings: ColumnType<JsonValue | null, string | null | undefined, string | null>;
  /** Migration 0020: the run's OpenTelemetry trace id when traces were on; else null. */
  trace_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface QuarantineTable {
  quarantine_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  stream: string;
  location: string | null;
  reason: string;
  payload: Json | null;
  quarantined_at: TimestampWithDefault;
  /** Set when a replay loaded the record after all (migration 0011). */
  recovered_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/**
 * Every table and view Kysely queries, by name. The tables a stream writer writes are
 * declared in its module, beside their types (`declare module './database.ts' { interface
 * Database { … } }` in listings.ts, reviews.ts, keywords.ts, rankings.ts): a new stream's
 * writer adds its own, and this file does not change (docs/contributing.md, "Adding a
 * stream"). The rest are listed here.
 */
export interface Database {
  accounts: AccountsTable;
  businesses: BusinessesTable;
  business_versions: BusinessVersionsTable;
  countries: CountriesTable;
  states: StatesTable;
  sub_categories: SubCategoriesTable;
  webhook_events: WebhookEventsTable;
  social_post_boosts: SocialPostBoostsTable;
  alerts: AlertsTable;
  alert_sinks: AlertSinksTable;
  sync_runs: SyncRunsTable;
  quarantine: QuarantineTable;
  review_response_requests: ReviewResponseRequestsTable;
  review_response_request_events: ReviewResponseRequestEventsTable;
  raw_bodies: RawBodiesTable;
  raw_reads: RawReadsTable;
  raw_read_sets: RawReadSetsTable;
  business_answers: BusinessAnswersTable;
}

/**
 * One distinct upstream body, compressed (migration 0011; docs/warehouse.md, "Raw zone").
 * Its hashes are the sha256's 32 bytes since migration 0035: the raw zone's statements
 * convert them to and from the program's hex (`encode(…, 'hex')`, `decode(…, 'hex')`).
 */
export interface RawBodiesTable {
  body_hash: Uint8Array;
  encoding: string;
  size: number;
  bytes: Uint8Array;
  first_seen_at: ColumnType<Date, Date | undefined, never>;
  /** Migration 0032: a delta's base (a body kept whole); null for a body kept whole. */
  base_hash: Uint8Array | null;
}

/**
 * One upstream read of a sync: what was asked, when, the status, and its body's hash. A
 * view since migration 0035 (one row per read of `raw_read_sets`): read it, write sets.
 */
export interface RawReadsTable {
  read_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  operation: string;
  request: string;
  attempt: number;
  status: number;
  observed_at: Date;
  body_hash: string;
  /** Migration 0015: a read of a business whose transaction never committed: not replayed. */
  uncommitted: ColumnType<boolean, boolean | undefined, boolean>;
}

/**
 * The reads of one business and night (or of the credential, at one time), as stored
 * (migration 0035; docs/warehouse.md, "Raw zone"). Written by src/raw/reads.ts alone;
 * everything else reads the `raw_reads` view.
 */
export interface RawReadSetsTable {
  set_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  observed_at: Date;
  uncommitted: ColumnType<boolean, boolean | undefined, boolean>;
  aged_out: ColumnType<boolean, boolean | undefined, boolean>;
  /**
   * A line per read, in read order: `operation request attempt status`, a request under
   * `/businesses/<business_id>` written `~` and the rest.
   */
  reads: string;
  /** The reads' sha256, 32 bytes each, concatenated in read order. */
  body_hashes: Uint8Array;
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

/** What a reader or writer runs on: the connection, or a transaction opened on it. */
export type Db = Kysely<Database> | Transaction<Database>;

/** The row shapes read outside this file (a stored row, as Kysely returns it). */
export type BusinessRow = Selectable<BusinessesTable>;
export type CountryRow = Selectable<CountriesTable>;
export type StateRow = Selectable<StatesTable>;
export type SubCategoryRow = Selectable<SubCategoriesTable>;
export type ReviewResponseRequestRow = Selectable<ReviewResponseRequestsTable>;
export type ReviewResponseRequestEventRow = Selectable<ReviewResponseRequestEventsTable>;
