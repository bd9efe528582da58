/**
 * The two statements every writer is built from:
 *
 * - `upsertRows`: one `INSERT … SELECT … FROM jsonb_populate_recordset(NULL::<table>, $1)
 *   ON CONFLICT (key) DO UPDATE SET … WHERE (compared columns) IS DISTINCT FROM (new)`
 *   `RETURNING key, (xmax = 0) AS inserted`.
 * - `insertRows`: the same without the update (history and outbox rows).
 *
 * All rows travel as ONE jsonb parameter, so a batch of any size stays far from
 * PostgreSQL's 65535 bind-parameter limit, and the table's own row type converts each
 * field (no per-driver array serialisation). A row whose compared columns are unchanged
 * is not rewritten: it counts as unchanged. `xmax = 0` holds only for a tuple this
 * statement inserted; an updated tuple carries the updating transaction's id.
 *
 * Row objects use the column names; Dates become ISO strings and jsonb columns take
 * plain JS values (not strings).
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export type TableName = keyof Database & string;
export type ColumnOf<T extends TableName> = keyof Database[T] & string;
/** A row for the bulk statements: column → JSON-able value (Dates allowed). */
export type BulkRow<T extends TableName> = { [K in ColumnOf<T>]?: unknown };

export interface UpsertPlan<T extends TableName> {
  table: T;
  /** The conflict target (primary key or a unique key). */
  key: readonly ColumnOf<T>[];
  /** Every column written, key included. */
  columns: readonly ColumnOf<T>[];
  /** Written when the row is inserted and left alone on update (`first_seen_at`). */
  insertOnly?: readonly ColumnOf<T>[];
  /** The existing row is rewritten only when one of these differs. */
  compare: readonly ColumnOf<T>[];
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
  /** The key of every row inserted or updated, with which of the two it was. */
  written: { key: Record<string, unknown>; inserted: boolean }[];
}

type Executor = Kysely<Database>;

function keyOf(row: Record<string, unknown>, key: readonly string[]): string {
  return JSON.stringify(key.map((column) => row[column] ?? null));
}

/** The last row per key wins: ON CONFLICT cannot touch one row twice in a statement. */
export function dedupeByKey<R extends Record<string, unknown>>(
  rows: readonly R[],
  key: readonly string[],
): R[] {
  const byKey = new Map<string, R>();
  for (const row of rows) byKey.set(keyOf(row, key), row);
  return [...byKey.values()];
}

function pick(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of columns) out[column] = row[column] ?? null;
  return out;
}

export async function upsertRows<T extends TableName>(
  db: Executor,
  plan: UpsertPlan<T>,
  rows: readonly BulkRow<T>[],
): Promise<UpsertResult> {
  if (rows.length === 0) return { inserted: 0, updated: 0, unchanged: 0, written: [] };
  const unique = dedupeByKey(rows as readonly Record<string, unknown>[], plan.key);
  const payload = JSON.stringify(unique.map((row) => pick(row, plan.columns)));
  const table = sql.table(plan.table);
  const columns = sql.join(plan.columns.map((c) => sql.ref(c)));
  const keyColumns = sql.join(plan.key.map((c) => sql.ref(c)));
  const skip = new Set<string>([...plan.key, ...(plan.insertOnly ?? [])]);
  const assignments = sql.join(
    plan.columns
      .filter((c) => !skip.has(c))
      .map((c) => sql`${sql.ref(c)} = excluded.${sql.ref(c)}`),
  );
  const current = sql.join(plan.compare.map((c) => sql`${table}.${sql.ref(c)}`));
  const incoming = sql.join(plan.compare.map((c) => sql`excluded.${sql.ref(c)}`));
  const returning = sql.join(plan.key.map((c) => sql`${table}.${sql.ref(c)}`));
  const { rows: written } = await sql<Record<string, unknown> & { inserted: boolean }>`
    insert into ${table} (${columns})
    select ${columns} from jsonb_populate_recordset(null::${table}, ${payload}::jsonb)
    on conflict (${keyColumns}) do update set ${assignments}
    where (${current}) is distinct from (${incoming})
    returning ${returning}, (xmax = 0) as inserted`.execute(db);
  const inserted = written.filter((row) => row.inserted).length;
  return {
    inserted,
    updated: written.length - inserted,
    unchanged: unique.length - written.length,
    written: written.map(({ inserted: wasInserted, ...key }) => ({ key, inserted: wasInserted })),
  };
}

/**
 * Appends rows; with `skipConflictsOn`, a row whose key exists already is skipped
 * (`ON CONFLICT DO NOTHING`). Returns the number of rows inserted.
 */
export async function insertRows<T extends TableName>(
  db: Executor,
  table: T,
  columns: readonly ColumnOf<T>[],
  rows: readonly BulkRow<T>[],
  skipConflictsOn?: readonly ColumnOf<T>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const list = skipConflictsOn
    ? dedupeByKey(rows as readonly Record<string, unknown>[], skipConflictsOn)
    : (rows as readonly Record<string, unknown>[]);
  const payload = JSON.stringify(list.map((row) => pick(row, columns)));
  const target = sql.table(table);
  const names = sql.join(columns.map((c) => sql.ref(c)));
  const conflict = skipConflictsOn
    ? sql`on conflict (${sql.join(skipConflictsOn.map((c) => sql.ref(c)))}) do nothing`
    : sql``;
  const result = await sql`
    insert into ${target} (${names})
    select ${names} from jsonb_populate_recordset(null::${target}, ${payload}::jsonb)
    ${conflict}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
