/**
 * The SQL of `replay --in-place` (docs/replay.md, "Replay in place"): which businesses
 * the raw zone can rebuild and from when (their window), and the merge of the rebuilt
 * rows into the live tables in one transaction, each table as its entry in
 * src/replay/tables.ts says. The scratch schema they come from is
 * src/replay/scratch.ts; the contested-id rule the merge keeps, src/replay/contested.ts.
 *
 * The live tables are never dropped, renamed or truncated: rows are deleted, inserted and
 * updated by primary key, so grants, comments, the operator's views and a reader's snapshot
 * all stay as PostgreSQL keeps them for any write. Rows older than a business's window,
 * and every row of a business the raw zone cannot rebuild, are left exactly as they are.
 */
import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database, Db } from '../warehouse/database.ts';
import type { Merge, Owner, ReplayTable } from '../warehouse/write/replay-table.ts';
import { aboutContested, findContested, frozen, referLikeLive } from './contested.ts';
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

/** What the merge did to each live table, in the order it first touched them. */
type Tally = Map<string, TableChange>;

/** Adds an upsert's new and changed rows to `table`'s counts. */
function countUpsert(tally: Tally, table: string, inserted: number, updated: number): void {
  const change = changeOf(tally, table);
  change.inserted += inserted;
  change.updated += updated;
}

function changeOf(tally: Tally, table: string): TableChange {
  const entry = tally.get(table) ?? { table, deleted: 0, inserted: 0, updated: 0 };
  tally.set(table, entry);
  return entry;
}

/** Whether the business `expression` names is one the merge rebuilds (it has a window). */
function inMerge(scratch: string, expression: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`${expression} in (select business_id from ${windowsTable(scratch)})`;
}

/**
 * Writes the rebuilt rows into the live tables (inside the caller's transaction), each
 * table as its entry in src/replay/tables.ts says: for each business of the
 * merge, rows the rebuild has are inserted or updated, rows it lacks are deleted
 * (children first); its quarantine rows of the replayed runs are replaced; reference data
 * is upserted; alerts the live warehouse lacks are added, closed undelivered (old news is
 * not sent), and every live alert is left as it is (identity and delivery). Whatever
 * names a contested id stays as the live warehouse has it (src/replay/contested.ts).
 */
export async function mergeRebuild(
  db: Db,
  live: string,
  scratch: string,
  replayedRuns: readonly string[],
  notDeliveredNote: string,
): Promise<TableChange[]> {
  const tally: Tally = new Map();
  const perBusiness = mergedAs('per business');
  await findContested(db, live, scratch);

  const columns = new Map<string, ColumnInfo[]>();
  for (const entry of perBusiness) columns.set(entry.table, await writtenColumns(db, live, entry));
  for (const entry of perBusiness) {
    await takeLiveValues(db, live, scratch, entry, columns.get(entry.table) ?? []);
    await referLikeLive(db, live, scratch, entry, columns.get(entry.table) ?? []);
  }
  for (const mapped of MAPPED) await mapIds(db, live, scratch, mapped);

  const scope: MergeScope = { db, live, scratch, tally };
  const tables = perBusiness.map((entry) => rebuiltTable(entry, columns, scratch));
  await deleteRowsRebuildLacks(scope, tables);
  await writeRebuiltRows(scope, tables);
  await mergeReplayedRunRows(scope, replayedRuns);
  await upsertReferenceData(scope);
  await addClosedAlerts(scope, notDeliveredNote);

  // The live ids the merge wrote: a row a sync adds next takes one past them.
  for (const { table, column } of MAPPED) await idsPastLive(db, live, live, table, column);
  return [...tally.values()];
}

/**
 * The rebuilt rows of a table merged per business take the live row's values where the
 * replay does not rebuild them (`keepLive`) or cannot reproduce them exactly: a time of
 * the same UTC day (`keepLiveSameDay`), a time the live run took from its own clock while
 * nothing else of the row changed (`keepLiveUnlessChanged`).
 */
async function takeLiveValues(
  db: Db,
  live: string,
  scratch: string,
  entry: MergedAs<'per business'>,
  columns: readonly ColumnInfo[],
): Promise<void> {
  const { table, key, merge } = entry;
  const match = sql.join(
    key.map((k) => sql`l.${sql.id(k)} = s.${sql.id(k)}`),
    sql` and `,
  );
  const keep = merge.keepLive ?? [];
  if (keep.length > 0) {
    await sql`update ${sql.id(scratch, table)} s
       set ${sql.join(keep.map((c) => sql`${sql.id(c)} = l.${sql.id(c)}`))}
      from ${sql.id(live, table)} l
     where ${match} and (${sql.join(keep.map((c) => sql`s.${sql.id(c)}`))})
       is distinct from (${sql.join(keep.map((c) => sql`l.${sql.id(c)}`))})`.execute(db);
  }
  for (const c of merge.keepLiveSameDay ?? []) {
    const column = sql.id(c);
    await sql`update ${sql.id(scratch, table)} s set ${column} = l.${column}
      from ${sql.id(live, table)} l
     where ${match} and s.${column} <> l.${column}
       and (s.${column} at time zone 'UTC')::date = (l.${column} at time zone 'UTC')::date`.execute(
      db,
    );
  }
  const unlessChanged = merge.keepLiveUnlessChanged ?? [];
  const others = columns.filter((c) => !key.includes(c.name) && !unlessChanged.includes(c.name));
  if (unlessChanged.length > 0) {
    const row = (alias: string) => sql.join(others.map((c) => sql.ref(`${alias}.${c.name}`)));
    await sql`update ${sql.id(scratch, table)} s
       set ${sql.join(unlessChanged.map((c) => sql`${sql.id(c)} = l.${sql.id(c)}`))}
      from ${sql.id(live, table)} l
     where ${match} and (${row('s')}) is not distinct from (${row('l')})`.execute(db);
  }
}

/** A merged table as the merge's steps over rows read it: its columns and rebuilt rows. */
interface RebuiltTable {
  entry: MergedAs<'per business'>;
  tableColumns: ColumnInfo[];
  /** The rebuilt rows of the merged businesses (`rebuiltRows`). */
  rows: RawBuilder<unknown>;
}

function rebuiltTable(
  entry: MergedAs<'per business'>,
  columns: ReadonlyMap<string, ColumnInfo[]>,
  scratch: string,
): RebuiltTable {
  const tableColumns = columns.get(entry.table) ?? [];
  const owner = ownerOf(entry.owner ?? 'business_id', scratch);
  return { entry, tableColumns, rows: rebuiltRows(entry.table, tableColumns, scratch, owner) };
}

/** What every step of the merge works in: the two schemas and the counts it adds to. */
interface MergeScope {
  db: Db;
  live: string;
  scratch: string;
  tally: Tally;
}

/**
 * Deletes the live rows of the merged businesses that the rebuild lacks, children first.
 * A live row that names a contested id is never deleted (`frozen`).
 */
async function deleteRowsRebuildLacks(
  { db, live, scratch, tally }: MergeScope,
  tables: readonly RebuiltTable[],
): Promise<void> {
  for (const { entry, tableColumns, rows } of [...tables].reverse()) {
    const match = sql.join(
      entry.key.map((k) => sql`s.${sql.id(k)} = t.${sql.id(k)}`),
      sql` and `,
    );
    const result = await sql`delete from ${sql.id(live, entry.table)} t
      where ${inMerge(scratch, ownerOf(entry.owner ?? 'business_id', live))}
        and not ${frozen(entry, tableColumns, scratch)}
        and not exists (select 1 from ${rows} s where ${match})`.execute(db);
    changeOf(tally, entry.table).deleted += Number(result.numAffectedRows ?? 0);
  }
}

/**
 * Upserts the rebuilt rows of the merged businesses into the live tables, parents first.
 * A rebuilt row that names a contested id is not written (`frozen`): the live warehouse
 * holds it elsewhere.
 */
async function writeRebuiltRows(
  { db, live, scratch, tally }: MergeScope,
  tables: readonly RebuiltTable[],
): Promise<void> {
  for (const { entry, tableColumns, rows } of tables) {
    const { ins, upd } = await upsert(
      db,
      live,
      entry.table,
      tableColumns,
      entry.key,
      rows,
      sql`${inMerge(scratch, sql`t.replay_owner`)} and not ${frozen(entry, tableColumns, scratch)}`,
    );
    countUpsert(tally, entry.table, ins, upd);
  }
}

/**
 * The replayed runs' rows (the quarantine rows), of the merged businesses and of none (the
 * accounts' own): a live row the rebuild has too stays as it is, taking the rebuild's
 * `liveTimes` only where it has none; the others are deleted and the rebuild's added.
 * None about a contested id is touched.
 */
async function mergeReplayedRunRows(
  { db, live, scratch, tally }: MergeScope,
  replayedRuns: readonly string[],
): Promise<void> {
  for (const entry of replayedRuns.length > 0 ? mergedAs('per run') : []) {
    const { table, owner = 'business_id', merge } = entry;
    const ofMerge = (schema: string) =>
      sql`(${ownerOf(owner, schema)} is null or ${inMerge(scratch, ownerOf(owner, schema))})
        and t.run_id = any(${[...replayedRuns]}::uuid[]) and not ${aboutContested(scratch)}`;
    const written = await writtenColumns(db, live, entry);
    const content = written.filter((c) => !merge.liveTimes.includes(c.name));
    const same = (other: string) =>
      sql`(${sql.join(content.map((c) => sql`t.${sql.id(c.name)}`))}) is not distinct from
        (${sql.join(content.map((c) => sql.ref(`${other}.${c.name}`)))})`;
    const removed = await sql`delete from ${sql.id(live, table)} t where ${ofMerge(live)}
      and not exists (select 1 from ${sql.id(scratch, table)} s where ${same('s')})`.execute(db);
    changeOf(tally, table).deleted += Number(removed.numAffectedRows ?? 0);
    for (const time of merge.liveTimes) {
      const column = sql.id(time);
      const filled = await sql`update ${sql.id(live, table)} t set ${column} = s.${column}
        from ${sql.id(scratch, table)} s
       where ${ofMerge(live)} and ${same('s')} and t.${column} is null and s.${column} is not null`.execute(
        db,
      );
      changeOf(tally, table).updated += Number(filled.numAffectedRows ?? 0);
    }
    const list = sql.join(written.map((c) => sql.id(c.name)));
    const added = await sql`insert into ${sql.id(live, table)} (${list})
      select ${list} from ${sql.id(scratch, table)} t where ${ofMerge(scratch)}
        and not exists (select 1 from ${sql.id(live, table)} l where ${same('l')})`.execute(db);
    changeOf(tally, table).inserted += Number(added.numAffectedRows ?? 0);
  }
}

/** Reference data: every rebuilt row upserted by key, none deleted. */
async function upsertReferenceData({ db, live, scratch, tally }: MergeScope): Promise<void> {
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
    countUpsert(tally, entry.table, ins, upd);
  }
}

/**
 * The alerts only the rebuild raised, added closed: delivered at the merge's time with
 * `notDeliveredNote`, so no sink hears old news. Every live alert stays as it is.
 */
async function addClosedAlerts(
  { db, live, scratch, tally }: MergeScope,
  notDeliveredNote: string,
): Promise<void> {
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
    changeOf(tally, table).inserted += Number(added.numAffectedRows ?? 0);
  }
}
