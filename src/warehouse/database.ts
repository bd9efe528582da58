/**
 * The warehouse's tables as Kysely sees them: `Database`, which every table's owner fills
 * with its own tables (see `Database`), and the column types shared by every table. A
 * table's interface and row shape (`BusinessRow = Selectable<BusinessesTable>`) live in the
 * module that writes it, beside the values it writes, so a new column is one file
 * (docs/contributing.md, "Adding a column"). This file imports no table's type.
 *
 * Type mapping (the same on pg and PGlite, see `driver/type-parsers.ts`):
 * - bigint ids and counts come back as JS numbers (upstream ids are far below 2^53);
 * - numeric (review ratings) comes back as a number;
 * - timestamptz comes back as a Date; date (`observed_on`) as a `YYYY-MM-DD` string;
 * - jsonb comes back parsed; it is written as a JSON string (`JSON.stringify`), because
 *   the two drivers serialise a JS array parameter differently (pg: a Postgres array).
 *
 * The column lists are the public warehouse contract in docs/warehouse.md plus the additions
 * documented in docs/warehouse.md.
 */
import type { ColumnType, Kysely, Transaction } from 'kysely';
import type { AnyShape, RowOf, RowSqlOf } from '../api/index.ts';

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

/**
 * Every table and view Kysely queries, by name, each declared by its owner beside its type
 * (`declare module '…/database.ts' { interface Database { … } }`: the stream tables in
 * src/warehouse/tables, the runs' in src/warehouse/runs, the quarantine and the answers
 * record in src/warehouse/write, the raw zone's in src/raw, the outbox's in src/alerts). A
 * new table's owner adds its own, and this file does not change (docs/contributing.md,
 * "Adding a stream").
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each table's owner (declaration merging)
export interface Database {}

/** What a reader or writer runs on: the connection, or a transaction opened on it. */
export type Db = Kysely<Database> | Transaction<Database>;
