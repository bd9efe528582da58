/**
 * One shape per record (docs/contributing.md, "Adding a column"). A stream's record is
 * declared once, in its operation's module: the zod schema gives the normalised value
 * (`Listing`, `Review`, …), and `recordShape<T>()({...})` beside it gives each of that
 * value's fields its column, one entry a field: the PostgreSQL type, the Airbyte record's
 * zod type, and an override only where the column differs from the field (a rename such as
 * `id` → `listing_id`, a derived value such as `responses` → `response_count`, a field the
 * table does not store). From the shape derive:
 *
 * - the warehouse row (`rowOf`, `RowOf`): each field under its snake_case name, in the
 *   shape's order (a content hash covers the row's values in that order);
 * - the table's column list with its SQL types (`columnTypesOf`), which a writer spreads into
 *   its `*_COLUMNS` map, and the table's Kysely type (`TableColumns` in
 *   src/warehouse/database.ts);
 * - the Airbyte record and its schema (`recordOf`, `recordSchemaOf`), whose JSON schema
 *   `discover` gives.
 *
 * The type checker holds the shape to its type: a field without a column, a column without a
 * field and a column typed unlike its field (`text` for a field that may be null) each fail
 * `tsc` in the shape's declaration (test/api/record-shape.test.ts), and the places above
 * cannot fall out of step because they are computed from it.
 */
import { z } from 'zod';

/** A column's PostgreSQL type, as written in the cast of its array parameter. */
export type SqlType =
  | 'bigint'
  | 'boolean'
  | 'date'
  | 'double precision'
  | 'integer'
  | 'jsonb'
  | 'numeric'
  | 'text'
  | 'timestamptz'
  | 'uuid';

/**
 * The column of one field of type `V`: stored as `S` in a column of type `Q` (named `N`, or
 * the field's snake_case name), shown as `R` in the Airbyte record.
 */
export interface Column<
  V,
  S = V,
  R = S,
  Q extends SqlType = SqlType,
  N extends string | undefined = string | undefined,
  InRow extends boolean = boolean,
> {
  readonly sql: Q;
  /** The Airbyte record's type of the field (docs/airbyte.md, "Streams"). */
  readonly record: z.ZodType<R>;
  /** The table's name for it, when not the field's snake_case name. */
  readonly name: N;
  /** false: the record shows it but the table does not store it (a key the writer sets). */
  readonly inRow: InRow;
  readonly toRow: ((value: V) => S) | undefined;
  readonly toRecord: ((value: V) => R) | undefined;
  /** A list column's element shape (`columns.listOf`), whose columns the row's JSON holds. */
  readonly of?: AnyShape | undefined;
  /** Type only: holds `V` both ways, so a column fits exactly one field type. */
  readonly field?: V;
  readonly takes?: (value: V) => void;
  /** The same column under the table's name `name`. */
  as<M extends string>(name: M): Column<V, S, R, Q, M, InRow>;
  /** The same column, shown in the record and not stored (the writer sets its own). */
  recordOnly(): Column<V, S, R, Q, N, false>;
}

// biome-ignore lint/suspicious/noExplicitAny: any column of a field, whatever it stores
type AnyColumn = Column<any, any, any, SqlType, string | undefined, boolean>;

function make<V, S, R, Q extends SqlType, N extends string | undefined, InRow extends boolean>(
  parts: Pick<
    Column<V, S, R, Q, N, InRow>,
    'sql' | 'record' | 'name' | 'inRow' | 'toRow' | 'toRecord' | 'of'
  >,
): Column<V, S, R, Q, N, InRow> {
  return {
    ...parts,
    as: (name) => make({ ...parts, name }),
    recordOnly: () => make({ ...parts, inRow: false }),
  };
}

/** A column stored and shown as the field is. */
export function column<V, Q extends SqlType>(
  sql: Q,
  record: z.ZodType<V>,
): Column<V, V, V, Q, undefined, true> {
  return make({ sql, record, name: undefined, inRow: true, toRow: undefined, toRecord: undefined });
}

/** A column whose stored and shown values are computed from the field (`responses` → a count). */
export function derivedColumn<V, S, R, Q extends SqlType>(
  sql: Q,
  record: z.ZodType<R>,
  toRow: (value: V) => S,
  toRecord: (value: V) => R,
  of?: AnyShape,
): Column<V, S, R, Q, undefined, true> {
  return make({ sql, record, name: undefined, inRow: true, toRow, toRecord, of });
}

// The Airbyte record's building blocks: records carry the client's normalised values, ISO
// 8601 text for instants.
const recordText = z.string();
const recordMaybeText = z.string().nullable();
const recordInt = z.int();
const recordInstant = z.iso.datetime({ offset: true }).nullable();
const recordPrecision = z.enum(['day', 'instant']).nullable();

/** The column kinds the records' fields are made of. */
export const columns = {
  text: column('text', recordText),
  maybeText: column('text', recordMaybeText),
  id: column('bigint', recordInt),
  uuid: column('uuid', recordText),
  count: column('integer', z.int().nullable()),
  flag: column('boolean', z.boolean().nullable()),
  boolean: column('boolean', z.boolean()),
  maybeNumber: column('double precision', z.number().nullable()),
  /** An instant: a Date in the row, ISO 8601 text in the record. */
  instant: derivedColumn(
    'timestamptz',
    recordInstant,
    (value: Date | null) => value,
    (value: Date | null) => value?.toISOString() ?? null,
  ),
  /** Whether an instant was a whole day (`day`) or a timestamp (`instant`). */
  precision: column('text', recordPrecision),
  /** Text from a fixed list of values. */
  oneOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    column('text', z.enum(values)),
  maybeOneOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    column('text', z.enum(values).nullable()),
  /** A list of records of another shape, as one jsonb value (a business's hours). */
  listOf: <S extends AnyShape>(shape: S) =>
    derivedColumn(
      'jsonb',
      z.array(recordSchemaOf(shape, {})) as unknown as z.ZodType<RecordOf<S>[]>,
      (values: ValueOf<S>[]) => values.map((value) => rowOf(shape, value)),
      (values: ValueOf<S>[]) => values.map((value) => recordOf(shape, value)),
      shape,
    ),
} as const;

/** Every field of `T`, each with its column. */
export type ColumnsOf<T> = {
  // biome-ignore lint/suspicious/noExplicitAny: what the field becomes is the column's own
  readonly [K in keyof T]-?: Column<T[K], any, any, SqlType, string | undefined, boolean>;
};

/** A record's fields and their columns, in the order the row and the record list them. */
export interface RecordShape<T, C extends ColumnsOf<T> = ColumnsOf<T>> {
  readonly columns: C;
  readonly fields: readonly (keyof T & string)[];
  /** Type only: the value the shape is of. */
  readonly value?: T;
}

/**
 * The shape of `T`: `recordShape<Listing>()({ id: columns.id.as('listing_id'), … })`. Every
 * field of `T` has exactly one entry, typed as the field is; an entry for a field `T` lacks
 * fails too. The entries' order is the row's and the record's.
 */
export function recordShape<T>() {
  return <const C extends ColumnsOf<T>>(
    shape: C & { readonly [K in Exclude<keyof C, keyof T>]: never },
  ): RecordShape<T, C> => ({
    columns: shape,
    fields: Object.keys(shape) as (keyof T & string)[],
  });
}

/** `siteName` → `site_name`. */
export type SnakeCase<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeCase<T>}`
  : S;

export function snakeCase(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Any record's shape. */
// biome-ignore lint/suspicious/noExplicitAny: matches any shape
export type AnyShape = RecordShape<any, any>;
type ColumnsIn<S> = S extends RecordShape<infer _T, infer C> ? C : never;
type RowKey<K, C> = C extends { inRow: false }
  ? never
  : C extends { name: infer N extends string }
    ? N
    : SnakeCase<K & string>;
type Stored<C> = C extends Column<infer _V, infer S, infer _R> ? S : never;
type Shown<C> = C extends Column<infer _V, infer _S, infer R> ? R : never;
type Sql<C> = C extends { sql: infer Q extends SqlType } ? Q : never;

/** The warehouse row of a record: its stored columns and their values. */
export type RowOf<S extends AnyShape> = {
  -readonly [K in keyof ColumnsIn<S> as RowKey<K, ColumnsIn<S>[K]>]: Stored<ColumnsIn<S>[K]>;
};
/** The PostgreSQL type of each column of the row, as a type (see `TableColumns`). */
export type RowSqlOf<S extends AnyShape> = {
  [K in keyof ColumnsIn<S> as RowKey<K, ColumnsIn<S>[K]>]: Sql<ColumnsIn<S>[K]>;
};
/** The Airbyte record of a record (without the keys the stream adds, such as `account`). */
export type RecordOf<S extends AnyShape> = {
  -readonly [K in keyof ColumnsIn<S> as SnakeCase<K & string>]: Shown<ColumnsIn<S>[K]>;
};
/** The value a shape is of: `Country` for `countryShape`. */
export type ValueOf<S> = S extends RecordShape<infer T, infer _C> ? T : never;

/** Each field's name in the output and the conversion of its value, if any. */
type Fields = [field: string, name: string, convert: ((value: unknown) => unknown) | undefined][];

/** Makes the object of a field list from a value. */
type Build = (value: unknown) => Record<string, unknown>;

interface Compiled {
  /** The row's: each field's column name and `toRow`. */
  row: Fields;
  buildRow: Build;
  /** The record's: each field's snake_case key and `toRecord`. */
  record: Fields;
  buildRecord: Build;
}

// The field lists and their builders, made once per shape: a row is built per record of
// every sync.
const compiled = new WeakMap<AnyShape, Compiled>();

function compile(shape: AnyShape): Compiled {
  let done = compiled.get(shape);
  if (done) return done;
  const row: Fields = [];
  const record: Fields = [];
  for (const field of shape.fields) {
    const c = shape.columns[field] as AnyColumn;
    if (c.inRow) row.push([field, c.name ?? snakeCase(field), c.toRow]);
    record.push([field, snakeCase(field), c.toRecord]);
  }
  done = { row, buildRow: builder(row), record, buildRecord: builder(record) };
  compiled.set(shape, done);
  return done;
}

/**
 * `value`'s fields under their names in `fields`, in that order, each through its conversion
 * when it has one: what a row and a record are both made by.
 */
function project(value: unknown, fields: Fields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  for (const [field, name, convert] of fields) {
    out[name] = convert ? convert(source[field]) : source[field];
  }
  return out;
}

/**
 * `project` over one field list, as a function whose body is the object written out as a
 * literal, made once per list. V8 allocates such a literal whole, every property in the
 * object, where `project` fills one key at a time and reallocates the object's property
 * store as it grows: 300,000 listing rows are built in about 20 ms against 140 ms, with a
 * sixth of the garbage (docs/benchmarks.md). The names and fields are a shape's, written in
 * src/api, never a response's; each is quoted by `JSON.stringify`. Where the process may
 * not compile code from strings (`--disallow-code-generation-from-strings`), `project`.
 */
function builder(fields: Fields): Build {
  if (fields.some(([field, name]) => field === '__proto__' || name === '__proto__')) {
    throw new Error('A record shape cannot have a field or column named __proto__.');
  }
  const converts = fields.map(([, , convert]) => convert);
  const properties = fields.map(([field, name, convert], i) => {
    const read = `v[${JSON.stringify(field)}]`;
    return `${JSON.stringify(name)}: ${convert ? `c[${i}](${read})` : read}`;
  });
  try {
    return new Function('c', `return (v) => ({ ${properties.join(', ')} });`)(converts) as Build;
  } catch {
    return (value) => project(value, fields);
  }
}

/** A record's warehouse row, its columns in the shape's order. */
export function rowOf<S extends AnyShape>(shape: S, value: ValueOf<S>): RowOf<S> {
  return compile(shape).buildRow(value) as RowOf<S>;
}

/** The row's columns and their PostgreSQL types, in the row's order. */
export function columnTypesOf<S extends AnyShape>(
  shape: S,
): { readonly [K in keyof RowSqlOf<S>]: RowSqlOf<S>[K] } {
  const types: Record<string, SqlType> = {};
  for (const [field, name] of compile(shape).row) {
    types[name] = (shape.columns[field] as AnyColumn).sql;
  }
  return types as RowSqlOf<S>;
}

/** A record as the Airbyte source emits it (the stream's keys, such as `account`, aside). */
export function recordOf<S extends AnyShape>(shape: S, value: ValueOf<S>): RecordOf<S> {
  return compile(shape).buildRecord(value) as RecordOf<S>;
}

type RecordFields<S extends AnyShape> = {
  [K in keyof ColumnsIn<S> as SnakeCase<K & string>]: z.ZodType<Shown<ColumnsIn<S>[K]>>;
};

/**
 * The Airbyte record's schema: the stream's own keys (`before`: `account`, `business_id`),
 * then the shape's fields, then `after`; strict, as the catalog's are.
 */
export function recordSchemaOf<
  S extends AnyShape,
  B extends z.ZodRawShape,
  A extends z.ZodRawShape = Record<never, never>,
>(shape: S, before: B, after?: A): z.ZodObject<B & RecordFields<S> & A, z.core.$strict> {
  const fields: Record<string, z.ZodType> = {};
  for (const [field, key] of compile(shape).record) {
    fields[key] = (shape.columns[field] as AnyColumn).record;
  }
  const schema = z.object({ ...before, ...fields, ...after }).strict();
  madeFrom.set(schema, {
    shape,
    keys: [...Object.keys(before), ...Object.keys(after ?? {})],
  });
  return schema as unknown as z.ZodObject<B & RecordFields<S> & A, z.core.$strict>;
}

/** What a record schema was made of: its shape, and the stream's own keys around it. */
export interface RecordSchemaParts {
  shape: AnyShape;
  /** The keys the stream adds (`account`, `business_id`, a rank's `day`). */
  keys: string[];
}

const madeFrom = new WeakMap<z.ZodType, RecordSchemaParts>();

/**
 * The shape and keys `recordSchemaOf` made `schema` of; undefined for a schema it did not
 * make. Tests and docs checks read a catalog stream's columns off it (docs/airbyte.md,
 * "Column types").
 */
export function recordSchemaParts(schema: z.ZodType): RecordSchemaParts | undefined {
  return madeFrom.get(schema);
}

/** Whether `value` is a record's shape (`recordShape<T>()({...})`). */
export function isRecordShape(value: unknown): value is AnyShape {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as AnyShape).fields) &&
    typeof (value as AnyShape).columns === 'object'
  );
}

/**
 * A shape's column list as text, one line a field in the shape's order: the field, its
 * table column (`-` when the table does not store it), its SQL type, `derived` when the
 * row holds a value computed from the field, and a list column's element shape. The answers stamp digests it
 * (src/warehouse/write/applied-answers.ts): a column added, renamed, retyped or derived otherwise
 * moves it. Only what decides a row: not the Airbyte record's JSON schema, whose
 * descriptions and zod's own patterns and bounds would move the stamp, and re-apply every
 * answer, with no row changed.
 */
export function describeShape(shape: AnyShape): string[] {
  return shape.fields.map((field: string) => {
    const c = shape.columns[field] as AnyColumn;
    const name = c.inRow ? (c.name ?? snakeCase(field)) : '-';
    const of = c.of ? ` of (${describeShape(c.of).join('; ')})` : '';
    return `${field} ${name} ${c.sql}${c.toRow ? ' derived' : ''}${of}`;
  });
}
