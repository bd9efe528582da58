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
import type { Merge, Owner, ReplayTable } from '../warehouse/write/replay-table.ts';
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

/** A table keyed by an id the upstream may show under two businesses (`ReplayTable.sharedId`). */
interface Shared {
  table: string;
  column: string;
  location: string;
  /** The scratch table of its contested ids. */
  contested: string;
}

const SHARED: readonly Shared[] = REPLAY_TABLES.flatMap(({ table, key, sharedId }) =>
  sharedId && key.length === 1
    ? [
        {
          table,
          column: key[0] as string,
          location: sharedId.location,
          contested: `replay_${table}_contested`,
        },
      ]
    : [],
);

/**
 * The ids the live warehouse holds under another business than the rebuild (two
 * credentials, each first to commit once; a user's manual move; an older release's
 * commit order): the merge leaves everything that names them as it is (docs/replay.md,
 * "Replay in place"). The live owner is the one stored, whichever business the rebuild
 * has it under, of the merge or kept whole.
 */
async function findContested(db: Db, live: string, scratch: string): Promise<void> {
  for (const shared of SHARED) {
    const id = sql.id(shared.column);
    await sql`create table ${sql.id(scratch, shared.contested)} as
      select s.${id} as id, l.business_id as live_owner, s.business_id as rebuilt_owner
        from ${sql.id(scratch, shared.table)} s
        join ${sql.id(live, shared.table)} l on l.${id} = s.${id}
       where l.business_id <> s.business_id`.execute(db);
  }
}

const contestedIds = (scratch: string, shared: Shared) =>
  sql`(select id from ${sql.id(scratch, shared.contested)})`;

/**
 * The shared ids whose contest freezes a row of `entry`: the table's own id, the ids of
 * a table that is itself shared (a response names its review), and its parent's id.
 */
function freezingIds(entry: ReplayTable, columns: readonly ColumnInfo[]): Shared[] {
  const owner = entry.owner;
  return SHARED.filter(
    (shared) =>
      columns.some((c) => c.name === shared.column) &&
      (entry.sharedId !== undefined ||
        (typeof owner === 'object' && owner.parent === shared.table && owner.on === shared.column)),
  );
}

/**
 * Whether row `t` names a contested id that freezes it, or (`liveWhereContested`) belongs
 * to a business that holds or carries one: the merge neither deletes nor writes it.
 */
function frozen(
  entry: MergedAs<'per business'>,
  columns: readonly ColumnInfo[],
  scratch: string,
): RawBuilder<unknown> {
  const conditions = freezingIds(entry, columns).map(
    (shared) => sql`t.${sql.id(shared.column)} in ${contestedIds(scratch, shared)}`,
  );
  if (entry.merge.liveWhereContested) {
    for (const shared of SHARED) {
      const contested = sql.id(scratch, shared.contested);
      conditions.push(sql`t.business_id in (select live_owner from ${contested}
        union all select rebuilt_owner from ${contested})`);
    }
  }
  if (conditions.length === 0) return sql`false`;
  return sql`(${sql.join(conditions, sql` or `)})`;
}

/**
 * A rebuilt row that only refers to a contested id (a rank series names its keyword)
 * takes the reference the live row has (none, where the live warehouse has no such row):
 * it never names an id the live warehouse holds under another business.
 */
async function referLikeLive(
  db: Db,
  live: string,
  scratch: string,
  entry: ReplayTable,
  columns: readonly ColumnInfo[],
): Promise<void> {
  const freezing = freezingIds(entry, columns);
  const same = entry.ids?.sameRowAs ?? entry.key;
  const match = sql.join(
    same.map((c) => sql`l.${sql.id(c)} = s.${sql.id(c)}`),
    sql` and `,
  );
  for (const shared of SHARED) {
    if (freezing.includes(shared) || !columns.some((c) => c.name === shared.column)) continue;
    const id = sql.id(shared.column);
    await sql`update ${sql.id(scratch, entry.table)} s
       set ${id} = (select l.${id} from ${sql.id(live, entry.table)} l where ${match})
     where s.${id} in ${contestedIds(scratch, shared)}`.execute(db);
  }
}

/** Whether a quarantine row `t` is about a contested id (its `location`, `reviews <id>`). */
function aboutContested(scratch: string): RawBuilder<unknown> {
  if (SHARED.length === 0) return sql`false`;
  return sql`(${sql.join(
    SHARED.map(
      (shared) =>
        sql`t.location in (select ${shared.location} || ' ' || c.id::text from ${sql.id(scratch, shared.contested)} c)`,
    ),
    sql` or `,
  )})`;
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
  await findContested(db, live, scratch);

  const columns = new Map<string, ColumnInfo[]>();
  for (const entry of perBusiness) columns.set(entry.table, await writtenColumns(db, live, entry));
  for (const entry of perBusiness) {
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
    const others = (columns.get(table) ?? []).filter(
      (c) => !key.includes(c.name) && !unlessChanged.includes(c.name),
    );
    if (unlessChanged.length > 0) {
      const row = (alias: string) => sql.join(others.map((c) => sql.ref(`${alias}.${c.name}`)));
      await sql`update ${sql.id(scratch, table)} s
         set ${sql.join(unlessChanged.map((c) => sql`${sql.id(c)} = l.${sql.id(c)}`))}
        from ${sql.id(live, table)} l
       where ${match} and (${row('s')}) is not distinct from (${row('l')})`.execute(db);
    }
    await referLikeLive(db, live, scratch, entry, columns.get(table) ?? []);
  }
  for (const mapped of MAPPED) await mapIds(db, live, scratch, mapped);

  // Children first. A live row that names a contested id is never deleted (`frozen`).
  for (const entry of [...perBusiness].reverse()) {
    const { table, key, owner = 'business_id' } = entry;
    const tableColumns = columns.get(table) ?? [];
    const rows = rebuiltRows(table, tableColumns, scratch, ownerOf(owner, scratch));
    const match = sql.join(
      key.map((k) => sql`s.${sql.id(k)} = t.${sql.id(k)}`),
      sql` and `,
    );
    const result = await sql`delete from ${sql.id(live, table)} t
      where ${inMerge(ownerOf(owner, live))}
        and not ${frozen(entry, tableColumns, scratch)}
        and not exists (select 1 from ${rows} s where ${match})`.execute(db);
    change(table).deleted += Number(result.numAffectedRows ?? 0);
  }
  // Nor is a rebuilt row that names one written: the live warehouse holds it elsewhere.
  for (const entry of perBusiness) {
    const { table, key, owner = 'business_id' } = entry;
    const tableColumns = columns.get(table) ?? [];
    const rows = rebuiltRows(table, tableColumns, scratch, ownerOf(owner, scratch));
    const { ins, upd } = await upsert(
      db,
      live,
      table,
      tableColumns,
      key,
      rows,
      sql`${inMerge(sql`t.replay_owner`)} and not ${frozen(entry, tableColumns, scratch)}`,
    );
    change(table).inserted += ins;
    change(table).updated += upd;
  }

  // The replayed runs' rows, of the merged businesses and of none (the accounts' own): a
  // live row the rebuild has too stays as it is; none about a contested id is touched.
  for (const entry of replayedRuns.length > 0 ? mergedAs('per run') : []) {
    const { table, owner = 'business_id', merge } = entry;
    const ofMerge = (schema: string) =>
      sql`(${ownerOf(owner, schema)} is null or ${inMerge(ownerOf(owner, schema))})
        and t.run_id = any(${[...replayedRuns]}::uuid[]) and not ${aboutContested(scratch)}`;
    const written = await writtenColumns(db, live, entry);
    const content = written.filter((c) => !merge.liveTimes.includes(c.name));
    const same = (other: string) =>
      sql`(${sql.join(content.map((c) => sql`t.${sql.id(c.name)}`))}) is not distinct from
        (${sql.join(content.map((c) => sql.ref(`${other}.${c.name}`)))})`;
    const removed = await sql`delete from ${sql.id(live, table)} t where ${ofMerge(live)}
      and not exists (select 1 from ${sql.id(scratch, table)} s where ${same('s')})`.execute(db);
    change(table).deleted += Number(removed.numAffectedRows ?? 0);
    for (const time of merge.liveTimes) {
      const column = sql.id(time);
      const filled = await sql`update ${sql.id(live, table)} t set ${column} = s.${column}
        from ${sql.id(scratch, table)} s
       where ${ofMerge(live)} and ${same('s')} and t.${column} is null and s.${column} is not null`.execute(
        db,
      );
      change(table).updated += Number(filled.numAffectedRows ?? 0);
    }
    const list = sql.join(written.map((c) => sql.id(c.name)));
    const added = await sql`insert into ${sql.id(live, table)} (${list})
      select ${list} from ${sql.id(scratch, table)} t where ${ofMerge(scratch)}
        and not exists (select 1 from ${sql.id(live, table)} l where ${same('l')})`.execute(db);
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
