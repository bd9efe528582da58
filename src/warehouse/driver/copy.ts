/**
 * Copies one warehouse into another, whole, and proves the copy: the way from the
 * embedded PGlite to PostgreSQL (`listings-sync warehouse copy`; docs/backup-restore.md,
 * "Moving from PGlite to PostgreSQL").
 *
 * - The tables are read from the catalog, not from a list: every table of the source's
 *   current schema except the migrator's own bookkeeping (`kysely_migration*`), so a
 *   table a later migration adds is copied without a change here. Both sides must have
 *   applied the same migrations and hold the same columns, in the same order.
 * - Rows travel as each row's text (`row::text`, every type's own output function) and are
 *   read back by the target's input functions (`text::table`): exact for every type,
 *   where a JS value would lose a timestamp's microseconds or a numeric's digits. Ids are
 *   kept (`OVERRIDING SYSTEM VALUE`); the tables go in foreign-key order; each table's
 *   identity sequences then continue after its largest id.
 * - Everything written to the target is one transaction, which also holds the target's
 *   tables locked against writers: a failure (a bad row, a crash, a lost connection)
 *   leaves the target exactly as it was. A target whose tables hold any row is refused
 *   unless `replace`, which empties them first, inside that same transaction.
 * - Before it commits, the copy is verified: per table, the row count and a content hash
 *   computed by the same SQL on both sides (`tableDigest`). A difference rolls the copy
 *   back and names the tables.
 * - Memory stays bounded: rows are read through a cursor, in batches of about
 *   `BATCH_CHARS` characters of row text, one batch in flight at a time.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import { ListingsSyncError } from '../../errors.ts';
import type { Database, Db } from '../database.ts';

/** The migrator's bookkeeping (src/warehouse/driver/migrate.ts): its own, never copied. */
const BOOKKEEPING = ['kysely_migration', 'kysely_migration_lock'];

/**
 * Characters of row text per batch: about 8 MB of JS string, small beside the CLI's
 * 256 MB heap (src/cli/main.ts), large enough that a batch of small rows is thousands of
 * rows and the round trips do not dominate.
 */
const BATCH_CHARS = 4_000_000;
/** The first batch of a table, before its rows' size is known (raw bodies can be large). */
const FIRST_BATCH_ROWS = 50;
const MAX_BATCH_ROWS = 20_000;

/**
 * Settings under which a row's text is the same on both sides, whatever the servers'
 * defaults: the time zone (a timestamptz prints in it), date, interval and bytea styles,
 * and floats printed exactly (extra_float_digits 1: the shortest text that reads back the
 * same value).
 */
const CANONICAL_SETTINGS: readonly (readonly [string, string])[] = [
  ['TimeZone', 'UTC'],
  ['DateStyle', 'ISO, MDY'],
  ['IntervalStyle', 'postgres'],
  ['bytea_output', 'hex'],
  ['extra_float_digits', '1'],
];

/** Why `warehouse copy` refused or rolled back (docs/running.md, "Error codes"). */
export const WAREHOUSE_COPY_ERROR_CODES = [
  'TARGET_NOT_EMPTY',
  'SCHEMA_DIFFERS',
  'COPY_DIFFERS',
] as const;
export type WarehouseCopyErrorCode = (typeof WAREHOUSE_COPY_ERROR_CODES)[number];

export class WarehouseCopyError extends ListingsSyncError {
  readonly code: WarehouseCopyErrorCode;
  /** For COPY_DIFFERS: every table's comparison (the copy was rolled back). */
  readonly tables: readonly TableComparison[];
  constructor(
    code: WarehouseCopyErrorCode,
    message: string,
    tables: readonly TableComparison[] = [],
  ) {
    super(message);
    this.code = code;
    this.tables = tables;
  }
}

/** A table's row count and content hash (`tableDigest`). */
export interface TableDigest {
  rows: number;
  hash: string;
}

export interface TableComparison {
  table: string;
  source: TableDigest;
  target: TableDigest;
  matches: boolean;
}

/** How far the copy is: `copied` of `total` rows of `table`; `done` once it is whole. */
export interface CopyProgress {
  table: string;
  copied: number;
  total: number;
  done: boolean;
}

export interface CopyOptions {
  /** Empty the target's tables first (in the copy's transaction); otherwise a row refuses. */
  replace?: boolean;
  onProgress?: (progress: CopyProgress) => void;
}

export interface CopyResult {
  /** Every copied table, by name, with its verification. */
  tables: TableComparison[];
  /** Names of the target's tables that held rows and were emptied (`replace`). */
  replaced: string[];
}

interface Column {
  name: string;
  type: string;
  generated: boolean;
  identity: boolean;
}

/** A double-quoted identifier, for the statements built from catalog names. */
function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The tables of the current schema, bookkeeping aside, by name. */
async function warehouseTables(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`.execute(db);
  return rows.map((r) => r.name).filter((name) => !BOOKKEEPING.includes(name));
}

async function columnsOf(db: Db, table: string): Promise<Column[]> {
  const { rows } = await sql<{
    name: string;
    type: string;
    generated: string;
    identity: string;
  }>`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
           a.attgenerated::text as generated, a.attidentity::text as identity
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relname = ${table}
      and a.attnum > 0 and not a.attisdropped
    order by a.attnum`.execute(db);
  return rows.map((r) => ({
    name: r.name,
    type: r.type,
    generated: r.generated !== '',
    identity: r.identity !== '',
  }));
}

/** Foreign keys among the current schema's tables: [referencing, referenced]. */
async function foreignKeys(db: Db): Promise<[string, string][]> {
  const { rows } = await sql<{ child: string; parent: string }>`
    select c.relname as child, p.relname as parent
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class p on p.oid = k.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = current_schema()`.execute(db);
  return rows.map((r) => [r.child, r.parent]);
}

/**
 * `tables` with every referenced table before the tables that reference it, otherwise by
 * name. A cycle (none today) keeps its tables by name after the rest: the copy then fails
 * on the first row out of order, and rolls back.
 */
function dependencyOrder(tables: readonly string[], keys: readonly [string, string][]) {
  const pending = new Set([...tables].sort());
  const parents = new Map<string, Set<string>>();
  for (const [child, parent] of keys) {
    if (child === parent || !pending.has(child) || !pending.has(parent)) continue;
    parents.set(child, (parents.get(child) ?? new Set()).add(parent));
  }
  const order: string[] = [];
  while (pending.size > 0) {
    const ready = [...pending].filter((t) =>
      [...(parents.get(t) ?? [])].every((p) => !pending.has(p)),
    );
    const next = ready.length > 0 ? ready : [...pending];
    for (const table of next) {
      order.push(table);
      pending.delete(table);
    }
  }
  return order;
}

async function appliedMigrations(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select name from ${sql.table('kysely_migration')} order by name`.execute(db);
  return rows.map((r) => r.name);
}

async function setCanonical(db: Transaction<Database>): Promise<void> {
  for (const [name, value] of CANONICAL_SETTINGS) {
    await sql`select set_config(${name}, ${value}, true)`.execute(db);
  }
}

/**
 * A table's row count and content hash: the md5 of every row's text, each hashed, sorted
 * and joined, so the hash depends on the rows and not on their physical order. The same
 * statement runs on both sides, under the same settings (`CANONICAL_SETTINGS`).
 */
async function tableDigest(db: Db, table: string): Promise<TableDigest> {
  const { rows } = await sql<{ rows: number; hash: string }>`
    select count(*)::bigint as rows, md5(coalesce(string_agg(h, '' order by h), '')) as hash
    from (select md5(x::text) as h from ${sql.raw(quoted(table))} as x) as s`.execute(db);
  const row = rows[0];
  return { rows: Number(row?.rows ?? 0), hash: row?.hash ?? '' };
}

/** Refuses two warehouses whose migrations or columns differ: rows would not fit. */
async function requireSameShape(
  source: Transaction<Database>,
  target: Transaction<Database>,
  tables: readonly string[],
): Promise<Map<string, Column[]>> {
  const [fromMigrations, toMigrations] = [
    await appliedMigrations(source),
    await appliedMigrations(target),
  ];
  if (fromMigrations.join() !== toMigrations.join()) {
    const last = (list: string[]) => list.at(-1) ?? 'none';
    throw new WarehouseCopyError(
      'SCHEMA_DIFFERS',
      `The two warehouses are at different schema versions (source: ${fromMigrations.length} ` +
        `migrations, last ${last(fromMigrations)}; target: ${toMigrations.length}, last ` +
        `${last(toMigrations)}). Run \`listings-sync migrate\` on the one behind, with the same ` +
        'release of listings-sync, then copy again.',
    );
  }
  const targetTables = new Set(await warehouseTables(target));
  const shapes = new Map<string, Column[]>();
  const differing: string[] = [];
  for (const table of tables) {
    const columns = await columnsOf(source, table);
    const theirs = targetTables.has(table) ? await columnsOf(target, table) : [];
    const text = (list: Column[]) => list.map((c) => `${c.name} ${c.type} ${c.generated}`).join();
    if (text(columns) !== text(theirs)) differing.push(table);
    shapes.set(table, columns);
  }
  if (differing.length > 0) {
    throw new WarehouseCopyError(
      'SCHEMA_DIFFERS',
      `These tables differ between the two warehouses (missing, or other columns): ` +
        `${differing.join(', ')}. A table the operator added to one side must exist with the same ` +
        'columns on the other, or be dropped from the source, before copying.',
    );
  }
  return shapes;
}

/** The target's tables among `tables` that hold a row. */
async function tablesWithRows(db: Transaction<Database>, tables: readonly string[]) {
  const held: string[] = [];
  for (const table of tables) {
    const { rows } = await sql<{ any: boolean }>`
      select exists (select from ${sql.raw(quoted(table))}) as any`.execute(db);
    if (rows[0]?.any) held.push(table);
  }
  return held;
}

/** Continues each identity or serial sequence of `table` after its largest value. */
async function resetSequences(db: Transaction<Database>, table: string, columns: Column[]) {
  for (const column of columns) {
    const { rows } = await sql<{ sequence: string | null }>`
      select pg_get_serial_sequence(${quoted(table)}, ${column.name}) as sequence`.execute(db);
    const sequence = rows[0]?.sequence;
    if (!sequence) continue;
    await sql`
      select setval(${sequence}::regclass,
        coalesce((select max(${sql.raw(quoted(column.name))}) from ${sql.raw(quoted(table))}), 0) + 1,
        false)`.execute(db);
  }
}

/** Copies `table`'s rows through a cursor on the source, batch by batch. */
async function copyTable(
  source: Transaction<Database>,
  target: Transaction<Database>,
  table: string,
  columns: Column[],
  total: number,
  onProgress: CopyOptions['onProgress'],
): Promise<void> {
  const written = columns.filter((c) => !c.generated);
  const list = written.map((c) => quoted(c.name)).join(', ');
  const fields = written.map((c) => `(x.r).${quoted(c.name)}`).join(', ');
  const overriding = written.some((c) => c.identity) ? 'overriding system value' : '';
  // `offset 0` keeps the cast in its own subquery: once per row, not once per column.
  const head = sql.raw(
    `insert into ${quoted(table)} (${list}) ${overriding} ` +
      `select ${fields} from (select u.r::${quoted(table)} as r from unnest(`,
  );
  const tail = sql.raw('::text[]) as u(r) offset 0) as x');
  await sql`declare listings_copy no scroll cursor for
    select x::text as r from ${sql.raw(quoted(table))} as x`.execute(source);
  let copied = 0;
  let batch = FIRST_BATCH_ROWS;
  for (;;) {
    const { rows } = await sql<{ r: string }>`
      fetch forward ${sql.raw(String(batch))} from listings_copy`.execute(source);
    if (rows.length === 0) break;
    const texts = rows.map((row) => row.r);
    await sql`${head}${texts}${tail}`.execute(target);
    copied += texts.length;
    onProgress?.({ table, copied, total, done: false });
    // The next batch from this one's row size: about BATCH_CHARS of text.
    const perRow = Math.max(1, texts.reduce((sum, text) => sum + text.length, 0) / texts.length);
    batch = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(BATCH_CHARS / perRow)));
  }
  // On a failure the cursor goes with the source's transaction, rolled back.
  await sql`close listings_copy`.execute(source);
  onProgress?.({ table, copied, total, done: true });
}

/**
 * Copies every table of `source` into `target` and verifies the copy (module comment).
 * Both must be migrated to the same version. Throws a `WarehouseCopyError` (the target
 * then as it was): TARGET_NOT_EMPTY, SCHEMA_DIFFERS, or COPY_DIFFERS with the comparison.
 */
export async function copyWarehouse(
  source: Kysely<Database>,
  target: Kysely<Database>,
  options: CopyOptions = {},
): Promise<CopyResult> {
  // One read transaction on the source (a consistent snapshot), one write transaction on
  // the target, nested so that the target commits only once the source is read whole.
  return source.transaction().execute(async (from) =>
    target.transaction().execute(async (to) => {
      await setCanonical(from);
      await setCanonical(to);
      const tables = await warehouseTables(from);
      const shapes = await requireSameShape(from, to, tables);
      const order = dependencyOrder(tables, await foreignKeys(from));

      // Writers wait (readers do not) until the copy commits or rolls back.
      if (order.length > 0) {
        await sql`lock table ${sql.raw(order.map(quoted).join(', '))} in exclusive mode`.execute(
          to,
        );
      }
      const held = (await tablesWithRows(to, order)).sort();
      if (held.length > 0 && !options.replace) {
        throw new WarehouseCopyError(
          'TARGET_NOT_EMPTY',
          `The target already holds rows in ${held.length} table(s): ${held.join(', ')}. ` +
            'Nothing was copied. Copy into an empty database, or pass --replace to empty these ' +
            "tables and copy (in one transaction: the target's rows stay if the copy fails).",
        );
      }
      if (held.length > 0) {
        // No CASCADE: a table of the operator's own that references ours fails the copy
        // rather than being emptied unasked.
        await sql`truncate ${sql.raw(order.map(quoted).join(', '))} restart identity`.execute(to);
      }

      const sourceDigests = new Map<string, TableDigest>();
      for (const table of order) sourceDigests.set(table, await tableDigest(from, table));

      for (const table of order) {
        const columns = shapes.get(table) ?? [];
        const total = sourceDigests.get(table)?.rows ?? 0;
        await copyTable(from, to, table, columns, total, options.onProgress);
        await resetSequences(to, table, columns);
      }

      const tablesCompared: TableComparison[] = [];
      for (const table of order) {
        const sourceDigest = sourceDigests.get(table) as TableDigest;
        const targetDigest = await tableDigest(to, table);
        tablesCompared.push({
          table,
          source: sourceDigest,
          target: targetDigest,
          matches:
            sourceDigest.rows === targetDigest.rows && sourceDigest.hash === targetDigest.hash,
        });
      }
      tablesCompared.sort((a, b) => (a.table < b.table ? -1 : 1));
      const differing = tablesCompared.filter((t) => !t.matches).map((t) => t.table);
      if (differing.length > 0) {
        throw new WarehouseCopyError(
          'COPY_DIFFERS',
          `The copy does not match the source in ${differing.join(', ')} (row count or content ` +
            'hash), so it was rolled back and the target is as it was. Report this with both ' +
            "servers' versions (`select version()`).",
          tablesCompared,
        );
      }
      return { tables: tablesCompared, replaced: held };
    }),
  );
}
