/**
 * `npm run bench:warehouse`: the warehouse at a year of history (docs/benchmarks.md,
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
 *   the rows it returns, the rows it reads (EXPLAIN (ANALYZE, BUFFERS): every scan's rows,
 *   plus those its filters and rechecks removed, times its loops) and the shared buffers
 *   it touches;
 * - for the local-SEO views, on the last night, a 30-day and a 365-day window: rows read
 *   and shared buffers (EXPLAIN (ANALYZE, BUFFERS));
 * - bytes per rank observation with and without the raw zone, and for the tables a night
 *   rewrites (`rank_latest`, `rank_months`, `visibility_months`, `listings`) after the last
 *   night, their dead row versions' share and the share of their updates that were HOT;
 * - the rank views' windows (one business's 90-day trend and every business's last 30 days
 *   through `v_rank_daily`, and `v_rank_latest`) beside the flat layout of migration 0005
 *   built from the same observations (`rank_history_flat`, `v_rank_daily_flat`): rows
 *   returned, rows read (function scans included), buffers and the fastest of 3 runs.
 *
 * `--no-vacuum` runs the nights back to back (a backfill, a replay, a catch-up after an
 * outage): ANALYZE between them, never VACUUM. Without it, the rewritten tables are
 * vacuumed after each set-based night and the whole schema before each writer's night, as
 * autovacuum would between real nights a day apart.
 *
 * The set-based nights also store about one new review a night for one business in two
 * (most answered within 60 hours) with their `review_backlog` counts, the day's
 * visibility (the day's element of each `visibility_months` row) and the Inaccurate
 * episodes the listing flips open and close, as the writers would.
 *
 * Nights 1, 2, 30 and the last go through the writers. The nights between are built by
 * set-based statements that store what the writers would (the same rows in the same
 * tables, appended night by night in the same order: the same physical layout and index
 * growth, the same `rank_latest` row per series and night as the writer's `nextLatest`,
 * every series collected every night). That makes a year of 1,000 businesses a matter of
 * minutes rather than hours.
 *
 *   npm run bench:warehouse                                   # 1,000 businesses, 365 days
 *   npm run bench:warehouse -- --businesses 300 --days 365 [--keep] [--no-vacuum]
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
import type { Keyword, Listing, ListingStatus, RankObservation } from '../src/api/index.ts';
import { listingSchema } from '../src/api/listings.ts';
import type { ObservedResponse } from '../src/api/transport/transport.ts';
import { type KeptRead, keptRead, writeRawReads } from '../src/raw/capture.ts';
import { renderTable } from '../src/text-table.ts';
import { openWarehouse, type Warehouse } from '../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../src/warehouse/driver/migrate.ts';
import { listingContentHash, listingToRow } from '../src/warehouse/tables/listings.ts';
import {
  CLICKS_PER_1000,
  UNRANKED_POSITION,
  VISIBILITY_FIGURES,
} from '../src/warehouse/tables/visibility.ts';
import { type BusinessSnapshot, writeBusinessSnapshot } from '../src/warehouse/write/snapshot.ts';

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
    'no-vacuum': { type: 'boolean', default: false },
  },
});
/**
 * `--no-vacuum`: nights back to back (a backfill, a replay, a catch-up after an outage),
 * with no VACUUM between them, only ANALYZE for the planner's statistics. Without it, a
 * VACUUM of the rewritten tables follows each set-based night and precedes each writer's
 * night, as autovacuum would between real nights a day apart.
 */
const VACUUM = !args['no-vacuum'];
/** Between nights: statistics always, a vacuum unless --no-vacuum. */
const maintenance = () => (VACUUM ? sql`vacuum analyze` : sql`analyze`);
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
function advanceWorld(): { ranks: Int16Array; flipped: number[]; before: ListingStatus[] } {
  const ranks = new Int16Array(walk.length);
  for (let i = 0; i < walk.length; i++) {
    const moved = Math.max(1, Math.min(100, (walk[i] ?? 1) + Math.floor(next() * 5) - 2));
    walk[i] = moved;
    ranks[i] = next() < UNRANKED ? 0 : moved; // 0: not ranked tonight
  }
  const flipped: number[] = [];
  const before: ListingStatus[] = [];
  for (let i = 0; i < statuses.length; i++) {
    if (next() >= FLIP) continue;
    const now = statuses[i];
    statuses[i] = STATUSES.filter((s) => s !== now)[Math.floor(next() * 2)] ?? 'Accurate';
    flipped.push(i);
    before.push(now ?? 'Accurate');
  }
  return { ranks, flipped, before };
}

// A listing with only its key fields: a field added to the schema is null in the bench's.
const BARE_LISTING = listingSchema.parse({ id: 0, site_name: 'Directory 0', status: 'Accurate' });

function listingOf(b: number, l: number): Listing {
  return {
    ...BARE_LISTING,
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
    records: {
      listings: Array.from({ length: LISTINGS }, (_, l) => listingOf(b, l)),
      rankings,
      keywords,
    },
    rejected: [],
  };
}

/** A night through the sync's writer: one transaction per business. Returns seconds. */
async function writerNight(wh: Warehouse, at: Date): Promise<number> {
  // Statistics as autovacuum would have them after a day; not part of the night's time.
  await maintenance().execute(wh.db);
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
  const seconds = (performance.now() - started) / 1000;
  await rawNight(wh, at, ranks);
  return seconds;
}

/** A night stored set-based: the rows the writers would store, in one transaction. */
async function bulkNight(
  wh: Warehouse,
  day: string,
  at: Date,
  seriesIds: Int32Array,
): Promise<void> {
  const { ranks, flipped, before } = advanceWorld();
  const values = Array.from(ranks, (r) => (r === 0 ? null : r));
  const ids = Array.from(seriesIds);
  await wh.db.transaction().execute(async (trx) => {
    // Today's element of each series' month row (a new month row carries the latest
    // observation before it), as the rankings writer stores it.
    const month = `${day.slice(0, 8)}01`;
    const index = Number(day.slice(8, 10));
    // The month's days up to today in the calendar the views read days from, as the
    // writer adds them (migration 0038).
    await sql`
      insert into rank_days (observed_on, month, day)
      select g::date, ${month}::date, extract(day from g)::smallint
      from generate_series(${month}::date, ${day}::date, interval '1 day') g
      where not exists (select from rank_days where observed_on = ${day}::date)
      on conflict (observed_on) do nothing`.execute(trx);
    if (index === 1) {
      // A month's first night: each series' row of the month before is copied to the past
      // table and its current row rewritten in place as the new month's (migration 0040),
      // in one statement, as the writer does.
      await sql`
        with old as (
          select c.series_id, c.month, c.ranks, c.previous_on, c.previous_rank
          from rank_months_current c
          where c.series_id = any(${ids}::int[]) and c.month < ${month}::date
        ), moved as (
          insert into rank_months_past (series_id, month, ranks, previous_on, previous_rank)
          select * from old order by series_id, month
        )
        update rank_months_current c
        set month = ${month}::date, ranks = array[coalesce(t.rank, -1::smallint)],
          previous_on = l.observed_on, previous_rank = l.rank
        from unnest(${ids}::int[], ${values}::smallint[]) as t(series_id, rank)
        join rank_latest l on l.series_id = t.series_id
        where c.series_id = t.series_id and c.month < ${month}::date`.execute(trx);
    } else {
      await sql`
      insert into rank_months_current as m (series_id, month, ranks, previous_on, previous_rank)
      select t.series_id, ${month}::date,
        array_fill(null::smallint, array[${index - 1}::int]) || coalesce(t.rank, -1::smallint),
        l.observed_on, l.rank
      from unnest(${ids}::int[], ${values}::smallint[]) with ordinality as t(series_id, rank, n)
      join rank_latest l on l.series_id = t.series_id
      order by t.n
      on conflict (series_id, month) do update set ranks[${index}::int] = excluded.ranks[${index}::int]`.execute(
        trx,
      );
    }
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
        not_present, names_checked, names_valid, phones_checked, phones_valid,
        addresses_checked, addresses_valid)
      select business_id, ${day}::date, count(*),
        count(*) filter (where status = 'Accurate'), count(*) filter (where status = 'Inaccurate'),
        count(*) filter (where status = 'Not Present'), count(name_valid),
        count(*) filter (where name_valid), count(phone_valid), count(*) filter (where phone_valid),
        count(address_valid), count(*) filter (where address_valid)
      from listings where removed_at is null
      group by business_id order by business_id`.execute(trx);
    // The day's visibility per business and site, as the rankings writer stores it: the
    // day's element of each figure of the business's month row per site.
    const figures = (f: (column: string) => string) =>
      sql.raw(VISIBILITY_FIGURES.map(f).join(', '));
    await sql`
      insert into visibility_months (business_id, month, site, ${figures((c) => c)})
      select s.business_id, ${month}::date, s.site,
        ${figures((c) => `array_fill(null::int, array[${index - 1}]) || ${c}`)}
      from (
        select s.business_id, s.site, count(*)::int as keywords_tracked,
          count(h.rank)::int as keywords_ranked,
          sum(coalesce(h.rank, ${UNRANKED_POSITION}))::int as position_sum,
          (count(*) filter (where h.rank <= 3))::int as top3,
          (count(*) filter (where h.rank <= 10))::int as top10,
          coalesce(sum((${sql.raw(`'{${CLICKS_PER_1000.join(',')}}'::int[]`)})[h.rank]), 0)::int
            as clicks_per_1000
        from unnest(${ids}::int[], ${values}::smallint[]) as h(series_id, rank)
        join rank_series s on s.series_id = h.series_id
        group by s.business_id, s.site
      ) s
      order by s.business_id, s.site
      on conflict (business_id, month, site) do update set
        ${figures((c) => `${c}[${index}] = excluded.${c}[${index}]`)}`.execute(trx);
    // Inaccurate episodes the flips open and close, as the listings writer stores them.
    const turned = flipped.map((i, n) => ({
      business: businessId(Math.floor(i / LISTINGS)),
      listing: (i % LISTINGS) + 1,
      before: before[n],
      after: statuses[i],
    }));
    const closing = turned.filter((t) => t.before === 'Inaccurate');
    const opening = turned.filter((t) => t.after === 'Inaccurate');
    if (closing.length > 0) {
      await sql`
        update listing_fixes f set fixed_at = ${at}, fixed_on = ${day}::date
        from unnest(${closing.map((t) => t.business)}::bigint[],
          ${closing.map((t) => t.listing)}::bigint[]) as c(business_id, listing_id)
        where f.business_id = c.business_id and f.listing_id = c.listing_id
          and f.fixed_at is null`.execute(trx);
    }
    if (opening.length > 0) {
      await sql`
        insert into listing_fixes (business_id, listing_id, site_name, turned_inaccurate_at,
          turned_inaccurate_on, first_seen, previous_fixed_at)
        select o.business_id, o.listing_id, 'Directory ' || o.listing_id, ${at}, ${day}::date,
          false, (select max(f.fixed_at) from listing_fixes f
            where f.business_id = o.business_id and f.listing_id = o.listing_id)
        from unnest(${opening.map((t) => t.business)}::bigint[],
          ${opening.map((t) => t.listing)}::bigint[]) as o(business_id, listing_id)`.execute(trx);
    }
    // New reviews: about one business in two gets one a night; most are answered within
    // two days, some never, some were answered before the sync first read them.
    await sql`
      with fresh as (
        select gen_random_uuid() as review_id, business_id,
          ${at}::timestamptz - make_interval(hours => (random() * 20)::int) as reviewed_at,
          1 + (random() * 4)::int as rating, random() as answered
        from generate_series(${businessId(0)}::bigint, ${businessId(BUSINESSES - 1)}::bigint)
          as business_id
        where random() < 0.5
      ),
      written as (
        insert into reviews (review_id, business_id, site_name, category, type, content, rating,
          reviewed_at, reviewed_at_precision, can_respond, response_count, content_hash,
          first_seen_at, last_seen_at)
        select review_id, business_id, case when rating > 2 then 'Google' else 'Yelp' end,
          'review', 'Review', 'text', rating, reviewed_at, 'instant', true,
          (answered < 0.7)::int, 'h', ${at}, ${at}
        from fresh order by business_id
      ),
      -- The reviews writer counts the business's waiting reviews again (review_backlog):
      -- here, the fresh unanswered ones added to the stored count.
      backlog as (
        insert into review_backlog as b (business_id, reviews_waiting)
        select business_id, (count(*) filter (where answered >= 0.7))::int
        from fresh group by business_id order by business_id
        on conflict (business_id) do update
          set reviews_waiting = b.reviews_waiting + excluded.reviews_waiting
          where excluded.reviews_waiting <> 0
      )
      insert into review_responses (response_id, review_id, business_id, content,
        responded_at, responded_at_precision, content_hash, first_seen_at, last_seen_at)
      select gen_random_uuid(), review_id, business_id, 'thanks',
        reviewed_at + make_interval(hours => (answered * 60)::int), 'instant', 'h', ${at}, ${at}
      from fresh where answered < 0.7`.execute(trx);
  });
  await rawNight(wh, at, ranks);
}

/** The bench's credential, as the raw zone's capture sees it (its secrets are kept out). */
const CREDENTIAL = {
  name: ACCOUNT,
  baseUrl: 'https://upstream.example',
  authToken: 'bench-token',
  userEmail: 'bench@example.com',
};

/** The upstream's answer envelope (docs/upstream.md, Operations). */
const answer = (result: unknown) => `{"success":true,"result":${JSON.stringify(result)}}`;

/** A listing as operation 6 answers it (docs/upstream.md, Fields). */
function listingBody(b: number, l: number): Record<string, unknown> {
  const listing = listingOf(b, l);
  return {
    id: businessId(b) * 100 + l,
    site_username: null,
    site_password: null,
    sync_status: listing.syncStatus,
    name: listing.name,
    name_valid: listing.nameValid,
    phone: listing.phone,
    phone_valid: listing.phoneValid,
    street: listing.street,
    city: listing.city,
    state: listing.state,
    postal_code: listing.postalCode,
    address_valid: listing.addressValid,
    live_link: listing.liveLink,
    claimed: listing.claimed,
    site_name: listing.siteName,
    status: listing.status,
  };
}

/** Operation 7's answer: per keyword, each site's rank (`-`: not ranked), Google_new split. */
function rankingsBody(b: number, ranks: Int16Array): string {
  const result: Record<string, Record<string, unknown>> = {};
  for (let k = 0; k < KEYWORDS; k++) {
    const row: Record<string, unknown> = {};
    const nested: Record<string, unknown> = {};
    for (let s = 0; s < SITES.length; s++) {
      const rank = ranks[b * SERIES_PER_BUSINESS + k * SITES.length + s] || '-';
      const site = SITES[s] ?? 'Google';
      if (site.startsWith('Google_new.')) nested[site.slice('Google_new.'.length)] = rank;
      else row[site] = rank;
    }
    row['Google_new'] = nested;
    result[keywordText(k)] = row;
  }
  return answer(result);
}

/** The reads a sync makes of one business that change with what the bench stores. */
function businessAnswers(
  b: number,
  ranks: Int16Array,
): [ObservedResponse['operation'], string, Record<string, string>, string][] {
  const id = businessId(b);
  return [
    [
      'get_business_full',
      `/businesses/${id}.json`,
      { type: 'all' },
      answer({
        id,
        name: `Business ${b}`,
        street: '12 Pier Rd',
        city: 'Portland',
        state_name: 'Maine',
        postal_code: '04101',
        phone: '207-555-0143',
      }),
    ],
    [
      'list_listings',
      `/businesses/${id}/listings.json`,
      {},
      answer(Array.from({ length: LISTINGS }, (_, l) => listingBody(b, l))),
    ],
    ['get_rankings', `/businesses/${id}/rankings.json`, {}, rankingsBody(b, ranks)],
    [
      'list_keywords',
      `/businesses/${id}/keywords.json`,
      {},
      answer(
        Array.from({ length: KEYWORDS }, (_, k) => ({
          id: id * 100 + k,
          keyword: keywordText(k),
          city: 'Portland',
          state: 'ME',
          primary: k === 0,
          location_id: id,
          archived: false,
        })),
      ),
    ],
  ];
}

/**
 * The raw zone of one night: what the sync would have kept of its reads (the business list,
 * then each business's full read, listings, rankings and keywords as the upstream sends
 * them), through the raw zone's own capture (src/raw/capture.ts: secrets kept out, bodies
 * stored once, a changed one as a delta on its request's base), one run a night. The
 * reviews read is left out with the reviews tables (warehouseBytes).
 */
async function rawNight(wh: Warehouse, at: Date, ranks: Int16Array): Promise<void> {
  const observed = (
    operation: ObservedResponse['operation'],
    path: string,
    query: Record<string, string>,
    text: string,
  ): KeptRead =>
    keptRead(
      {
        credential: CREDENTIAL,
        operation,
        method: 'GET',
        path,
        query,
        attempt: 1,
        status: 200,
        text,
      },
      at,
    ) as KeptRead;
  const runId = crypto.randomUUID();
  const list = observed(
    'list_businesses',
    '/businesses.json',
    {},
    answer(
      Array.from({ length: BUSINESSES }, (_, b) => ({ id: businessId(b), name: `Business ${b}` })),
    ),
  );
  await writeRawReads(wh.db, { runId }, [list]);
  // A business's reads in one write, as the sync writes them with its rows.
  const limit = pLimit(WRITERS);
  await Promise.all(
    Array.from({ length: BUSINESSES }, (_, b) =>
      limit(() =>
        writeRawReads(
          wh.db,
          { runId, observedAt: at },
          businessAnswers(b, ranks).map(([operation, path, query, text]) =>
            observed(operation, path, query, text),
          ),
        ),
      ),
    ),
  );
}

/** What autovacuum does between two nights a day apart; the set-based nights come seconds apart. */
async function vacuumUpdated(wh: Warehouse): Promise<void> {
  if (!VACUUM) return;
  await sql`vacuum rank_latest, rank_months_current, rank_months_past, visibility_months, listings`.execute(
    wh.db,
  );
}

/**
 * Every table's size with its indexes, but the reviews the set-based nights add for the
 * review views: they are not what a rank observation costs.
 */
async function warehouseBytes(wh: Warehouse): Promise<number> {
  const { rows } = await sql<{ bytes: number }>`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as bytes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'm')
      and c.relname not in ('reviews', 'review_responses')`.execute(wh.db);
  return Number(rows[0]?.bytes ?? 0);
}

/** Rank observations stored: the collected days of every month row. */
async function observationCount(wh: Warehouse): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::bigint as n from rank_months m, unnest(m.ranks) r
    where r is not null`.execute(wh.db);
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

interface BufferedPlan extends PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
}

/** Shared buffers the whole plan touched (hit or read): its top node counts its children's. */
function buffersOf(node: BufferedPlan): number {
  return (node['Shared Hit Blocks'] ?? 0) + (node['Shared Read Blocks'] ?? 0);
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

/**
 * A scan of no table that a plan runs per row: a function scan, or (since migration 0039)
 * the subquery over a Result that tests a day's element of a month row.
 */
function isRowTest(node: PlanNode): boolean {
  if (node['Node Type'] === 'Function Scan') return true;
  return node['Node Type'] === 'Subquery Scan' && node.Plans?.[0]?.['Node Type'] === 'Result';
}

/**
 * Rows every table scan of the plan produced or discarded, over all its loops; with
 * `functions`, the per-row tests of no table too (`isRowTest`; rows through the plan:
 * 0030's `v_rank_daily` unnested a month's array for each row it returned).
 */
function rowsRead(node: PlanNode, functions = false): number {
  let own = 0;
  if (SCANS.has(node['Node Type']) || (functions && isRowTest(node))) {
    const loops = node['Actual Loops'] ?? 1;
    own =
      ((node['Actual Rows'] ?? 0) +
        (node['Rows Removed by Filter'] ?? 0) +
        (node['Rows Removed by Index Recheck'] ?? 0)) *
      loops;
  }
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, functions), 0);
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
): Promise<Map<string, { ms: number; rows: number; read: number; buffers: number }>> {
  await maintenance().execute(wh.db);
  const out = new Map<string, { ms: number; rows: number; read: number; buffers: number }>();
  for (const [i, query] of documentedQueries().entries()) {
    // The second run is the one reported: the first warms the cache, as a dashboard's would be.
    let plan: { Plan: BufferedPlan; 'Execution Time': number } | undefined;
    for (let i = 0; i < 2; i++) {
      const { rows } = await sql<{
        'QUERY PLAN': unknown;
      }>`explain (analyze, buffers, format json) ${sql.raw(asOf(query.text, night))}`.execute(
        wh.db,
      );
      const value = rows[0]?.['QUERY PLAN'];
      const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as (typeof plan)[];
      plan = parsed[0];
    }
    if (!plan) continue;
    out.set(`${i + 1}. ${query.title}`, {
      ms: plan['Execution Time'],
      rows: plan.Plan['Actual Rows'] ?? 0,
      read: rowsRead(plan.Plan),
      buffers: buffersOf(plan.Plan),
    });
  }
  return out;
}

/**
 * The local-SEO views over a 30-day and a 365-day window on the same year of history:
 * what each reads (rows and shared buffers, from EXPLAIN (ANALYZE, BUFFERS)) should grow
 * with the window, about twelvefold, not with the history.
 */
const WINDOW_QUERIES: { title: string; text: (days: number) => string }[] = [
  {
    title: 'v_visibility_daily, every business, per site and day',
    text: (days) => `select site, day, sum(keywords_tracked) as keywords,
        round(sum(visibility_pct * keywords_tracked) / sum(keywords_tracked), 2) as visibility_pct
      from v_visibility_daily where day > current_date - ${days} group by site, day`,
  },
  {
    title: 'v_visibility_daily, one business',
    text: (days) => `select * from v_visibility_daily
      where business_id = ${businessId(0)} and day > current_date - ${days}`,
  },
  {
    title: 'v_listing_fixes, every business',
    text: (
      days,
    ) => `select site_name, count(*), avg(days_to_fix), count(*) filter (where broken_again)
      from v_listing_fixes where turned_inaccurate_on > current_date - ${days} group by site_name`,
  },
  {
    title: 'v_listing_field_accuracy_daily, every business',
    text: (days) => `select day, sum(names_checked), avg(phone_valid)
      from v_listing_field_accuracy_daily where day > current_date - ${days} group by day`,
  },
  {
    title: 'v_review_velocity_weekly, every business',
    text: (days) => `select week, sum(new_reviews), avg(median_hours_to_response)
      from v_review_velocity_weekly where week >= current_date - ${days} group by week`,
  },
  {
    title: 'v_review_velocity_weekly, one business',
    text: (days) => `select * from v_review_velocity_weekly
      where business_id = ${businessId(0)} and week >= current_date - ${days}`,
  },
];

async function measureWindows(wh: Warehouse, night: Date): Promise<string[][]> {
  await maintenance().execute(wh.db);
  const rows: string[][] = [];
  for (const query of WINDOW_QUERIES) {
    for (const days of [30, 365]) {
      let plan: { Plan: BufferedPlan; 'Execution Time': number } | undefined;
      for (let i = 0; i < 2; i++) {
        const { rows: out } = await sql<{
          'QUERY PLAN': unknown;
        }>`explain (analyze, buffers, format json) ${sql.raw(asOf(query.text(days), night))}`.execute(
          wh.db,
        );
        const value = out[0]?.['QUERY PLAN'];
        plan = ((typeof value === 'string' ? JSON.parse(value) : value) as (typeof plan)[])[0];
      }
      if (!plan) continue;
      rows.push([
        query.title,
        `${days} days`,
        String(plan.Plan['Actual Rows'] ?? 0),
        String(rowsRead(plan.Plan)),
        String(buffersOf(plan.Plan)),
        plan['Execution Time'].toFixed(1),
      ]);
    }
  }
  return rows;
}

/**
 * The rank views side by side with the flat layout they replaced, on the same data:
 * `rank_history_flat` holds every observation as 0005 stored it (one row per series and
 * day with its previous observation, key `(series_id, observed_on)`, a BRIN on the day, the
 * rows in the nights' order), `v_rank_daily_flat` is 0005's `v_rank_daily` over it. Both
 * read the same `rank_series`; `v_rank_latest` reads `rank_latest` in either layout.
 */
async function buildFlatLayout(wh: Warehouse): Promise<void> {
  await sql`
    create table rank_history_flat (series_id integer not null, observed_on date not null,
      rank smallint, previous_rank smallint, days_since_previous smallint,
      primary key (series_id, observed_on) with (fillfactor = 100))`.execute(wh.db);
  await sql`
    insert into rank_history_flat
    select series_id, observed_on, rank, lag(rank) over w,
      (observed_on - lag(observed_on) over w)::smallint
    from (
      select m.series_id, m.month + (u.i - 1)::int as observed_on,
        nullif(u.r, -1::smallint) as rank
      from rank_months m, unnest(m.ranks) with ordinality as u(r, i)
      where u.r is not null
    ) d
    window w as (partition by series_id order by observed_on)
    order by observed_on, series_id`.execute(wh.db);
  await sql`create index rank_history_flat_observed_on_brin on rank_history_flat
    using brin (observed_on) with (pages_per_range = 16)`.execute(wh.db);
  await sql`
    create view v_rank_daily_flat as
    select s.business_id, s.keyword, s.site, h.observed_on, h.rank::int as rank,
      h.rank is not null as ranked,
      h.observed_on - h.days_since_previous::int as previous_observed_on,
      h.previous_rank::int as previous_rank, h.rank::int - h.previous_rank as rank_change,
      case
        when h.days_since_previous is null then 'first'
        when h.rank is null and h.previous_rank is null then 'not ranked'
        when h.previous_rank is null then 'entered'
        when h.rank is null then 'dropped'
        when h.rank < h.previous_rank then 'up'
        when h.rank > h.previous_rank then 'down'
        else 'same'
      end as movement
    from rank_history_flat h
    join rank_series s on s.series_id = h.series_id`.execute(wh.db);
  await sql`vacuum analyze rank_history_flat`.execute(wh.db);
}

/** The rank views' windows (issue 53): `view` is v_rank_daily or v_rank_daily_flat. */
const RANK_WINDOW_QUERIES: { title: string; text: (view: string) => string }[] = [
  {
    title: "one business's 90-day trend",
    text: (view) => `select * from ${view}
      where business_id = ${businessId(0)} and observed_on >= current_date - 90`,
  },
  {
    title: "every business's last 30 days",
    text: (view) => `select business_id, site, count(*), avg(rank) from ${view}
      where observed_on > current_date - 30 group by business_id, site`,
  },
  { title: 'v_rank_latest, every series', text: () => 'select * from v_rank_latest' },
];

interface Measured {
  ms: number;
  rows: number;
  read: number;
  buffers: number;
}

/**
 * A query's plan the morning after `night`: the fastest of `runs` runs, with its rows read.
 * Without per-node timing (`timing off`), whose clock reads cost more than the work of a
 * plan's cheap nodes and would count each node a row passes through, not the query.
 */
async function measured(wh: Warehouse, text: string, night: Date, runs = 3): Promise<Measured> {
  let best: Measured | undefined;
  for (let i = 0; i < runs + 1; i++) {
    const { rows } = await sql<{
      'QUERY PLAN': unknown;
    }>`explain (analyze, buffers, timing off, format json) ${sql.raw(asOf(text, night))}`.execute(
      wh.db,
    );
    const value = rows[0]?.['QUERY PLAN'];
    const plan = (
      (typeof value === 'string' ? JSON.parse(value) : value) as {
        Plan: BufferedPlan;
        'Execution Time': number;
      }[]
    )[0];
    // The first run warms the cache, as a dashboard's would be.
    if (!plan || i === 0) continue;
    const run = {
      ms: plan['Execution Time'],
      rows: plan.Plan['Actual Rows'] ?? 0,
      read: rowsRead(plan.Plan, true),
      buffers: buffersOf(plan.Plan),
    };
    if (!best || run.ms < best.ms) best = run;
  }
  if (!best) throw new Error(`no plan for ${text}`);
  return best;
}

/** Each rank window query on the packed layout and the flat one, runs alternated. */
async function measureRankWindows(wh: Warehouse, night: Date): Promise<string[][]> {
  await sql`analyze`.execute(wh.db);
  const out: string[][] = [];
  for (const query of RANK_WINDOW_QUERIES) {
    const packed = await measured(wh, query.text('v_rank_daily'), night);
    const flat = await measured(wh, query.text('v_rank_daily_flat'), night);
    const packedAgain = await measured(wh, query.text('v_rank_daily'), night);
    const p = packedAgain.ms < packed.ms ? packedAgain : packed;
    out.push([
      query.title,
      String(p.rows),
      String(p.read),
      String(flat.read),
      (p.read / Math.max(1, flat.read)).toFixed(2),
      String(p.buffers),
      String(flat.buffers),
      p.ms.toFixed(1),
      flat.ms.toFixed(1),
      (p.ms / Math.max(0.001, flat.ms)).toFixed(2),
    ]);
  }
  return out;
}

/**
 * The tables a night rewrites: their dead row versions' share of all versions (what a
 * vacuum would remove), and the share of their updates that were HOT (in place, no new
 * index entry), from the statistics collector.
 */
async function rewrittenTables(wh: Warehouse): Promise<string[][]> {
  // The writers' connections report their counts when idle, within a second.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await sql`select pg_stat_clear_snapshot()`.execute(wh.db);
  const { rows } = await sql<{
    relation: string;
    live: number;
    dead: number;
    updates: number;
    hot: number;
    bytes: number;
  }>`
    select relname as relation, n_live_tup::bigint as live, n_dead_tup::bigint as dead,
      n_tup_upd::bigint as updates, n_tup_hot_upd::bigint as hot,
      pg_total_relation_size(relid)::bigint as bytes
    from pg_stat_user_tables
    where schemaname = current_schema()
      and relname in ('rank_latest', 'rank_months_current', 'rank_months_past', 'visibility_months', 'listings')
    order by relname`.execute(wh.db);
  return rows.map((r) => {
    const live = Number(r.live);
    const dead = Number(r.dead);
    const updates = Number(r.updates);
    return [
      r.relation,
      String(live),
      String(dead),
      `${((100 * dead) / Math.max(1, live + dead)).toFixed(0)} %`,
      `${((100 * Number(r.hot)) / Math.max(1, updates)).toFixed(0)} %`,
      (Number(r.bytes) / 1024).toFixed(0),
    ];
  });
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
    await maintenance().execute(wh.db);
    const emptyBytes = await warehouseBytes(wh);
    out(
      `Warehouse bench: ${BUSINESSES} businesses × ${SERIES_PER_BUSINESS} rank series, ${DAYS} nights, ${VACUUM ? 'a vacuum between nights' : 'nights back to back, no vacuum'}, schema ${schema}`,
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
    const observations30 = await observationCount(wh);
    for (let n = 31; n < DAYS; n++) {
      await bulkNight(wh, dayOf(nightAt(n)), nightAt(n), seriesIds);
      await vacuumUpdated(wh);
      if (n % 30 === 0) out(`  … night ${n} of ${DAYS}`);
    }
    const buildSeconds = (performance.now() - build) / 1000;
    const nightLast = await writerNight(wh, nightAt(DAYS));
    const rewritten = await rewrittenTables(wh);
    const atLast = await measureQueries(wh, nightAt(DAYS));
    const windows = await measureWindows(wh, nightAt(DAYS));
    const bytesLast = (await warehouseBytes(wh)) - emptyBytes;
    const observations = await observationCount(wh);
    // Each table with its indexes and TOAST: its share of the whole.
    const { rows: sizes } = await sql<{ relation: string; bytes: number }>`
      select c.relname as relation, pg_total_relation_size(c.oid)::bigint as bytes
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'r'
        and c.relname not in ('reviews', 'review_responses')
        and pg_total_relation_size(c.oid) > 8192 * 4
      order by bytes desc`.execute(wh.db);
    const { rows: indexes } = await sql<{ relation: string; bytes: number }>`
      select c.relname as relation, pg_relation_size(c.oid)::bigint as bytes
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'i'
        and (c.relname like 'rank%' or c.relname like 'visibility_months%')
      order by bytes desc`.execute(wh.db);
    const allBytes = await warehouseBytes(wh);
    const rawBytes = sizes
      .filter((s) => s.relation === 'raw_read_sets' || s.relation === 'raw_bodies')
      .reduce((sum, s) => sum + Number(s.bytes), 0);
    // The flat layout beside the packed one, once the bytes are counted.
    await buildFlatLayout(wh);
    const rankWindows = await measureRankWindows(wh, nightAt(DAYS));

    out('');
    out(
      renderTable(
        ['figure', 'value'],
        [
          ['rank observations stored', String(observations)],
          [
            `bytes per rank observation, all tables and indexes, raw zone included (target ≤ ${VACUUM ? 24 : 40}, ${VACUUM ? 'a vacuum between nights' : 'no vacuum'})`,
            (bytesLast / observations).toFixed(1),
          ],
          ['  … raw zone not included', ((bytesLast - rawBytes) / observations).toFixed(1)],
          [
            '  of which the raw zone (raw_read_sets, raw_bodies), bytes per observation · share',
            `${(rawBytes / observations).toFixed(1)} · ${((100 * rawBytes) / allBytes).toFixed(0)} %`,
          ],
          [
            `  … at night 30 (${observations30} observations)`,
            (bytes30 / observations30).toFixed(1),
          ],
          ...sizes.map((s) => [
            `  ${s.relation} (with its indexes), bytes per observation · share`,
            `${(Number(s.bytes) / observations).toFixed(1)} · ${((100 * Number(s.bytes)) / allBytes).toFixed(0)} %`,
          ]),
          ...indexes.map((s) => [
            `  index ${s.relation}, bytes per observation`,
            (Number(s.bytes) / observations).toFixed(1),
          ]),
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
        String(first.buffers),
        last ? last.ms.toFixed(1) : '-',
        last ? String(last.rows) : '-',
        last ? String(last.read) : '-',
        last ? String(last.buffers) : '-',
      ]);
    }
    out(
      renderTable(
        [
          'documented query',
          'ms @30',
          'rows @30',
          'read @30',
          'buffers @30',
          `ms @${DAYS}`,
          `rows @${DAYS}`,
          `read @${DAYS}`,
          `buffers @${DAYS}`,
        ],
        queryRows,
      ),
    );
    out('');
    out(
      `Rewritten nightly, after night ${DAYS} (${VACUUM ? 'vacuumed before it' : 'no vacuum since night 1'})`,
    );
    out(
      renderTable(
        ['table', 'live rows', 'dead rows', 'dead share', 'HOT updates', 'KiB'],
        rewritten,
      ),
    );
    out('');
    out(
      `Rank views at night ${DAYS}, packed (v_rank_daily) beside the flat layout (v_rank_daily_flat), same data; rows read include function scans; ms: the fastest of 3 runs, EXPLAIN ANALYZE without per-node timing`,
    );
    out(
      renderTable(
        [
          'query',
          'rows',
          'read',
          'read flat',
          '÷ flat',
          'buffers',
          'buffers flat',
          'ms',
          'ms flat',
          '÷ flat',
        ],
        rankWindows,
      ),
    );
    out('');
    out(`Local-SEO views at night ${DAYS}: a 30-day window against a 365-day one`);
    out(
      renderTable(
        ['query', 'window', 'rows', 'rows read', 'buffers (shared hit + read)', 'ms'],
        windows,
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
