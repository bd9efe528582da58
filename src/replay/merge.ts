/**
 * The SQL of `replay --in-place` (docs/replay.md, "Replay in place"): which businesses
 * the raw zone can rebuild and from when (their window), and the merge of the rebuilt
 * rows into the live tables in one transaction, each table as its entry in
 * src/replay/tables.ts says. The scratch schema they come from is
 * src/replay/scratch.ts.
 *
 * The live tables are never dropped, renamed or truncated: rows are deleted, inserted and
 * updated by primary key, so grants, comments, the operator's views and a reader's snapshot
 * all stay as PostgreSQL keeps them for any write. Rows older than a business's window,
 * and every row of a business the raw zone cannot rebuild, are left exactly as they are.
 */
import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database, Db } from '../warehouse/database.ts';
import type { Merge, Owner, ReplayTable } from '../warehouse/replay-table.ts';
import { type ColumnInfo, columnsOf, idsPastLive, windowsTable } from './scratch.ts';
import { REPLAY_TABLES } from './tables.ts';

/** Why a business with kept reads is not rebuilt: its rows stay as they are. */
export type KeptWholeReason =
  | 'a night of its window has no kept business list'
  | 'the replay did not write every night of its window';

export interface ReplayWindow {
  /** Businesses rebuilt, each from the observation time of its first replayable read. */
  rebuilt: Map<number, Date>;
  /** Businesses with kept reads that the replay cannot rebuild whole, and why. */
  keptWhole: Map<number, KeptWholeReason>;
}

/**
 * A business's window starts at its first read in a run whose business list the raw zone
 * holds for its account (without the list, the run cannot be replayed: the sync starts
 * from it). A business read by such an unreplayable run inside its window is kept whole:
 * the rows that night wrote cannot be rebuilt. Reads of businesses that never committed
 * (migration 0015) count for nothing.
 */
export async function replayWindow(db: Db, live: string): Promise<ReplayWindow> {
  const reads = sql.id(live, 'raw_reads');
  const { rows } = await sql<{ business_id: string; window_start: Date; unreplayable: boolean }>`
    with listed as (
      select distinct run_id, account_name from ${reads}
       where operation = 'list_businesses' and business_id is null and not uncommitted
    ), business_reads as (
      select r.business_id, r.observed_at,
             exists (select 1 from listed l
                      where l.run_id = r.run_id and l.account_name = r.account_name) as replayable
        from ${reads} r
       where r.business_id is not null and not r.uncommitted
    ), windows as (
      select business_id, min(observed_at) filter (where replayable) as window_start
        from business_reads group by business_id
    )
    select w.business_id::text as business_id, w.window_start,
           exists (select 1 from business_reads b
                    where b.business_id = w.business_id and not b.replayable
                      and b.observed_at >= w.window_start) as unreplayable
      from windows w
     where w.window_start is not null`.execute(db);
  const rebuilt = new Map<number, Date>();
  const keptWhole = new Map<number, KeptWholeReason>();
  for (const row of rows) {
    const id = Number(row.business_id);
    if (row.unreplayable) keptWhole.set(id, 'a night of its window has no kept business list');
    else rebuilt.set(id, new Date(row.window_start));
  }
  return { rebuilt, keptWhole };
}

/** What the merge did (or, in a dry run, would do) to one live table. */
export interface TableChange {
  table: string;
  deleted: number;
  inserted: number;
  updated: number;
}

type MergedAs<K extends Merge['kind']> = ReplayTable & { merge: Extract<Merge, { kind: K }> };

function mergedAs<K extends Merge['kind']>(kind: K): MergedAs<K>[] {
  return REPLAY_TABLES.filter((e): e is MergedAs<K> => e.merge?.kind === kind);
}

/**
 * The live tables the merge writes, locked against writers, never against readers. Not
 * the alerts: their deliveries carry on, and the merge only adds closed ones.
 */
const MERGED_TABLES: readonly string[] = [
  ...mergedAs('per business'),
  ...mergedAs('per run'),
  ...mergedAs('upsert'),
].map((e) => e.table);

/** Writers of the merged tables wait for the caller's transaction to end; readers never do. */
export async function lockMergedTables(trx: Transaction<Database>, live: string): Promise<void> {
  await sql`lock table ${sql.join(
    MERGED_TABLES.map((t) => sql.id(live, t)),
  )} in share row exclusive mode`.execute(trx);
}

/** A table whose rows keep their live ids: `ids.sameRowAs` says which live row is the same. */
interface Mapped {
  table: string;
  column: string;
  sameRowAs: readonly string[];
  /** The scratch table of (scratch_id, live_id). */
  map: string;
}

const MAPPED: readonly Mapped[] = REPLAY_TABLES.flatMap(({ table, ids }) =>
  ids?.sameRowAs
    ? [{ table, column: ids.column, sameRowAs: ids.sameRowAs, map: `replay_${table}_ids` }]
    : [],
);

/**
 * A row the live warehouse has keeps its id (BI may hold it): each scratch row is mapped
 * to the live row equal on `sameRowAs`; a new one keeps the id it was given, past every
 * live id (seedScratch).
 */
async function mapIds(db: Db, live: string, scratch: string, mapped: Mapped): Promise<void> {
  const id = sql.id(mapped.column);
  const same = sql.join(
    mapped.sameRowAs.map((c) => sql`l.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
  await sql`create table ${sql.id(scratch, mapped.map)} as
    select s.${id} as scratch_id, coalesce(l.${id}, s.${id}) as live_id
      from ${sql.id(scratch, mapped.table)} s
      left join ${sql.id(live, mapped.table)} l on ${same}`.execute(db);
}

/** The business a row `t` of `schema` belongs to. */
function ownerOf(owner: Owner, schema: string): RawBuilder<unknown> {
  if (owner === 'business_id') return sql`t.business_id`;
  return sql`(select o.business_id from ${sql.id(schema, owner.parent)} o
    where o.${sql.id(owner.on)} = t.${sql.id(owner.on)})`;
}

/**
 * Whether the live warehouse holds the rebuilt row `t` (or, for a child row, its parent)
 * under another business than the rebuild's (`t.replay_owner`): the merge never moves a
 * live row to another business, nor writes into a row of a business it keeps whole
 * (docs/replay.md, "Replay in place"; the owner rule is docs/warehouse.md's "Ids under
 * two businesses").
 */
function liveOwnerDiffers(
  live: string,
  table: string,
  key: readonly string[],
  owner: Owner,
): RawBuilder<unknown> {
  if (owner === 'business_id') {
    const match = sql.join(
      key.map((k) => sql`l.${sql.id(k)} = t.${sql.id(k)}`),
      sql` and `,
    );
    return sql`exists (select 1 from ${sql.id(live, table)} l
      where ${match} and l.business_id <> t.replay_owner)`;
  }
  return sql`exists (select 1 from ${sql.id(live, owner.parent)} o
    where o.${sql.id(owner.on)} = t.${sql.id(owner.on)} and o.business_id <> t.replay_owner)`;
}

/**
 * The rebuilt rows of `table` as the live table will hold them (mapped ids as the live
 * ones), each with the business it belongs to as `replay_owner`.
 */
function rebuiltRows(
  table: string,
  columns: readonly ColumnInfo[],
  scratch: string,
  owner: RawBuilder<unknown>,
): RawBuilder<unknown> {
  // Each mapped id column is read through its map, aliased m0, m1, …
  const maps = MAPPED.filter((m) => columns.some((c) => c.name === m.column));
  const alias = (i: number, column: string) => sql.ref(`m${i}.${column}`);
  const list = sql.join(
    columns.map((c) => {
      const i = maps.findIndex((m) => m.column === c.name);
      return i < 0 ? sql`t.${sql.id(c.name)}` : sql`${alias(i, 'live_id')} as ${sql.id(c.name)}`;
    }),
  );
  const joins = sql.join(
    maps.map(
      (m, i) =>
        sql`join ${sql.id(scratch, m.map)} ${sql.id(`m${i}`)} on ${alias(i, 'scratch_id')} = t.${sql.id(m.column)}`,
    ),
    sql` `,
  );
  return sql`(select ${list}, ${owner} as replay_owner
      from ${sql.id(scratch, table)} t ${joins})`;
}

/** Upserts `rows` (with the live table's columns) into `live.table`; counts new and changed rows. */
async function upsert(
  db: Db,
  live: string,
  table: string,
  columns: readonly ColumnInfo[],
  key: readonly string[],
  rows: RawBuilder<unknown>,
  where: RawBuilder<unknown>,
): Promise<{ ins: number; upd: number }> {
  const list = sql.join(columns.map((c) => sql.id(c.name)));
  const rest = columns.filter((c) => !key.includes(c.name));
  const update =
    rest.length === 0
      ? sql`do nothing`
      : sql`do update set ${sql.join(rest.map((c) => sql`${sql.id(c.name)} = excluded.${sql.id(c.name)}`))}
          where (${sql.join(rest.map((c) => sql`cur.${sql.id(c.name)}`))})
            is distinct from (${sql.join(rest.map((c) => sql`excluded.${sql.id(c.name)}`))})`;
  const { rows: counted } = await sql<{ ins: number; upd: number }>`
    with changed as (
      insert into ${sql.id(live, table)} as cur (${list}) overriding system value
      select ${list} from ${rows} t where ${where}
      on conflict (${sql.join(key.map((k) => sql.id(k)))}) ${update}
      returning (xmax::text = '0') as inserted)
    select count(*) filter (where inserted)::int as ins,
           count(*) filter (where not inserted)::int as upd from changed`.execute(db);
  return { ins: counted[0]?.ins ?? 0, upd: counted[0]?.upd ?? 0 };
}

/** The live table's columns the merge writes: not generated, not a fresh id (`ids` unmapped). */
async function writtenColumns(
  db: Db,
  live: string,
  entry: ReplayTable,
  leaveOut: readonly string[] = [],
): Promise<ColumnInfo[]> {
  const fresh = entry.ids && !entry.ids.sameRowAs ? [entry.ids.column] : [];
  return (await columnsOf(db, live, entry.table)).filter(
    (c) => !c.generated && !fresh.includes(c.name) && !leaveOut.includes(c.name),
  );
}

/**
 * Writes the rebuilt rows into the live tables (inside the caller's transaction), each
 * table as its entry in src/replay/tables.ts says: for each business of the
 * merge, rows the rebuild has are inserted or updated, rows it lacks are deleted
 * (children first); its quarantine rows of the replayed runs are replaced; reference data
 * is upserted; alerts the live warehouse lacks are added, closed undelivered (old news is
 * not sent), and every live alert is left as it is (identity and delivery).
 */
export async function mergeRebuild(
  db: Db,
  live: string,
  scratch: string,
  replayedRuns: readonly string[],
  notDeliveredNote: string,
): Promise<TableChange[]> {
  const W = windowsTable(scratch);
  const inMerge = (expression: RawBuilder<unknown>) =>
    sql`${expression} in (select business_id from ${W})`;
  const changes = new Map<string, TableChange>();
  const change = (table: string) => {
    const entry = changes.get(table) ?? { table, deleted: 0, inserted: 0, updated: 0 };
    changes.set(table, entry);
    return entry;
  };
  const perBusiness = mergedAs('per business');

  for (const { table, key, merge } of perBusiness) {
    const keep = merge.keepLive ?? [];
    if (keep.length === 0) continue;
    const match = sql.join(
      key.map((k) => sql`l.${sql.id(k)} = s.${sql.id(k)}`),
      sql` and `,
    );
    await sql`update ${sql.id(scratch, table)} s
       set ${sql.join(keep.map((c) => sql`${sql.id(c)} = l.${sql.id(c)}`))}
      from ${sql.id(live, table)} l
     where ${match} and (${sql.join(keep.map((c) => sql`s.${sql.id(c)}`))})
       is distinct from (${sql.join(keep.map((c) => sql`l.${sql.id(c)}`))})`.execute(db);
  }
  for (const mapped of MAPPED) await mapIds(db, live, scratch, mapped);

  const columns = new Map<string, ColumnInfo[]>();
  for (const entry of perBusiness) columns.set(entry.table, await writtenColumns(db, live, entry));
  for (const { table, key, owner = 'business_id' } of [...perBusiness].reverse()) {
    const rows = rebuiltRows(table, columns.get(table) ?? [], scratch, ownerOf(owner, scratch));
    const match = sql.join(
      key.map((k) => sql`s.${sql.id(k)} = t.${sql.id(k)}`),
      sql` and `,
    );
    const result = await sql`delete from ${sql.id(live, table)} t
      where ${inMerge(ownerOf(owner, live))}
        and not exists (select 1 from ${rows} s where ${match})`.execute(db);
    change(table).deleted += Number(result.numAffectedRows ?? 0);
  }
  for (const { table, key, owner = 'business_id' } of perBusiness) {
    const tableColumns = columns.get(table) ?? [];
    const rows = rebuiltRows(table, tableColumns, scratch, ownerOf(owner, scratch));
    const { ins, upd } = await upsert(
      db,
      live,
      table,
      tableColumns,
      key,
      rows,
      sql`${inMerge(sql`t.replay_owner`)} and not ${liveOwnerDiffers(live, table, key, owner)}`,
    );
    change(table).inserted += ins;
    change(table).updated += upd;
  }

  // The replayed runs' rows, of the merged businesses and of none (the accounts' own).
  for (const entry of replayedRuns.length > 0 ? mergedAs('per run') : []) {
    const { table, owner = 'business_id' } = entry;
    const ofMerge = (schema: string) =>
      sql`(${ownerOf(owner, schema)} is null or ${inMerge(ownerOf(owner, schema))})
        and t.run_id = any(${[...replayedRuns]}::uuid[])`;
    const removed = await sql`delete from ${sql.id(live, table)} t where ${ofMerge(live)}`.execute(
      db,
    );
    change(table).deleted += Number(removed.numAffectedRows ?? 0);
    const list = sql.join((await writtenColumns(db, live, entry)).map((c) => sql.id(c.name)));
    const added = await sql`insert into ${sql.id(live, table)} (${list})
      select ${list} from ${sql.id(scratch, table)} t where ${ofMerge(scratch)}`.execute(db);
    change(table).inserted += Number(added.numAffectedRows ?? 0);
  }

  for (const entry of mergedAs('upsert')) {
    const { ins, upd } = await upsert(
      db,
      live,
      entry.table,
      await writtenColumns(db, live, entry, entry.merge.leaveOut),
      entry.key,
      sql`${sql.id(scratch, entry.table)}`,
      sql`true`,
    );
    change(entry.table).inserted += ins;
    change(entry.table).updated += upd;
  }

  for (const entry of mergedAs('add closed')) {
    const { table, key, merge } = entry;
    const names = (await writtenColumns(db, live, entry)).map((c) => c.name);
    const values = sql.join(
      names.map((name) =>
        name === merge.delivered
          ? sql`now()`
          : name === merge.note
            ? sql`${notDeliveredNote}::text`
            : sql`a.${sql.id(name)}`,
      ),
    );
    const sameAs = sql.id(merge.sameAs);
    const added =
      await sql`insert into ${sql.id(live, table)} (${sql.join(names.map((n) => sql.id(n)))})
      select ${values} from ${sql.id(scratch, table)} a
       where not exists (select 1 from ${sql.id(live, table)} o where o.${sameAs} = a.${sameAs})
       order by ${sql.join(key.map((k) => sql`a.${sql.id(k)}`))}
      on conflict (${sameAs}) do nothing`.execute(db);
    change(table).inserted += Number(added.numAffectedRows ?? 0);
  }

  // The live ids the merge wrote: a row a sync adds next takes one past them.
  for (const { table, column } of MAPPED) await idsPastLive(db, live, live, table, column);
  return [...changes.values()];
}
