/**
 * The SQL of `replay --in-place` (docs/replay.md, "Replay in place"): which businesses
 * the raw zone can rebuild and from when (their window), the scratch schema seeded with
 * each one's state as it stood before its window, and the merge of the rebuilt rows into
 * the live tables in one transaction.
 *
 * The live tables are never dropped, renamed or truncated: rows are deleted, inserted and
 * updated by primary key, so grants, comments, the operator's views and a reader's snapshot
 * all stay as PostgreSQL keeps them for any write. Rows older than a business's window,
 * and every row of a business the raw zone cannot rebuild, are left exactly as they are.
 */
import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database } from './database.ts';
import { TRACKED } from './listings.ts';
import { recomputeLatest } from './rankings.ts';

type Db = Kysely<Database> | Transaction<Database>;

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

/** The table of windows in the scratch schema, which the start state and the merge join. */
const WINDOWS = 'replay_windows';

async function writeWindows(
  db: Db,
  scratch: string,
  windows: ReadonlyMap<number, Date>,
): Promise<void> {
  await sql`create table ${sql.id(scratch, WINDOWS)} (
      business_id bigint primary key, window_start timestamptz not null, window_day date not null)`.execute(
    db,
  );
  const entries = [...windows];
  for (let i = 0; i < entries.length; i += 1000) {
    const part = entries.slice(i, i + 1000);
    await sql`insert into ${sql.id(scratch, WINDOWS)} (business_id, window_start, window_day)
      select b, w, (w at time zone 'UTC')::date
        from unnest(${part.map(([id]) => String(id))}::bigint[], ${part.map(([, at]) => at.toISOString())}::timestamptz[]) as u(b, w)`.execute(
      db,
    );
  }
}

interface ColumnInfo {
  name: string;
  generated: boolean;
}

async function columnsOf(db: Db, schema: string, table: string): Promise<ColumnInfo[]> {
  const { rows } = await sql<{ column_name: string; is_generated: string }>`
    select column_name, is_generated from information_schema.columns
     where table_schema = ${schema} and table_name = ${table}
     order by ordinal_position`.execute(db);
  return rows.map((r) => ({ name: r.column_name, generated: r.is_generated === 'ALWAYS' }));
}

/**
 * `insert into scratch.table (columns) select …` where each column is `alias.column` unless
 * `overrides` gives its expression (raw SQL over the query's aliases).
 */
async function seedTable(
  db: Db,
  scratch: string,
  table: string,
  alias: string,
  overrides: Record<string, string>,
  from: RawBuilder<unknown>,
): Promise<void> {
  const columns = (await columnsOf(db, scratch, table)).filter((c) => !c.generated);
  const list = sql.join(columns.map((c) => sql.id(c.name)));
  const values = sql.join(
    columns.map((c) => sql.raw(overrides[c.name] ?? `${alias}.${quoteIdent(c.name)}`)),
  );
  await sql`insert into ${sql.id(scratch, table)} (${list}) overriding system value
    select ${values} ${from}`.execute(db);
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Columns of `businesses` a profile version records (its `profile` keys); the rest are bookkeeping. */
const BUSINESS_BOOKKEEPING: Record<string, string> = {
  business_id: 'b.business_id',
  account_name: 'b.account_name',
  first_seen_at: 'b.first_seen_at',
  last_seen_at:
    'case when b.last_seen_at < w.window_start then b.last_seen_at else coalesce(v.observed_at, b.first_seen_at) end',
  archived_at: 'case when b.archived_at < w.window_start then b.archived_at end',
  content_hash: "coalesce(v.content_hash, '')",
  profile_changed_at: 'coalesce(v.observed_at, b.first_seen_at)',
  profile_first_read_at:
    'case when b.profile_first_read_at < w.window_start then b.profile_first_read_at end',
  listings_first_synced_at:
    'case when b.listings_first_synced_at < w.window_start then b.listings_first_synced_at end',
  reviews_first_synced_at:
    'case when b.reviews_first_synced_at < w.window_start then b.reviews_first_synced_at end',
  rankings_first_synced_at:
    'case when b.rankings_first_synced_at < w.window_start then b.rankings_first_synced_at end',
  keywords_first_synced_at:
    'case when b.keywords_first_synced_at < w.window_start then b.keywords_first_synced_at end',
  // Set by operation 4, which no read serves: as it is.
  sub_category_name: 'b.sub_category_name',
  removals_held: 'null',
};

/** Before its window, a row removed inside it was still there. */
const REMOVED_BEFORE = 'case when t.removed_at < w.window_start then t.removed_at end';
/** A row is written (and `last_seen_at` moved) only when its content changes. */
const SEEN_BEFORE = "least(t.last_seen_at, w.window_start - interval '1 millisecond')";
/**
 * A row last written before the window held then what it holds now; one written inside
 * it is written again by the first night of the window that reads it (an empty hash never
 * matches), which is what makes its later nights compare as they did.
 */
const HASH_BEFORE = "case when t.last_seen_at < w.window_start then t.content_hash else '' end";

/**
 * The scratch schema, migrated and empty, seeded with what the replay starts from: the
 * tables it does not rebuild per business (accounts, reference data, response requests,
 * every alert, so that none is raised twice), and each rebuilt business as it stood before
 * its window: its history before it, and its current rows wound back to the last kept
 * state (the profile of its last version, each listing's status fields of its last
 * history row, each review's content of its last version). Row content no history keeps
 * (a listing's name, a keyword) is seeded as it is now, with a content hash that makes the
 * first night of the window write it again.
 */
export async function seedScratch(
  /** The scratch schema's connection: its search path is `scratch`. */
  db: Db,
  live: string,
  scratch: string,
  windows: ReadonlyMap<number, Date>,
): Promise<void> {
  await writeWindows(db, scratch, windows);
  const L = (table: string) => sql.id(live, table);
  const W = sql.id(scratch, WINDOWS);
  for (const table of [
    'accounts',
    'countries',
    'states',
    'sub_categories',
    'review_response_requests',
    'review_response_request_events',
    'alerts',
  ]) {
    await seedTable(db, scratch, table, 't', {}, sql`from ${L(table)} t`);
  }
  // A seeded alert keeps its id; one the replay raises takes one past every live id.
  await sql`select setval(pg_get_serial_sequence(${`"${scratch}"."alerts"`}, 'alert_id'),
      coalesce((select max(alert_id) from ${L('alerts')}), 0) + 1, false)`.execute(db);

  const profileColumns = (await columnsOf(db, scratch, 'businesses')).filter(
    (c) => !(c.name in BUSINESS_BOOKKEEPING),
  );
  await seedTable(
    db,
    scratch,
    'businesses',
    'b',
    {
      ...BUSINESS_BOOKKEEPING,
      ...Object.fromEntries(
        profileColumns.map((c) => [
          c.name,
          `case when v.profile is null or not (v.profile ? '${c.name}') then b.${quoteIdent(c.name)} else p.${quoteIdent(c.name)} end`,
        ]),
      ),
    },
    sql`from ${L('businesses')} b
      join ${W} w on w.business_id = b.business_id and b.first_seen_at < w.window_start
      left join lateral (
        select v.observed_at, v.content_hash, v.profile from ${L('business_versions')} v
         where v.business_id = b.business_id and v.observed_at < w.window_start
         order by v.observed_at desc limit 1) v on true
      left join lateral jsonb_populate_record(null::${sql.id(scratch, 'businesses')}, v.profile) p on true`,
  );
  await seedTable(
    db,
    scratch,
    'business_versions',
    't',
    {},
    sql`from ${L('business_versions')} t
      join ${W} w on w.business_id = t.business_id and t.observed_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );

  await seedTable(
    db,
    scratch,
    'listings',
    't',
    {
      ...Object.fromEntries(
        TRACKED.map((f) => [f, `case when h.observed_at is null then t.${f} else h.${f} end`]),
      ),
      status_changed_at: 'coalesce(h.observed_at, t.first_seen_at)',
      removed_at: REMOVED_BEFORE,
      last_seen_at: SEEN_BEFORE,
      content_hash: HASH_BEFORE,
    },
    sql`from ${L('listings')} t
      join ${W} w on w.business_id = t.business_id and t.first_seen_at < w.window_start
      left join lateral (
        select * from ${L('listing_status_history')} h
         where h.business_id = t.business_id and h.listing_id = t.listing_id
           and h.observed_at < w.window_start
         order by h.observed_at desc limit 1) h on true
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  await seedTable(
    db,
    scratch,
    'listing_status_history',
    't',
    {},
    sql`from ${L('listing_status_history')} t
      join ${W} w on w.business_id = t.business_id and t.observed_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  await seedTable(
    db,
    scratch,
    'listing_accuracy_days',
    't',
    {},
    sql`from ${L('listing_accuracy_days')} t
      join ${W} w on w.business_id = t.business_id and t.day < w.window_day
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  // The Inaccurate episodes begun before the window, as they stood then: one fixed inside
  // it is open again, for the window's nights to fix.
  await seedTable(
    db,
    scratch,
    'listing_fixes',
    't',
    {
      fixed_at: 'case when t.fixed_at < w.window_start then t.fixed_at end',
      fixed_on: 'case when t.fixed_at < w.window_start then t.fixed_on end',
    },
    sql`from ${L('listing_fixes')} t
      join ${W} w on w.business_id = t.business_id and t.turned_inaccurate_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );

  const REVIEW_FIELDS = [
    'rating',
    'title',
    'content',
    'likes_count',
    'likes_change',
    'response_count',
  ];
  await seedTable(
    db,
    scratch,
    'reviews',
    't',
    {
      ...Object.fromEntries(
        REVIEW_FIELDS.map((f) => [
          f,
          `case when v.observed_at is null then t.${f} else v.${f} end`,
        ]),
      ),
      content_hash: "coalesce(v.content_hash, '')",
      removed_at: REMOVED_BEFORE,
      last_seen_at: SEEN_BEFORE,
    },
    sql`from ${L('reviews')} t
      join ${W} w on w.business_id = t.business_id and t.first_seen_at < w.window_start
      left join lateral (
        select * from ${L('review_versions')} v
         where v.review_id = t.review_id and v.observed_at < w.window_start
         order by v.observed_at desc limit 1) v on true
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  await seedTable(
    db,
    scratch,
    'review_versions',
    't',
    {},
    sql`from ${L('review_versions')} t
      join ${L('reviews')} r on r.review_id = t.review_id
      join ${W} w on w.business_id = r.business_id and t.observed_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'reviews')} s where s.review_id = t.review_id)`,
  );
  await seedTable(
    db,
    scratch,
    'review_responses',
    't',
    { removed_at: REMOVED_BEFORE, last_seen_at: SEEN_BEFORE, content_hash: HASH_BEFORE },
    sql`from ${L('review_responses')} t
      join ${W} w on w.business_id = t.business_id and t.first_seen_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'reviews')} s where s.review_id = t.review_id)`,
  );
  // The reviews waiting as they stood before the window: counted from the reviews and
  // responses just seeded, as the reviews writer counts them (src/warehouse/reviews.ts).
  await sql`insert into ${sql.id(scratch, 'review_backlog')} (business_id, reviews_waiting)
    select x.business_id, (count(*) filter (where x.category = 'review'
        and x.removed_at is null and x.can_respond and x.response_count = 0
        and not exists (select 1 from ${sql.id(scratch, 'review_responses')} p
          where p.review_id = x.review_id and p.removed_at is null)))::int
      from ${sql.id(scratch, 'reviews')} x
     group by x.business_id`.execute(db);
  await seedTable(
    db,
    scratch,
    'keywords',
    't',
    {
      deleted_at: 'case when t.deleted_at < w.window_start then t.deleted_at end',
      last_seen_at: SEEN_BEFORE,
      content_hash: HASH_BEFORE,
    },
    sql`from ${L('keywords')} t
      join ${W} w on w.business_id = t.business_id and t.first_seen_at < w.window_start
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );

  // Rank series keep their ids (BI may hold them); a series the replay adds takes one
  // past every live id.
  await seedTable(
    db,
    scratch,
    'rank_series',
    't',
    {},
    sql`from ${L('rank_series')} t
      join ${W} w on w.business_id = t.business_id
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  await sql`select setval(pg_get_serial_sequence(${`"${scratch}"."rank_series"`}, 'series_id'),
      coalesce((select max(series_id) from ${L('rank_series')}), 0) + 1, false)`.execute(db);
  await seedTable(
    db,
    scratch,
    'rank_history',
    't',
    {},
    sql`from ${L('rank_history')} t
      join ${sql.id(scratch, 'rank_series')} s on s.series_id = t.series_id
      join ${W} w on w.business_id = s.business_id and t.observed_on < w.window_day`,
  );
  await seedTable(
    db,
    scratch,
    'visibility_days',
    't',
    {},
    sql`from ${L('visibility_days')} t
      join ${W} w on w.business_id = t.business_id and t.day < w.window_day
     where exists (select 1 from ${sql.id(scratch, 'businesses')} s where s.business_id = t.business_id)`,
  );
  // `db` works in the scratch schema (its search path): the writer's own recomputation.
  const { rows: series } = await sql<{ id: number }>`
    select series_id as id from ${sql.id(scratch, 'rank_series')}`.execute(db);
  await recomputeLatest(
    db,
    series.map((s) => s.id),
  );
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
      from ${sql.id(scratch, WINDOWS)} w
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
  await sql`delete from ${sql.id(scratch, WINDOWS)} where business_id = any(${ids.map(String)}::bigint[])`.execute(
    db,
  );
}

/** What the merge did (or, in a dry run, would do) to one live table. */
export interface TableChange {
  table: string;
  deleted: number;
  inserted: number;
  updated: number;
}

/**
 * The tables rebuilt per business, parents first, with their primary key and how a row
 * finds its business: `owner` over the table's row `t` in either schema.
 */
const MERGED: readonly { table: string; key: string[]; owner: (schema: string) => string }[] = [
  { table: 'businesses', key: ['business_id'], owner: () => 't.business_id' },
  { table: 'business_versions', key: ['business_id', 'observed_at'], owner: () => 't.business_id' },
  { table: 'listings', key: ['business_id', 'listing_id'], owner: () => 't.business_id' },
  {
    table: 'listing_status_history',
    key: ['business_id', 'listing_id', 'observed_at'],
    owner: () => 't.business_id',
  },
  { table: 'listing_accuracy_days', key: ['business_id', 'day'], owner: () => 't.business_id' },
  {
    table: 'listing_fixes',
    key: ['business_id', 'listing_id', 'turned_inaccurate_at'],
    owner: () => 't.business_id',
  },
  { table: 'reviews', key: ['review_id'], owner: () => 't.business_id' },
  {
    table: 'review_versions',
    key: ['review_id', 'observed_at'],
    owner: (schema) =>
      `(select r.business_id from "${schema}".reviews r where r.review_id = t.review_id)`,
  },
  { table: 'review_responses', key: ['response_id'], owner: () => 't.business_id' },
  { table: 'review_backlog', key: ['business_id'], owner: () => 't.business_id' },
  { table: 'keywords', key: ['keyword_id'], owner: () => 't.business_id' },
  { table: 'rank_series', key: ['series_id'], owner: () => 't.business_id' },
  {
    table: 'rank_history',
    key: ['series_id', 'observed_on'],
    owner: (schema) =>
      `(select s.business_id from "${schema}".rank_series s where s.series_id = t.series_id)`,
  },
  {
    table: 'rank_latest',
    key: ['series_id'],
    owner: (schema) =>
      `(select s.business_id from "${schema}".rank_series s where s.series_id = t.series_id)`,
  },
  { table: 'visibility_days', key: ['business_id', 'day', 'site'], owner: () => 't.business_id' },
  { table: 'business_answers', key: ['business_id'], owner: () => 't.business_id' },
];

/** The live tables the merge writes (locked against writers, never against readers). */
export const MERGED_TABLES: readonly string[] = [
  ...MERGED.map((m) => m.table),
  'quarantine',
  'countries',
  'states',
  'sub_categories',
];

/** Scratch series id → the live id of the same business, keyword and site (or its own, new). */
const SERIES_MAP = 'replay_series_map';

/**
 * A series the live warehouse has keeps its id (BI may hold it): each scratch series is
 * mapped to the live series of the same business, keyword and site; a new one keeps the
 * id it was given, past every live id (seedScratch).
 */
async function mapSeries(db: Db, live: string, scratch: string): Promise<void> {
  await sql`create table ${sql.id(scratch, SERIES_MAP)} as
    select s.series_id as scratch_id, coalesce(l.series_id, s.series_id) as live_id
      from ${sql.id(scratch, 'rank_series')} s
      left join ${sql.id(live, 'rank_series')} l
        on l.business_id = s.business_id and l.keyword = s.keyword and l.site = s.site`.execute(db);
}

/**
 * The rebuilt rows of `table` as the live table will hold them (series ids mapped), each
 * with the business it belongs to as `replay_owner`.
 */
function rebuiltRows(
  table: string,
  columns: readonly ColumnInfo[],
  scratch: string,
  owner: string,
): RawBuilder<unknown> {
  const mapped = columns.some((c) => c.name === 'series_id');
  const list = sql.join(
    columns.map((c) =>
      mapped && c.name === 'series_id' ? sql`m.live_id as series_id` : sql`t.${sql.id(c.name)}`,
    ),
  );
  const join = mapped
    ? sql`join ${sql.id(scratch, SERIES_MAP)} m on m.scratch_id = t.series_id`
    : sql``;
  return sql`(select ${list}, ${sql.raw(owner)} as replay_owner
      from ${sql.id(scratch, table)} t ${join})`;
}

/** What the merge did (or, in a dry run, would do) to one live table. */
export interface TableChange {
  table: string;
  deleted: number;
  inserted: number;
  updated: number;
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

/**
 * Writes the rebuilt rows into the live tables (inside the caller's transaction): for each
 * business of the merge, rows the rebuild has are inserted or updated, rows it lacks are
 * deleted; its quarantine rows of the replayed runs are replaced; reference data is
 * upserted; alerts the live warehouse lacks are added, closed undelivered (old news is not
 * sent), and every live alert is left as it is (identity and delivery).
 */
export async function mergeRebuild(
  db: Db,
  live: string,
  scratch: string,
  replayedRuns: readonly string[],
  notDeliveredNote: string,
): Promise<TableChange[]> {
  const W = sql.id(scratch, WINDOWS);
  // Set by operation 4, which no read serves: a business first seen in its window keeps it.
  await sql`update ${sql.id(scratch, 'businesses')} s set sub_category_name = l.sub_category_name
      from ${sql.id(live, 'businesses')} l
     where l.business_id = s.business_id and s.sub_category_name is distinct from l.sub_category_name`.execute(
    db,
  );
  await mapSeries(db, live, scratch);
  const inMerge = (expression: string) =>
    sql`${sql.raw(expression)} in (select business_id from ${W})`;
  const changes = new Map<string, TableChange>();
  const change = (table: string) => {
    const entry = changes.get(table) ?? { table, deleted: 0, inserted: 0, updated: 0 };
    changes.set(table, entry);
    return entry;
  };
  const columns = new Map<string, ColumnInfo[]>();
  for (const { table } of MERGED) {
    columns.set(
      table,
      (await columnsOf(db, live, table)).filter((c) => !c.generated),
    );
  }

  for (const { table, key, owner } of [...MERGED].reverse()) {
    const rows = rebuiltRows(table, columns.get(table) ?? [], scratch, owner(scratch));
    const match = sql.join(
      key.map((k) => sql`s.${sql.id(k)} = t.${sql.id(k)}`),
      sql` and `,
    );
    const result = await sql`delete from ${sql.id(live, table)} t
      where ${inMerge(owner(live))}
        and not exists (select 1 from ${rows} s where ${match})`.execute(db);
    change(table).deleted += Number(result.numAffectedRows ?? 0);
  }
  for (const { table, key, owner } of MERGED) {
    const tableColumns = columns.get(table) ?? [];
    const rows = rebuiltRows(table, tableColumns, scratch, owner(scratch));
    const { ins, upd } = await upsert(
      db,
      live,
      table,
      tableColumns,
      key,
      rows,
      inMerge('t.replay_owner'),
    );
    change(table).inserted += ins;
    change(table).updated += upd;
  }

  // Quarantine rows of the replayed runs, for the merged businesses and the accounts' own.
  if (replayedRuns.length > 0) {
    const ofMerge = sql`(t.business_id is null or ${inMerge('t.business_id')})
      and t.run_id = any(${[...replayedRuns]}::uuid[])`;
    const removed = await sql`delete from ${sql.id(live, 'quarantine')} t where ${ofMerge}`.execute(
      db,
    );
    change('quarantine').deleted += Number(removed.numAffectedRows ?? 0);
    const quarantineColumns = (await columnsOf(db, live, 'quarantine')).filter(
      (c) => !c.generated && c.name !== 'quarantine_id',
    );
    const list = sql.join(quarantineColumns.map((c) => sql.id(c.name)));
    const added = await sql`insert into ${sql.id(live, 'quarantine')} (${list})
      select ${list} from ${sql.id(scratch, 'quarantine')} t where ${ofMerge}`.execute(db);
    change('quarantine').inserted += Number(added.numAffectedRows ?? 0);
  }

  for (const [table, key] of [
    ['countries', 'country_id'],
    ['states', 'state_id'],
    ['sub_categories', 'sub_category_id'],
  ] as const) {
    const tableColumns = (await columnsOf(db, live, table)).filter(
      (c) => !c.generated && c.name !== 'updated_at',
    );
    const { ins, upd } = await upsert(
      db,
      live,
      table,
      tableColumns,
      [key],
      sql`${sql.id(scratch, table)}`,
      sql`true`,
    );
    change(table).inserted += ins;
    change(table).updated += upd;
  }

  const alertColumns = (await columnsOf(db, live, 'alerts')).filter(
    (c) => !c.generated && c.name !== 'alert_id',
  );
  const names = alertColumns.map((c) => c.name);
  const values = sql.join(
    names.map((name) =>
      name === 'delivered_at'
        ? sql`now()`
        : name === 'last_error'
          ? sql`${notDeliveredNote}::text`
          : sql`a.${sql.id(name)}`,
    ),
  );
  const added =
    await sql`insert into ${sql.id(live, 'alerts')} (${sql.join(names.map((n) => sql.id(n)))})
    select ${values} from ${sql.id(scratch, 'alerts')} a
     where not exists (select 1 from ${sql.id(live, 'alerts')} o where o.dedupe_key = a.dedupe_key)
     order by a.alert_id
    on conflict (dedupe_key) do nothing`.execute(db);
  change('alerts').inserted += Number(added.numAffectedRows ?? 0);

  await sql`select setval(pg_get_serial_sequence(${`"${live}"."rank_series"`}, 'series_id'),
      coalesce((select max(series_id) from ${sql.id(live, 'rank_series')}), 0) + 1, false)`.execute(
    db,
  );
  return [...changes.values()];
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
