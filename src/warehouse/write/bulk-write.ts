/**
 * The two statements every writer is built from, and the child-collection write
 * (`writeChildRows`: upsert, mark gone, count) that listings, reviews, responses and
 * keywords share:
 *
 * - `upsertRows`: one `INSERT … SELECT * FROM unnest($1::<type>[], $2::<type>[], …)
 *   ON CONFLICT (key) DO UPDATE SET … WHERE (compared columns) IS DISTINCT FROM (new)
 *   RETURNING (xmax = 0) AS inserted`.
 * - `insertRows`: the same without the update (history and outbox rows).
 *
 * Each column travels as ONE typed array parameter (its array literal, built here:
 * `columnValues`), so a batch of any size binds as many parameters as it has columns, far
 * from PostgreSQL's 65535 limit. Each statement is built with Kysely's query builder and
 * compiled once per shape (`compiledText`); later calls send that text with their own
 * values (no Kysely tree per call). Typed arrays were
 * measured against the earlier single `jsonb_populate_recordset` parameter (reviews-shaped
 * rows, local PostgreSQL 15): about a third less server CPU and a fifth less client CPU,
 * because no column name is repeated per row and no jsonb tree is built and taken apart.
 * A row whose compared columns are unchanged is not rewritten: it counts as unchanged.
 * `xmax = 0` holds only for a tuple this statement inserted; an updated tuple carries the
 * updating transaction's id.
 *
 * Row objects use the column names. Dates may be given as Date objects; jsonb columns
 * take plain JS values (not strings); null and undefined are SQL NULL.
 */
import {
  CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  sql,
} from 'kysely';
import type { SqlType } from '../../api/index.ts';
import type { Database } from '../database.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

export type TableName = keyof Database & string;
export type ColumnOf<T extends TableName> = keyof Database[T] & string;
/** A row for the bulk statements: column → value. */
export type BulkRow<T extends TableName> = { [K in ColumnOf<T>]?: unknown };

/**
 * A stream row as a read finds it now: the record's columns (`content`), the business
 * writing it, its content hash, and first and last seen `at` (the upsert keeps a stored
 * row's first seen: `insertOnly`). The writer adds its own columns (the removal mark).
 */
export function seenRow<C extends object>(content: C, businessId: number, hash: string, at: Date) {
  return {
    ...content,
    business_id: businessId,
    content_hash: hash,
    first_seen_at: at,
    last_seen_at: at,
  };
}

/** A column's PostgreSQL type, as written in the cast of its array parameter. */
export type ColumnType = SqlType;

/** Every column a statement writes, key included, with its type, in column order. */
export type ColumnTypes<T extends TableName> = { readonly [K in ColumnOf<T>]?: ColumnType };
/** Every column of the table, with its type: a map the type check holds to the table. */
export type AllColumnTypes<T extends TableName> = { readonly [K in ColumnOf<T>]: ColumnType };

export interface UpsertPlan<T extends TableName> {
  table: T;
  /** The conflict target (primary key or a unique key). */
  key: readonly ColumnOf<T>[];
  /** Every column written, key included. */
  columns: ColumnTypes<T>;
  /** Written when the row is inserted and left alone on update (`first_seen_at`). */
  insertOnly?: readonly ColumnOf<T>[];
  /** The existing row is rewritten only when one of these differs. */
  compare: readonly ColumnOf<T>[];
  /**
   * The column naming the row's owner (`business_id`): a stored row whose owner differs is
   * left as it is, never moved to the writing business. It is not returned, so it counts
   * as unchanged; the writer asks who holds it (reviews.ts, `storedElsewhere`).
   */
  owner?: ColumnOf<T>;
  /**
   * With `owner`: a stored row of another owner is taken over (moved to the writing
   * business) when this column is set on it, i.e. its owner's own read marked it gone
   * (keywords.ts: a keyword moved between businesses).
   */
  takesGone?: ColumnOf<T>;
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
}

type Executor = Kysely<Database>;

// Joins the columns of a composite key: a character that no id or name contains.
const KEY_SEPARATOR = '\u0000';

function keyPart(value: unknown): unknown {
  return value instanceof Date ? value.getTime() : (value ?? null);
}

function keyOf(row: Record<string, unknown>, key: readonly string[]): unknown {
  if (key.length === 1) return keyPart(row[key[0] as string]);
  return key.map((column) => String(keyPart(row[column]))).join(KEY_SEPARATOR);
}

/** The last row per key wins: ON CONFLICT cannot touch one row twice in a statement. */
export function dedupeByKey<R extends Record<string, unknown>>(
  rows: readonly R[],
  key: readonly string[],
): R[] {
  const byKey = new Map<unknown, R>();
  for (const row of rows) byKey.set(keyOf(row, key), row);
  return byKey.size === rows.length ? [...rows] : [...byKey.values()];
}

/** `rows` sorted by `key`: numbers as numbers, anything else as lower-cased text. */
function inKeyOrder<R extends Record<string, unknown>>(rows: R[], key: readonly string[]): R[] {
  const sortKey = (row: R): number | string => {
    const value = keyOf(row, key);
    return typeof value === 'number' ? value : String(value).toLowerCase();
  };
  const keyed = rows.map((row) => ({ row, key: sortKey(row) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map((entry) => entry.row);
}

/**
 * One column of the batch as the text of a PostgreSQL array literal, for its typed
 * parameter (`$n::<type>[]`). Built here rather than by the driver: pg turns a JS array
 * into text element by element (`prepareValue`, then two regular-expression replaces and
 * a string concatenation per element), which was a gigabyte of allocation in a first sync
 * of 1,000 businesses (docs/benchmarks.md); here a number or boolean goes
 * bare, a string is quoted and escaped only when it holds a quote or a backslash, and the
 * literal is joined once. Dates become ISO text (the writers pass the same run-time Date
 * to every row, so it is converted once); jsonb values become their JSON text.
 */
function columnValues(
  rows: readonly Record<string, unknown>[],
  column: string,
  type: ColumnType,
): string {
  const values = new Array<unknown>(rows.length);
  for (let i = 0; i < rows.length; i++) values[i] = (rows[i] as Record<string, unknown>)[column];
  return arrayText(values, type === 'jsonb');
}

/**
 * A list of values as the text of a PostgreSQL array literal (as `columnValues` builds a
 * column's), for a statement's own `${…}::<type>[]` parameter: null and undefined are
 * NULL, numbers and booleans bare, Dates ISO text, anything else quoted text.
 */
export function arrayLiteral(values: readonly unknown[]): string {
  return arrayText(values, false);
}

/** The array literal of `values`; `json`: each non-null value as its JSON text. */
function arrayText(values: readonly unknown[], json: boolean): string {
  const out = new Array<string>(values.length);
  let lastDate: unknown;
  let lastText = '';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === undefined || value === null) out[i] = 'NULL';
    else if (json) out[i] = quoteElement(JSON.stringify(value));
    else if (value instanceof Date) {
      if (value !== lastDate) {
        lastDate = value;
        lastText = `"${value.toISOString()}"`;
      }
      out[i] = lastText;
    } else if (typeof value === 'number' || typeof value === 'boolean') out[i] = String(value);
    else out[i] = quoteElement(String(value));
  }
  return `{${out.join(',')}}`;
}

const NEEDS_ESCAPE = /["\\]/;

/** An array element in double quotes: any text, NULL and the empty string included. */
function quoteElement(text: string): string {
  return NEEDS_ESCAPE.test(text) ? `"${text.replace(/(["\\])/g, '\\$1')}"` : `"${text}"`;
}

/** Any table and column by name: the statements below are built for the table a plan names. */
type AnyTables = Record<string, Record<string, unknown>>;

/**
 * A Kysely that compiles and never runs (no driver behind it), in PostgreSQL's dialect,
 * which both backends speak: the bulk statements are built with it, so a shape's text is
 * the same whichever warehouse first asks for it.
 */
const builder = new Kysely<AnyTables>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** Stands for the `i`th value a statement is sent with, while it is built. */
type Slot = (i: number) => string;
const slot: Slot = (i) => `\u0000value ${i}`;

/**
 * Statement texts by shape (table and plan): each is built and compiled once per process,
 * so a business's statements cost their parameters and not a Kysely tree built and
 * compiled again each time; the text is also what names the prepared statement
 * (src/warehouse/driver/statement-names.ts), so it stays the same for a shape. `build` puts `slot(i)`
 * where the `i`th value goes; the compiled parameters must be the slots in order, so the
 * values sent with the text meet their `$n`.
 */
const statementTexts = new Map<string, string>();

function compiledText(shape: string, build: (slot: Slot) => CompiledQuery): string {
  let text = statementTexts.get(shape);
  if (text === undefined) {
    const compiled = build(slot);
    if (!compiled.parameters.every((value, i) => value === slot(i))) {
      throw new Error(`The statement for ${shape} binds its values out of order: ${compiled.sql}`);
    }
    text = compiled.sql;
    statementTexts.set(shape, text);
  }
  return text;
}

/** `$n::<type>[]`: a column's typed array parameter. The type is one of `ColumnType`. */
function typedArray(value: string, type: ColumnType): RawBuilder<unknown> {
  return sql`${value}::${sql.raw(type)}[]`;
}

/** `select * from unnest($1::t1[], $2::t2[], …)`, a parameter per column in column order. */
function selectUnnest(columns: ColumnTypes<TableName>, slot: Slot) {
  const arrays = Object.values(columns).map((type, i) => typedArray(slot(i), type as ColumnType));
  return builder.selectFrom(sql`unnest(${sql.join(arrays)})`.as('u')).selectAll();
}

function unnestParams(
  rows: readonly Record<string, unknown>[],
  columns: ColumnTypes<TableName>,
): string[] {
  return Object.entries(columns).map(([column, type]) =>
    columnValues(rows, column, type as ColumnType),
  );
}

export async function upsertRows<T extends TableName>(
  db: Executor,
  plan: UpsertPlan<T>,
  rows: readonly BulkRow<T>[],
): Promise<UpsertResult> {
  if (rows.length === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  // A globally keyed table's rows in key order (`owner` set): two businesses' statements
  // writing the same ids take their locks in one order.
  const deduped = dedupeByKey(rows as readonly Record<string, unknown>[], plan.key);
  const unique = plan.owner ? inKeyOrder(deduped, plan.key) : deduped;
  const text = compiledText(
    `upsert\u0000${plan.table}\u0000${JSON.stringify([plan.columns, plan.key, plan.insertOnly, plan.compare, plan.owner, plan.takesGone])}`,
    (slot) => {
      const table: string = plan.table;
      const names = Object.keys(plan.columns);
      const skip = new Set<string>([...plan.key, ...(plan.insertOnly ?? [])]);
      const stored = (c: string) => sql.ref(`${table}.${c}`);
      const excluded = (c: string) => sql.ref(`excluded.${c}`);
      return builder
        .insertInto(table)
        .columns(names)
        .expression(selectUnnest(plan.columns, slot))
        .onConflict((oc) =>
          oc
            .columns(plan.key)
            .doUpdateSet(
              Object.fromEntries(names.filter((c) => !skip.has(c)).map((c) => [c, excluded(c)])),
            )
            .where((eb) => {
              const changed = eb(
                sql`(${sql.join(plan.compare.map(stored))})`,
                'is distinct from',
                sql`(${sql.join(plan.compare.map(excluded))})`,
              );
              // Evaluated on the row as committed: one a concurrent business inserted is seen too.
              if (!plan.owner) return changed;
              const same = eb(stored(plan.owner), '=', excluded(plan.owner));
              return eb.and([
                plan.takesGone ? eb.or([same, eb(stored(plan.takesGone), 'is not', null)]) : same,
                changed,
              ]);
            }),
        )
        .returning((eb) => eb.parens(eb.ref('xmax'), '=', eb.lit(0)).as('inserted'))
        .compile();
    },
  );
  const { rows: written } = await db.executeQuery<{ inserted: boolean }>(
    CompiledQuery.raw(text, unnestParams(unique, plan.columns)),
  );
  const inserted = written.filter((row) => row.inserted).length;
  return {
    inserted,
    updated: written.length - inserted,
    unchanged: unique.length - written.length,
  };
}

/**
 * Appends rows; with `skipConflictsOn`, a row whose key exists already is skipped
 * (`ON CONFLICT DO NOTHING`). Returns the number of rows inserted.
 */
export async function insertRows<T extends TableName>(
  db: Executor,
  table: T,
  columns: ColumnTypes<T>,
  rows: readonly BulkRow<T>[],
  skipConflictsOn?: readonly ColumnOf<T>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const list = skipConflictsOn
    ? dedupeByKey(rows as readonly Record<string, unknown>[], skipConflictsOn)
    : (rows as readonly Record<string, unknown>[]);
  const text = compiledText(
    `insert\u0000${table}\u0000${JSON.stringify([columns, skipConflictsOn])}`,
    (slot) => {
      const insert = builder
        .insertInto(table as string)
        .columns(Object.keys(columns))
        .expression(selectUnnest(columns, slot));
      return (
        skipConflictsOn
          ? insert.onConflict((oc) => oc.columns(skipConflictsOn).doNothing())
          : insert
      ).compile();
    },
  );
  const result = await db.executeQuery(CompiledQuery.raw(text, unnestParams(list, columns)));
  return Number(result.numAffectedRows ?? 0);
}

/** The characters COPY's text format escapes with a backslash, and their escapes. */
const COPY_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
const NEEDS_COPY_ESCAPE = /[\\\n\r\t]/;
const COPY_ESCAPED = /[\\\n\r\t]/g;

function copyField(text: string): string {
  return NEEDS_COPY_ESCAPE.test(text)
    ? text.replace(COPY_ESCAPED, (c) => COPY_ESCAPES[c] as string)
    : text;
}

/**
 * The rows in COPY's text format: a line per row, its columns in `columns` order
 * separated by tabs, `\N` for null and undefined, backslash, newline, carriage return and
 * tab escaped. Values as `columnValues` gives them: numbers and booleans as they print,
 * Dates as ISO text (the same run-time Date converted once), jsonb as its JSON text.
 */
function copyText(
  rows: readonly Record<string, unknown>[],
  columns: ColumnTypes<TableName>,
): string {
  const entries = Object.entries(columns) as [string, ColumnType][];
  const lines = new Array<string>(rows.length);
  const fields = new Array<string>(entries.length);
  let lastDate: unknown;
  let lastText = '';
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Record<string, unknown>;
    for (let c = 0; c < entries.length; c++) {
      const [column, type] = entries[c] as [string, ColumnType];
      const value = row[column];
      if (value === undefined || value === null) fields[c] = '\\N';
      else if (type === 'jsonb') fields[c] = copyField(JSON.stringify(value));
      else if (value instanceof Date) {
        if (value !== lastDate) {
          lastDate = value;
          lastText = value.toISOString();
        }
        fields[c] = lastText;
      } else if (typeof value === 'number' || typeof value === 'boolean') fields[c] = String(value);
      else fields[c] = copyField(String(value));
    }
    lines[r] = fields.join('\t');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Appends rows with one `COPY <table> (<columns>) FROM STDIN`, the way a plain loader
 * does: no array parameters for the server to take apart, no conflict check per row, no
 * rows returned. For rows known to be new (`writeChildRows` with `copyNewRows`); a key
 * that exists after all fails the whole statement with a unique violation (23505), and
 * the caller writes its business again without COPY (warehouse/write/snapshot.ts). PostgreSQL
 * over pg only (src/warehouse/driver/preparing-client.ts sends it): PGlite has no standard input for
 * COPY. Returns the number of rows written.
 */
export async function copyRows<T extends TableName>(
  db: Executor,
  table: T,
  columns: ColumnTypes<T>,
  rows: readonly BulkRow<T>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  // Kysely builds no COPY: its template quotes the names, as the builder does.
  const text = compiledText(`copy\u0000${table}\u0000${JSON.stringify(columns)}`, () =>
    sql`copy ${sql.table(table)} (${sql.join(Object.keys(columns).map((c) => sql.id(c)))}) from stdin`.compile(
      builder,
    ),
  );
  await db.executeQuery(
    CompiledQuery.raw(text, [copyText(rows as readonly Record<string, unknown>[], columns)]),
  );
  return rows.length;
}

export interface GoneRows<T extends TableName> {
  table: T;
  /** The row's id column and its type. */
  id: ColumnOf<T>;
  idType: ColumnType;
  /** The soft-delete column: `removed_at`, `deleted_at`. */
  stamp: ColumnOf<T>;
}

/**
 * Soft-deletes a business's rows that a successful read no longer lists: sets `stamp` to
 * `at` where it is still null. The writers find `ids` among the stored rows they read
 * earlier in the same transaction (the business row is locked, so that read is current),
 * so no statement is sent when nothing went away. Returns the number of rows stamped.
 */
export async function markRowsGone<T extends TableName>(
  db: Executor,
  target: GoneRows<T>,
  businessId: number,
  ids: readonly unknown[],
  at: Date,
): Promise<number> {
  if (ids.length === 0) return 0;
  const text = compiledText(
    `gone\u0000${target.table}\u0000${target.id}\u0000${target.idType}\u0000${target.stamp}`,
    (slot) => {
      const stamp: string = target.stamp;
      const id: string = target.id;
      return builder
        .updateTable(target.table as string)
        .set(stamp, sql`${slot(0)}::timestamptz`)
        .where('business_id', '=', slot(1))
        .where(stamp, 'is', null)
        .where(id, '=', sql<unknown>`any(${typedArray(slot(2), target.idType)})`)
        .compile();
    },
  );
  const result = await db.executeQuery(
    CompiledQuery.raw(text, [
      at.toISOString(),
      businessId,
      columnValues(
        ids.map((id) => ({ id })),
        'id',
        target.idType,
      ),
    ]),
  );
  return Number(result.numAffectedRows ?? 0);
}

/**
 * A child collection's table (listings, reviews, responses, keywords): its upsert, and the
 * id and soft-delete column (`removed_at`, `deleted_at`) that mark a row gone.
 */
export interface ChildTable<T extends TableName> extends UpsertPlan<T> {
  id: ColumnOf<T>;
  stamp: ColumnOf<T>;
}

/** What one business's read of a child collection left to write. */
export interface ChildRead<T extends TableName, R> {
  /** The new and changed rows, sent to `upsertRows`. */
  rows: readonly BulkRow<T>[];
  /** Rows read unchanged and not sent: counted as unchanged. */
  unsent: number;
  /** The business's rows as stored, read earlier in the transaction. */
  stored: readonly R[];
  /** Whether a stored row's id is in this read. */
  seen: { has(id: unknown): boolean };
  /** A stored row of a record refused this run (quarantined): kept as it is, not gone. */
  refused: (row: R) => boolean;
  /** The writer locked the rows in id order itself (`lockInKeyOrder`): not again. */
  locked?: boolean;
  /**
   * Asked once, with the live stored rows and how many of them the read no longer lists;
   * false holds them all (none marked gone: a volume drop, held-removals.ts). Absent: the
   * rows are marked gone.
   */
  removeGone?: (live: number, gone: number) => boolean;
}

/**
 * The business a child collection belongs to, its run's time (the stamp of rows gone),
 * and whether rows new to it go by COPY (`copyRows`): the part of a business's write
 * context (`BusinessWriteContext`, write-context.ts) the bulk writes read.
 */
export interface ChildOwner {
  businessId: number;
  /** The run's observation time: first_seen_at/last_seen_at/history rows use it. */
  observedAt: Date;
  /**
   * Rows new to the business (no stored row has their id) go by one COPY per table rather
   * than the upsert (bulk-write.ts, `copyRows`): PostgreSQL over pg only.
   */
  copyNewRows?: boolean | undefined;
  /**
   * No row of the business was stored before this transaction: no child table holds one
   * of its rows (each goes with the business, by a foreign key's cascade or a delete
   * trigger), so the writers take their stored rows as none instead of reading them, and
   * insert their derived rows without looking for a conflict.
   */
  newBusiness?: boolean | undefined;
}

/**
 * Fewer new rows than this go with the upsert: a COPY is a statement of its own, parsed
 * each time (docs/benchmarks.md, "The write path, as measured").
 */
const COPY_MIN_ROWS = 16;

/**
 * Upserts the rows whose id the business has stored and COPYs the others: none of the
 * business's rows has their key. A row stored under another business fails the COPY with
 * a unique violation, and the business is written again with the upsert alone (which,
 * given an `owner`, leaves that row where it is).
 */
async function copyNewRows<T extends TableName, R extends object>(
  db: Executor,
  table: ChildTable<T>,
  read: ChildRead<T, R>,
  field: (row: R, column: string) => unknown,
): Promise<UpsertResult> {
  const rows = dedupeByKey(read.rows as readonly Record<string, unknown>[], table.key);
  const storedIds = new Set(read.stored.map((row) => field(row, table.id)));
  const known: Record<string, unknown>[] = [];
  const fresh: Record<string, unknown>[] = [];
  for (const row of rows) (storedIds.has(row[table.id]) ? known : fresh).push(row);
  if (fresh.length < COPY_MIN_ROWS) return upsertRows(db, table, rows as BulkRow<T>[]);
  const upserted = await upsertRows(db, table, known as BulkRow<T>[]);
  const copied = await copyRows(db, table.table, table.columns, fresh as BulkRow<T>[]);
  return { ...upserted, inserted: upserted.inserted + copied };
}

/**
 * Locks the stored rows of `ids` in the order of their id, before the upsert and the
 * marking gone lock them statement by statement: a table keyed by a global id (`owner`
 * set) can hold a row two businesses' transactions both write (one upserting it, the
 * other marking it gone), and taken in one order by all, their locks never deadlock.
 * Returns each locked row's id, owner (`business_id`) and gone stamp, as committed.
 */
export async function lockInKeyOrder<T extends TableName>(
  db: Executor,
  table: Pick<ChildTable<T>, 'table' | 'id' | 'columns' | 'stamp'>,
  ids: readonly unknown[],
): Promise<{ owner: unknown; stamp: unknown; id: unknown }[]> {
  if (ids.length === 0) return [];
  const text = compiledText(
    `lock\u0000${table.table}\u0000${table.id}\u0000${table.columns[table.id]}\u0000${table.stamp}`,
    (slot) => {
      const id: string = table.id;
      const stamp: string = table.stamp;
      return builder
        .selectFrom(table.table as string)
        .select([
          sql.ref('business_id').as('owner'),
          sql.ref(stamp).as('stamp'),
          sql.ref(id).as('id'),
        ])
        .where(
          id,
          '=',
          sql<unknown>`any(${typedArray(slot(0), table.columns[table.id] as ColumnType)})`,
        )
        .orderBy(id)
        .forUpdate()
        .compile();
    },
  );
  const { rows } = await db.executeQuery<{ owner: unknown; stamp: unknown; id: unknown }>(
    CompiledQuery.raw(text, [
      columnValues(
        ids.map((id) => ({ id })),
        'id',
        table.columns[table.id] as ColumnType,
      ),
    ]),
  );
  return rows;
}

/**
 * The write every child collection shares: upserts the new and changed rows, marks gone
 * (stamped `at`) the stored rows still live that the read neither listed nor refused
 * (unless `read.removeGone` holds them), and counts both into `stats` under the table's
 * name. Returns `stats`.
 */
export async function writeChildRows<T extends TableName, R extends object>(
  db: Executor,
  stats: WriteStats,
  owner: ChildOwner,
  table: ChildTable<T>,
  read: ChildRead<T, R>,
): Promise<WriteStats> {
  const field = (row: R, column: string) => (row as Record<string, unknown>)[column];
  const live = read.stored.filter((row) => field(row, table.stamp) === null);
  const gone = live
    .filter((row) => !read.seen.has(field(row, table.id)) && !read.refused(row))
    .map((row) => field(row, table.id));
  // A business stored for the first time has no row of its own to lock: a row another
  // business holds it only meets in a race the retry covers (src/sync/transaction-retry.ts).
  if (table.owner && !owner.newBusiness && !read.locked) {
    await lockInKeyOrder(db, table, [
      ...read.rows.map((row) => (row as Record<string, unknown>)[table.id]),
      ...gone,
    ]);
  }
  const upserted = owner.copyNewRows
    ? await copyNewRows(db, table, read, field)
    : await upsertRows(db, table, read.rows);
  const remove = read.removeGone?.(live.length, gone.length) ?? true;
  const deleted = await markRowsGone(
    db,
    {
      table: table.table,
      id: table.id,
      idType: table.columns[table.id] as ColumnType,
      stamp: table.stamp,
    },
    owner.businessId,
    remove ? gone : [],
    owner.observedAt,
  );
  return addCounts(stats, table.table, {
    inserted: upserted.inserted,
    updated: upserted.updated,
    unchanged: upserted.unchanged + read.unsent,
    deleted,
  });
}
