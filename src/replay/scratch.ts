/**
 * The scratch schema of `replay --in-place` (docs/replay.md, "Replay in place"): built
 * beside the live one, seeded with each rebuilt business as it stood before its window
 * (each table as its entry in src/replay/tables.ts says), replayed into, and
 * dropped whatever the outcome. The live schema is only read here.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';
import type { ReplayTable, WoundBack } from '../warehouse/write/replay-table.ts';
import { REPLAY_TABLES } from './tables.ts';

/** Drops the scratch schema and all it holds; nothing when there is none. */
export async function dropScratch(db: Db, scratch: string): Promise<void> {
  await sql`drop schema if exists ${sql.id(scratch)} cascade`.execute(db);
}

/**
 * The table of windows in the scratch schema (business, window start, its UTC day), which
 * the start state and the merge join; a business not in it is not merged.
 */
export function windowsTable(scratch: string) {
  return sql.id(scratch, 'replay_windows');
}

async function writeWindows(
  db: Db,
  scratch: string,
  windows: ReadonlyMap<number, Date>,
): Promise<void> {
  await sql`create table ${windowsTable(scratch)} (
      business_id bigint primary key, window_start timestamptz not null, window_day date not null)`.execute(
    db,
  );
  const entries = [...windows];
  for (let i = 0; i < entries.length; i += 1000) {
    const part = entries.slice(i, i + 1000);
    await sql`insert into ${windowsTable(scratch)} (business_id, window_start, window_day)
      select b, w, (w at time zone 'UTC')::date
        from unnest(${part.map(([id]) => String(id))}::bigint[], ${part.map(([, at]) => at.toISOString())}::timestamptz[]) as u(b, w)`.execute(
      db,
    );
  }
}

export interface ColumnInfo {
  name: string;
  generated: boolean;
}

export async function columnsOf(db: Db, schema: string, table: string): Promise<ColumnInfo[]> {
  const { rows } = await sql<{ column_name: string; is_generated: string }>`
    select column_name, is_generated from information_schema.columns
     where table_schema = ${schema} and table_name = ${table}
     order by ordinal_position`.execute(db);
  return rows.map((r) => ({ name: r.column_name, generated: r.is_generated === 'ALWAYS' }));
}

/**
 * Sets the sequence of `schema.table.column` one past every id `live.table` holds, so an
 * id it gives is never a live row's.
 */
export async function idsPastLive(
  db: Db,
  schema: string,
  live: string,
  table: string,
  column: string,
): Promise<void> {
  await sql`select setval(pg_get_serial_sequence(${`"${schema}"."${table}"`}, ${column}),
      coalesce((select max(${sql.id(column)}) from ${sql.id(live, table)}), 0) + 1, false)`.execute(
    db,
  );
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * `insert into scratch.table (columns) select …` where each column is `t.column` unless
 * `overrides` gives its expression (raw SQL over the aliases of `from`).
 */
async function seedTable(
  db: Db,
  scratch: string,
  table: string,
  overrides: Readonly<Record<string, string>>,
  from: RawBuilder<unknown>,
): Promise<void> {
  const columns = (await columnsOf(db, scratch, table)).filter((c) => !c.generated);
  const list = sql.join(columns.map((c) => sql.id(c.name)));
  const values = sql.join(
    columns.map((c) => sql.raw(overrides[c.name] ?? `t.${quoteIdent(c.name)}`)),
  );
  await sql`insert into ${sql.id(scratch, table)} (${list}) overriding system value
    select ${values} ${from}`.execute(db);
}

/** A rebuilt business's rows of one table, as they stood before its window. */
async function seedWoundBack(
  db: Db,
  live: string,
  scratch: string,
  entry: ReplayTable,
  seed: WoundBack,
): Promise<void> {
  const L = (table: string) => sql.id(live, table);
  const owner = entry.owner ?? 'business_id';
  // The row's business: its own, or its live parent row's.
  const ownerJoin =
    owner === 'business_id'
      ? sql``
      : sql`join ${L(owner.parent)} o on o.${sql.id(owner.on)} = t.${sql.id(owner.on)}`;
  const business = owner === 'business_id' ? sql`t.business_id` : sql`o.business_id`;
  const before = seed.before
    ? sql` and t.${sql.id(seed.before.column)} < ${seed.before.by === 'time' ? sql`w.window_start` : sql`w.window_day`}`
    : sql``;
  const overrides: Record<string, string> = { ...seed.overrides };
  let lastVersion = sql``;
  if (seed.lastVersion) {
    const { history, match, fields } = seed.lastVersion;
    lastVersion = sql`left join lateral (
        select * from ${L(history)} v
         where ${sql.join(
           match.map((c) => sql`v.${sql.id(c)} = t.${sql.id(c)}`),
           sql` and `,
         )} and v.observed_at < w.window_start
         order by v.observed_at desc limit 1) v on true`;
    if (fields === 'profile') {
      lastVersion = sql`${lastVersion}
      left join lateral jsonb_populate_record(null::${sql.id(scratch, entry.table)}, v.profile) p on true`;
      for (const { name } of await columnsOf(db, scratch, entry.table)) {
        if (name in overrides) continue;
        const key = name.replaceAll("'", "''");
        overrides[name] =
          `case when v.profile is null or not (v.profile ? '${key}') then t.${quoteIdent(name)} else p.${quoteIdent(name)} end`;
      }
    } else {
      for (const field of fields) {
        overrides[field] =
          `case when v.observed_at is null then t.${quoteIdent(field)} else v.${quoteIdent(field)} end`;
      }
    }
  }
  const parent = seed.parent
    ? sql`where exists (select 1 from ${sql.id(scratch, seed.parent.table)} s
        where s.${sql.id(seed.parent.on)} = t.${sql.id(seed.parent.on)})`
    : sql``;
  await seedTable(
    db,
    scratch,
    entry.table,
    overrides,
    sql`from ${L(seed.source ?? entry.table)} t ${ownerJoin}
      join ${windowsTable(scratch)} w on w.business_id = ${business}${before}
      ${lastVersion}
     ${parent}`,
  );
}

/**
 * The scratch schema, migrated and empty, seeded with what the replay starts from: the
 * tables it does not rebuild per business (accounts, reference data, response requests,
 * every alert, so that none is raised twice), and each rebuilt business as it stood before
 * its window: its history before it, and its current rows wound back to the last kept
 * state (the profile of its last version, each listing's status fields of its last
 * history row, each review's content of its last version). Row content no history keeps
 * (a listing's name, a keyword) is seeded as it is now, with a content hash that makes the
 * first night of the window write it again. Each table as src/replay/tables.ts
 * says, in its order.
 */
export async function seedScratch(
  /** The scratch schema's connection: its search path is `scratch`. */
  db: Db,
  live: string,
  scratch: string,
  windows: ReadonlyMap<number, Date>,
): Promise<void> {
  await writeWindows(db, scratch, windows);
  for (const entry of REPLAY_TABLES) {
    const { seed } = entry;
    if (!seed) continue;
    if (seed === 'copy') {
      await seedTable(db, scratch, entry.table, {}, sql`from ${sql.id(live, entry.table)} t`);
    } else if ('derive' in seed) {
      await seed.derive(db, scratch);
    } else {
      await seedWoundBack(db, live, scratch, entry, seed);
    }
    // A seeded row keeps its id; one the replay adds takes one past every live id.
    if (entry.ids) await idsPastLive(db, scratch, live, entry.table, entry.ids.column);
  }
}

/**
 * Rebuilt businesses the replay did not write through to the end of their window (absent
 * from the scratch schema, or last seen there before they were last seen live): kept
 * whole, since the merge would lose the nights it missed. (A business whose write failed
 * in the replay is reported by the replay itself.)
 */
export async function incompleteRebuilds(db: Db, live: string, scratch: string): Promise<number[]> {
  const { rows } = await sql<{ business_id: string }>`
    select w.business_id::text as business_id
      from ${windowsTable(scratch)} w
      join ${sql.id(live, 'businesses')} b on b.business_id = w.business_id
      left join ${sql.id(scratch, 'businesses')} s on s.business_id = w.business_id
     where s.business_id is null or s.last_seen_at < b.last_seen_at
     order by 1`.execute(db);
  return rows.map((r) => Number(r.business_id));
}

/** Takes businesses out of the merge: their live rows stay as they are. */
export async function dropFromMerge(
  db: Db,
  scratch: string,
  ids: readonly number[],
): Promise<void> {
  if (ids.length === 0) return;
  await sql`delete from ${windowsTable(scratch)} where business_id = any(${ids.map(String)}::bigint[])`.execute(
    db,
  );
}

/**
 * Every run id the replay wrote in `scratch` names the kept run it replayed, so history
 * names the nights' own runs.
 */
export async function pointRunIdsBack(
  db: Db,
  scratch: string,
  runIds: ReadonlyMap<string, string>,
): Promise<void> {
  const pairs = [...runIds];
  if (pairs.length === 0) return;
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
      join information_schema.tables t
        on t.table_schema = c.table_schema and t.table_name = c.table_name
     where c.table_schema = ${scratch} and t.table_type = 'BASE TABLE'
       and c.column_name in ('run_id', 'last_run_id') and c.table_name <> 'sync_runs'
     order by 1, 2`.execute(db);
  const mapping = sql`(values ${sql.join(
    pairs.map(([replayed, original]) => sql`(${replayed}::uuid, ${original}::uuid)`),
  )}) as m(replayed, original)`;
  for (const { table_name, column_name } of rows) {
    await sql`update ${sql.id(scratch, table_name)} t set ${sql.id(column_name)} = m.original
      from ${mapping} where t.${sql.id(column_name)} = m.replayed`.execute(db);
  }
}
