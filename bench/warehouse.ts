/**
 * `npm run bench:warehouse`: the warehouse at a year of history (docs/operations.md,
 * "Warehouse at a year").
 *
 * Builds `--days` nights of history for `--businesses` businesses (10 keywords × 9 sites
 * = 90 rank series and 9 listings each): ranks on a random walk, a fifth of them not
 * ranked on any night, listings that flip now and then. Then prints:
 *
 * - bytes per rank observation: the growth of every table and index of the warehouse
 *   (history, read models, listings, everything) divided by the rank rows stored;
 * - the nightly write of one day, through the sync's own writer (`writeBusinessSnapshot`,
 *   one transaction per business, 4 at a time), on night 2 and on the last night: the
 *   cost of a night must not grow with the history;
 * - for each SQL example of docs/warehouse.md, at night 30 and on the last night: its time,
 *   the rows it returns and the rows it reads (EXPLAIN ANALYZE: every scan's rows, plus
 *   those its filters and rechecks removed, times its loops).
 *
 * Nights 1, 2, 30 and the last go through the writers. The nights between are built by
 * set-based statements that store what the writers would (the same rows in the same
 * tables, appended night by night in the same order: the same physical layout and index
 * growth, the same `rank_latest` row per series and night as the writer's `nextLatest`,
 * every series collected every night). That makes a year of 1,000 businesses a matter of
 * minutes rather than hours.
 *
 *   npm run bench:warehouse                                   # 1,000 businesses, 365 days
 *   npm run bench:warehouse -- --businesses 300 --days 365 [--keep]
 *   BENCH_DATABASE_URL=postgres://… npm run bench:warehouse   # default: the local PostgreSQL
 *
 * Runs in a schema of its own (`bench_warehouse_<pid>`), dropped at the end unless --keep.
 * Nothing here asserts: it prints figures.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pLimit from 'p-limit';
import pg from 'pg';
import type { Keyword, Listing, ListingStatus, RankObservation } from '../src/api/types.ts';
import { renderTable } from '../src/command/table.ts';
import {
  type BusinessSnapshot,
  writeBusinessSnapshot,
} from '../src/warehouse/business-snapshot.ts';
import { openWarehouse, type Warehouse } from '../src/warehouse/connection.ts';
import { listingContentHash, listingToRow } from '../src/warehouse/listings.ts';
import { migrateToLatest } from '../src/warehouse/migrate.ts';

const ROOT = join(import.meta.dirname, '..');
const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const ACCOUNT = 'bench';
const KEYWORDS = 10;
const SITES = [
  'Google',
  'Bing',
  'Yahoo',
  'Google_new.local',
  'Google_new.organic',
  'Yelp',
  'Apple',
  'DuckDuckGo',
  'Facebook',
];
const LISTINGS = 9;
const STATUSES: ListingStatus[] = ['Accurate', 'Inaccurate', 'Not Present'];
/** The share of ranks reported as `-` (searched, not ranked) on a night. */
const UNRANKED = 0.2;
/** The chance a listing changes status on a night. */
const FLIP = 0.01;
/** Businesses written at once on a writer's night (the sync runs several). */
const WRITERS = 4;
const DAY_MS = 86_400_000;

const { values: args } = parseArgs({
  options: {
    businesses: { type: 'string', default: '1000' },
    days: { type: 'string', default: '365' },
    keep: { type: 'boolean', default: false },
  },
});
const BUSINESSES = positive('businesses', args.businesses);
const DAYS = positive('days', args.days);
if (DAYS < 31)
  throw new Error('--days must be at least 31: the figures compare night 30 with the last.');

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, not "${value}".`);
  return n;
}

/** A small deterministic generator (mulberry32): every run builds the same history. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const next = random(2026);

/** The world the nights are drawn from: rank positions and listing statuses. */
const SERIES_PER_BUSINESS = KEYWORDS * SITES.length;
const walk = new Int16Array(BUSINESSES * SERIES_PER_BUSINESS).map(
  () => 1 + Math.floor(next() * 50),
);
const statuses: ListingStatus[] = Array.from(
  { length: BUSINESSES * LISTINGS },
  (_, i) => STATUSES[i % LISTINGS === 8 ? 2 : next() < 0.8 ? 0 : 1] ?? 'Accurate',
);
const businessId = (b: number) => 100_000 + b;
const keywordText = (k: number) => `keyword ${k + 1}`;

/** One night of the world: each rank moves by -2..+2, a fifth unranked; a few listings flip. */
function advanceWorld(): { ranks: Int16Array; flipped: number[] } {
  const ranks = new Int16Array(walk.length);
  for (let i = 0; i < walk.length; i++) {
    const moved = Math.max(1, Math.min(100, (walk[i] ?? 1) + Math.floor(next() * 5) - 2));
    walk[i] = moved;
    ranks[i] = next() < UNRANKED ? 0 : moved; // 0: not ranked tonight
  }
  const flipped: number[] = [];
  for (let i = 0; i < statuses.length; i++) {
    if (next() >= FLIP) continue;
    const now = statuses[i];
    statuses[i] = STATUSES.filter((s) => s !== now)[Math.floor(next() * 2)] ?? 'Accurate';
    flipped.push(i);
  }
  return { ranks, flipped };
}

function listingOf(b: number, l: number): Listing {
  return {
    id: l + 1,
    siteName: `Directory ${l + 1}`,
    status: statuses[b * LISTINGS + l] ?? 'Accurate',
    syncStatus: 'success',
    orderStatus: null,
    name: `Business ${b}`,
    nameValid: true,
    phone: '207-555-0143',
    phoneValid: true,
    street: '12 Pier Rd',
    city: 'Portland',
    state: 'ME',
    postalCode: '04101',
    addressValid: true,
    liveLink: `https://dir.example/${b}/${l}`,
    claimed: true,
    hasSiteCredentials: false,
  };
}

function snapshotOf(b: number, ranks: Int16Array): BusinessSnapshot {
  const id = businessId(b);
  const rankings: RankObservation[] = [];
  for (let k = 0; k < KEYWORDS; k++) {
    for (let s = 0; s < SITES.length; s++) {
      const value = ranks[b * SERIES_PER_BUSINESS + k * SITES.length + s] ?? 0;
      rankings.push({ keyword: keywordText(k), site: SITES[s] ?? 'Google', rank: value || null });
    }
  }
  const keywords: Keyword[] = Array.from({ length: KEYWORDS }, (_, k) => ({
    id: id * 100 + k,
    keyword: keywordText(k),
    city: 'Portland',
    state: 'ME',
    primary: k === 0,
    businessId: id,
    archived: false,
  }));
  return {
    accountName: ACCOUNT,
    businessId: id,
    summary: {
      id,
      name: `Business ${b}`,
      street: '12 Pier Rd',
      city: 'Portland',
      stateName: 'Maine',
      postalCode: '04101',
      phone: '207-555-0143',
    },
    full: null,
    listings: Array.from({ length: LISTINGS }, (_, l) => listingOf(b, l)),
    reviews: null,
    rankings,
    keywords,
    rejected: [],
  };
}

/** A night through the sync's writer: one transaction per business. Returns seconds. */
async function writerNight(wh: Warehouse, at: Date): Promise<number> {
  // Statistics as autovacuum would have them after a day; not part of the night's time.
  await sql`vacuum analyze`.execute(wh.db);
  const { ranks } = advanceWorld();
  const limit = pLimit(WRITERS);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: BUSINESSES }, (_, b) =>
      limit(() =>
        wh.db.transaction().execute((trx) =>
          writeBusinessSnapshot(trx, snapshotOf(b, ranks), {
            runId: crypto.randomUUID(),
            observedAt: at,
          }),
        ),
      ),
    ),
  );
  return (performance.now() - started) / 1000;
}

/** A night stored set-based: the rows the writers would store, in one transaction. */
async function bulkNight(
  wh: Warehouse,
  day: string,
  at: Date,
  seriesIds: Int32Array,
): Promise<void> {
  const { ranks, flipped } = advanceWorld();
  const values = Array.from(ranks, (r) => (r === 0 ? null : r));
  const ids = Array.from(seriesIds);
  await wh.db.transaction().execute(async (trx) => {
    await sql`
      insert into rank_history (series_id, observed_on, rank, previous_rank, days_since_previous)
      select t.series_id, ${day}::date, t.rank, l.rank, ${day}::date - l.observed_on
      from unnest(${ids}::int[], ${values}::smallint[]) with ordinality as t(series_id, rank, n)
      join rank_latest l on l.series_id = t.series_id
      order by t.n`.execute(trx);
    // The row the writer's nextLatest computes, for a night one day after the stored one.
    await sql`
      with slid as (
        select l.series_id, t.rank, l.observed_on as previous_on, l.rank as previous_rank,
          ((l.window_collected << 1) | 1) & ${0x7fffffff} as collected,
          array_prepend(t.rank, l.window_ranks[1:30]) as ranks,
          case when l.window_collected & ${1 << 30} <> 0 then l.observed_on - 30
            else l.before_window_on end as before_on,
          case when l.window_collected & ${1 << 30} <> 0 then l.window_ranks[31]
            else l.before_window_rank end as before_rank
        from rank_latest l
        join unnest(${ids}::int[], ${values}::smallint[]) as t(series_id, rank)
          on t.series_id = l.series_id
      )
      update rank_latest l set observed_on = ${day}::date, rank = s.rank,
        previous_observed_on = s.previous_on, previous_rank = s.previous_rank,
        compared_7d_on = case when s.collected & 128 <> 0 then ${day}::date - 7 else s.before_on end,
        rank_7d_ago = case when s.collected & 128 <> 0 then s.ranks[8] else s.before_rank end,
        compared_30d_on = case when s.collected & ${1 << 30} <> 0 then ${day}::date - 30 else s.before_on end,
        rank_30d_ago = case when s.collected & ${1 << 30} <> 0 then s.ranks[31] else s.before_rank end,
        best_rank_30d = (select min(x) from unnest(s.ranks) x),
        worst_rank_30d = (select max(x) from unnest(s.ranks) x),
        observations_30d = bit_count(s.collected::bit(32))::int,
        unranked_days_30d = bit_count(s.collected::bit(32))::int - (select count(x) from unnest(s.ranks) x),
        window_collected = s.collected, window_ranks = s.ranks,
        before_window_on = s.before_on, before_window_rank = s.before_rank
      from slid s where l.series_id = s.series_id`.execute(trx);
    if (flipped.length > 0) {
      const listings = flipped.map((i) => listingOf(Math.floor(i / LISTINGS), i % LISTINGS));
      const business = flipped.map((i) => businessId(Math.floor(i / LISTINGS)));
      await sql`
        with changed as (
          update listings l set status = t.status, content_hash = t.hash, last_seen_at = ${at},
            status_changed_at = ${at}
          from unnest(${business}::bigint[], ${listings.map((l) => l.id)}::bigint[],
            ${listings.map((l) => l.status)}::text[],
            ${listings.map((l) => listingContentHash(listingToRow(l)))}::text[])
            as t(business_id, listing_id, status, hash)
          where l.business_id = t.business_id and l.listing_id = t.listing_id
          returning l.business_id, l.listing_id, l.site_name, l.status, l.sync_status,
            l.name_valid, l.phone_valid, l.address_valid, l.claimed
        )
        insert into listing_status_history (business_id, listing_id, observed_at, site_name,
          status, sync_status, name_valid, phone_valid, address_valid, claimed)
        select business_id, listing_id, ${at}, site_name, status, sync_status, name_valid,
          phone_valid, address_valid, claimed
        from changed`.execute(trx);
    }
    await sql`
      insert into listing_accuracy_days (business_id, day, listings, accurate, inaccurate,
        not_present)
      select business_id, ${day}::date, count(*),
        count(*) filter (where status = 'Accurate'), count(*) filter (where status = 'Inaccurate'),
        count(*) filter (where status = 'Not Present')
      from listings where removed_at is null
      group by business_id order by business_id`.execute(trx);
  });
}

/** What autovacuum does between two nights a day apart; the set-based nights come seconds apart. */
async function vacuumUpdated(wh: Warehouse): Promise<void> {
  await sql`vacuum rank_latest, listings`.execute(wh.db);
}

async function warehouseBytes(wh: Warehouse): Promise<number> {
  const { rows } = await sql<{ bytes: number }>`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as bytes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'm')`.execute(wh.db);
  return Number(rows[0]?.bytes ?? 0);
}

async function relationBytes(wh: Warehouse, relation: string): Promise<number> {
  const { rows } = await sql<{
    bytes: number;
  }>`select pg_relation_size(${relation}::regclass)::bigint as bytes`.execute(wh.db);
  return Number(rows[0]?.bytes ?? 0);
}

async function count(wh: Warehouse, table: string): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::bigint as n from ${sql.table(table)}`.execute(wh.db);
  return Number(rows[0]?.n ?? 0);
}

/** The ```sql blocks of docs/warehouse.md: the documented queries. */
function documentedQueries(): { title: string; text: string }[] {
  const doc = readFileSync(join(ROOT, 'docs/warehouse.md'), 'utf8');
  const out: { title: string; text: string }[] = [];
  for (const match of doc.matchAll(/```sql\n([\s\S]*?)```/g)) {
    const text = (match[1] ?? '').trim();
    const before = doc.slice(0, match.index);
    const heading = [...before.matchAll(/^#{2,3} (.+)$/gm)].pop()?.[1] ?? '';
    const from = /\bfrom (v_\w+|\w+)/.exec(text)?.[1] ?? '?';
    out.push({ title: `${from} (${heading.split(' — ')[0]})`, text });
  }
  return out;
}

interface PlanNode {
  'Node Type': string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
}

const SCANS = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']);

/** Rows every table scan of the plan produced or discarded, over all its loops. */
function rowsRead(node: PlanNode): number {
  let own = 0;
  if (SCANS.has(node['Node Type'])) {
    const loops = node['Actual Loops'] ?? 1;
    own =
      ((node['Actual Rows'] ?? 0) +
        (node['Rows Removed by Filter'] ?? 0) +
        (node['Rows Removed by Index Recheck'] ?? 0)) *
      loops;
  }
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
}

/**
 * The documented query as run the morning after `night`: `current_date` and `now()` are
 * that morning's, so that night 30's figures read the windows they would have then.
 */
function asOf(text: string, night: Date): string {
  const morning = new Date(night.getTime() + 6 * 3_600_000);
  return text
    .replaceAll('current_date', `date '${morning.toISOString().slice(0, 10)}'`)
    .replaceAll('now()', `timestamptz '${morning.toISOString()}'`);
}

async function measureQueries(
  wh: Warehouse,
  night: Date,
): Promise<Map<string, { ms: number; rows: number; read: number }>> {
  await sql`vacuum analyze`.execute(wh.db);
  const out = new Map<string, { ms: number; rows: number; read: number }>();
  for (const [i, query] of documentedQueries().entries()) {
    // The second run is the one reported: the first warms the cache, as a dashboard's would be.
    let plan: { Plan: PlanNode; 'Execution Time': number } | undefined;
    for (let i = 0; i < 2; i++) {
      const { rows } = await sql<{
        'QUERY PLAN': unknown;
      }>`explain (analyze, format json) ${sql.raw(asOf(query.text, night))}`.execute(wh.db);
      const value = rows[0]?.['QUERY PLAN'];
      const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as (typeof plan)[];
      plan = parsed[0];
    }
    if (!plan) continue;
    out.set(`${i + 1}. ${query.title}`, {
      ms: plan['Execution Time'],
      rows: plan.Plan['Actual Rows'] ?? 0,
      read: rowsRead(plan.Plan),
    });
  }
  return out;
}

async function main(): Promise<void> {
  const url = process.env['BENCH_DATABASE_URL']?.trim() || DEFAULT_URL;
  const schema = `bench_warehouse_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const wh = await openWarehouse({ databaseUrl: url, searchPath: schema, poolSize: WRITERS + 2 });
  const lastDay = new Date(Date.parse(`${new Date().toISOString().slice(0, 10)}T03:00:00Z`));
  const nightAt = (n: number) => new Date(lastDay.getTime() - (DAYS - n) * DAY_MS);
  const dayOf = (at: Date) => at.toISOString().slice(0, 10);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  try {
    await migrateToLatest(wh.db);
    await sql`insert into accounts (name, user_email, base_url) values (${ACCOUNT}, 'bench@example.com', 'https://upstream.example')`.execute(
      wh.db,
    );
    await sql`vacuum analyze`.execute(wh.db);
    const emptyBytes = await warehouseBytes(wh);
    out(
      `Warehouse bench: ${BUSINESSES} businesses × ${SERIES_PER_BUSINESS} rank series, ${DAYS} nights, schema ${schema}`,
    );

    const night1 = await writerNight(wh, nightAt(1));
    const { rows: series } = await sql<{ series_id: number }>`
      select s.series_id from rank_series s
      order by s.business_id, s.keyword, array_position(${SITES}::text[], s.site)`.execute(wh.db);
    const seriesIds = Int32Array.from(series.map((r) => r.series_id));
    const night2 = await writerNight(wh, nightAt(2));
    const build = performance.now();
    for (let n = 3; n < 30; n++) {
      await bulkNight(wh, dayOf(nightAt(n)), nightAt(n), seriesIds);
      await vacuumUpdated(wh);
    }
    const night30 = await writerNight(wh, nightAt(30));
    const at30 = await measureQueries(wh, nightAt(30));
    const bytes30 = (await warehouseBytes(wh)) - emptyBytes;
    const observations30 = await count(wh, 'rank_history');
    for (let n = 31; n < DAYS; n++) {
      await bulkNight(wh, dayOf(nightAt(n)), nightAt(n), seriesIds);
      await vacuumUpdated(wh);
      if (n % 30 === 0) out(`  … night ${n} of ${DAYS}`);
    }
    const buildSeconds = (performance.now() - build) / 1000;
    const nightLast = await writerNight(wh, nightAt(DAYS));
    const atLast = await measureQueries(wh, nightAt(DAYS));
    const bytesLast = (await warehouseBytes(wh)) - emptyBytes;
    const observations = await count(wh, 'rank_history');
    const { rows: sizes } = await sql<{ relation: string; bytes: number }>`
      select c.relname as relation, pg_relation_size(c.oid)::bigint as bytes
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relname like 'rank%' and c.relkind in ('r', 'i')
      order by bytes desc`.execute(wh.db);
    // What routine maintenance would recover: the primary key rebuilt with full pages.
    const pkeyBefore = await relationBytes(wh, 'rank_history_pkey');
    await sql`reindex index rank_history_pkey`.execute(wh.db);
    const pkeyAfter = await relationBytes(wh, 'rank_history_pkey');

    out('');
    out(
      renderTable(
        ['figure', 'value'],
        [
          ['rank observations stored', String(observations)],
          [
            'bytes per rank observation, all tables and indexes (target ≤ 64)',
            (bytesLast / observations).toFixed(1),
          ],
          [
            `  … at night 30 (${observations30} observations)`,
            (bytes30 / observations30).toFixed(1),
          ],
          ...sizes.map((s) => [
            `  ${s.relation}, bytes per observation`,
            (Number(s.bytes) / observations).toFixed(1),
          ]),
          [
            '  rank_history_pkey after REINDEX (maintenance, not run by the sync)',
            (pkeyAfter / observations).toFixed(1),
          ],
          [
            '  all tables and indexes after that REINDEX',
            ((bytesLast - pkeyBefore + pkeyAfter) / observations).toFixed(1),
          ],
          ['nightly write, night 1 (first sync: series, listings), s', night1.toFixed(2)],
          ['nightly write, night 2, s', night2.toFixed(2)],
          ['nightly write, night 30, s', night30.toFixed(2)],
          [`nightly write, night ${DAYS}, s (target within 10 % of night 2)`, nightLast.toFixed(2)],
          [`  night ${DAYS} ÷ night 2`, (nightLast / night2).toFixed(2)],
          ['set-based build of the nights between, s', buildSeconds.toFixed(1)],
        ],
      ),
    );
    out('');
    const queryRows: string[][] = [];
    for (const [title, first] of at30) {
      const last = atLast.get(title);
      queryRows.push([
        title,
        first.ms.toFixed(1),
        String(first.rows),
        String(first.read),
        last ? last.ms.toFixed(1) : '-',
        last ? String(last.rows) : '-',
        last ? String(last.read) : '-',
      ]);
    }
    out(
      renderTable(
        [
          'documented query',
          'ms @30',
          'rows @30',
          'read @30',
          `ms @${DAYS}`,
          `rows @${DAYS}`,
          `read @${DAYS}`,
        ],
        queryRows,
      ),
    );
  } finally {
    await wh.close();
    if (!args.keep) await admin.query(`drop schema ${schema} cascade`);
    else out(`Kept schema ${schema} (drop schema ${schema} cascade).`);
    await admin.end();
  }
}

await main();
