/**
 * The contested-id rule of `replay --in-place` (docs/replay.md, "Replay in place"): an id
 * the upstream showed under two businesses (`ReplayTable.sharedId`) that the live warehouse
 * holds under another business than the rebuild is contested, and the merge
 * (src/replay/merge.ts) leaves everything that names it as the live warehouse has it.
 * This module finds those ids and says which rows they freeze.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';
import type { Merge, ReplayTable } from '../warehouse/write/replay-table.ts';
import type { ColumnInfo } from './scratch.ts';
import { REPLAY_TABLES } from './tables.ts';

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
export async function findContested(db: Db, live: string, scratch: string): Promise<void> {
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
export function frozen(
  entry: ReplayTable & { merge: Extract<Merge, { kind: 'per business' }> },
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
export async function referLikeLive(
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
export function aboutContested(scratch: string): RawBuilder<unknown> {
  if (SHARED.length === 0) return sql`false`;
  return sql`(${sql.join(
    SHARED.map(
      (shared) =>
        sql`t.location in (select ${shared.location} || ' ' || c.id::text from ${sql.id(scratch, shared.contested)} c)`,
    ),
    sql` or `,
  )})`;
}
