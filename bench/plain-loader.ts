/**
 * The floor `npm run bench` compares the sync with: a plain loader that sends the same
 * requests to the same sandbox at the same concurrency (undici, `JSON.parse`, no schema
 * library), builds the same rows and loads them with one `COPY` per table per batch of
 * businesses into the same migrated schema (indexes and foreign keys included). It keeps
 * nothing the sync keeps (no content comparison, no soft deletes, no alerts, no
 * quarantine): it is what loading an empty warehouse costs at least, not a second sync.
 *
 * Runs in a process of its own, like `bench/run-sync.ts`, and prints one JSON line: wall
 * seconds, the process's CPU seconds and peak RSS, requests and rows per table.
 *
 *   node bench/plain-loader.ts '{"credentialsFile": "…", "databaseUrl": "…", "searchPath": "…"}'
 */
import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Pool } from 'undici';
import type { Credential } from '../src/api/index.ts';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../src/warehouse/driver/migrate.ts';

interface Args {
  credentialsFile: string;
  databaseUrl: string;
  searchPath: string;
  concurrency: number;
  accountConcurrency: number;
  /** Businesses per COPY batch (one COPY per table per batch). */
  batch?: number;
  /**
   * The floor of an unchanged sync: same requests, same rows built, then per batch one
   * read of the stored content hashes per table instead of the COPYs; prints the rows
   * whose hash is not stored (0 when nothing changed upstream).
   */
  unchanged?: boolean;
  /**
   * Only the requests (the bench's unmeasured first pass, which fills the sandbox's
   * cache): the same reads and rows built, nothing compared or written.
   */
  readsOnly?: boolean;
}

type Json = Record<string, unknown>;
type Value = string | number | boolean | null | undefined;

/** Tables in dependency order, each with the columns the loader writes. */
const COLUMNS = {
  businesses: [
    'business_id',
    'account_name',
    'name',
    'street',
    'city',
    'state_name',
    'postal_code',
    'phone',
    'latitude',
    'longitude',
    'biz_url',
    'owner_first_name',
    'owner_last_name',
    'facebook_url',
    'twitter_url',
    'description',
    'tagline',
    'storecode',
    'additional_categories',
    'business_hours',
    'hide_address',
    'content_hash',
    'first_seen_at',
    'last_seen_at',
    'profile_changed_at',
    'profile_first_read_at',
    'listings_first_synced_at',
    'reviews_first_synced_at',
    'rankings_first_synced_at',
    'keywords_first_synced_at',
  ],
  business_versions: ['business_id', 'observed_at', 'content_hash', 'profile', 'run_id'],
  listings: [
    'business_id',
    'listing_id',
    'site_name',
    'status',
    'sync_status',
    'order_status',
    'name',
    'name_valid',
    'phone',
    'phone_valid',
    'street',
    'city',
    'state',
    'postal_code',
    'address_valid',
    'live_link',
    'claimed',
    'has_site_credentials',
    'content_hash',
    'first_seen_at',
    'last_seen_at',
    'status_changed_at',
  ],
  listing_status_history: [
    'business_id',
    'listing_id',
    'observed_at',
    'site_name',
    'status',
    'sync_status',
    'name_valid',
    'phone_valid',
    'address_valid',
    'claimed',
    'run_id',
  ],
  listing_accuracy_days: [
    'business_id',
    'day',
    'listings',
    'accurate',
    'inaccurate',
    'not_present',
  ],
  reviews: [
    'review_id',
    'business_id',
    'site_name',
    'category',
    'type',
    'title',
    'content',
    'author_name',
    'author_avatar',
    'rating',
    'reviewed_at',
    'reviewed_at_precision',
    'permalink',
    'likes_count',
    'likes_change',
    'can_respond',
    'response_count',
    'content_hash',
    'first_seen_at',
    'last_seen_at',
  ],
  review_versions: [
    'review_id',
    'observed_at',
    'content_hash',
    'rating',
    'title',
    'content',
    'likes_count',
    'likes_change',
    'response_count',
    'run_id',
  ],
  review_responses: [
    'response_id',
    'review_id',
    'business_id',
    'title',
    'content',
    'author_name',
    'author_avatar',
    'responded_at',
    'responded_at_precision',
    'content_hash',
    'first_seen_at',
    'last_seen_at',
  ],
  keywords: [
    'keyword_id',
    'business_id',
    'keyword',
    'city',
    'state',
    'is_primary',
    'archived',
    'content_hash',
    'first_seen_at',
    'last_seen_at',
  ],
  rank_series: ['series_id', 'business_id', 'keyword', 'site', 'keyword_id'],
  // Rank history packed by month (migration 0030): today's element of each series' month row.
  // A first night: every series' row is its latest month's (migration 0040).
  rank_months_current: ['series_id', 'month', 'ranks'],
  rank_latest: [
    'series_id',
    'observed_on',
    'rank',
    'best_rank_30d',
    'worst_rank_30d',
    'observations_30d',
    'unranked_days_30d',
    'window_collected',
    'window_ranks',
  ],
} as const;
type Table = keyof typeof COLUMNS;
const TABLES = Object.keys(COLUMNS) as Table[];

/** One value in COPY's text format. */
function field(value: Value): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value !== 'string') return String(value);
  return /[\\\t\n\r]/.test(value)
    ? value
        .replaceAll('\\', '\\\\')
        .replaceAll('\t', '\\t')
        .replaceAll('\n', '\\n')
        .replaceAll('\r', '\\r')
    : value;
}

/** The tables whose rows carry a content hash, and the column it is in. */
const HASHED: Partial<Record<Table, number>> = Object.fromEntries(
  TABLES.filter((t) =>
    ['content_hash', 'business_id'].every((c) => (COLUMNS[t] as readonly string[]).includes(c)),
  ).map((t) => [t, (COLUMNS[t] as readonly string[]).indexOf('content_hash')]),
);

class Batch {
  lines = new Map<Table, string[]>(TABLES.map((t) => [t, []]));
  hashes = new Map<Table, string[]>(TABLES.map((t) => [t, []]));
  businessIds: number[] = [];
  add(table: Table, values: Value[]): void {
    (this.lines.get(table) as string[]).push(`${values.map(field).join('\t')}\n`);
    const at = HASHED[table];
    if (at !== undefined) (this.hashes.get(table) as string[]).push(values[at] as string);
  }
}

const sha1 = (value: unknown): string => hash('sha1', JSON.stringify(value));
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const num = (v: unknown): number | null =>
  typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : null;
/** Upstream dates come as `YYYY-MM-DD` (a day) or an ISO instant. */
function when(v: unknown): [string | null, string | null] {
  if (typeof v !== 'string') return [null, null];
  return v.length === 10 ? [`${v}T00:00:00Z`, 'day'] : [v, 'instant'];
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const credentials = JSON.parse(readFileSync(args.credentialsFile, 'utf8')) as Credential[];
const BATCH = args.batch ?? 250;

/** Whether this run writes: the first load; not the unchanged pass, nor a reads-only one. */
const writes = !args.unchanged && !args.readsOnly;

// The same migrated schema as the sync's, in the schema the bench made for this run.
if (writes) {
  const warehouse = await openWarehouse({
    databaseUrl: args.databaseUrl,
    searchPath: args.searchPath,
  });
  await migrateToLatest(warehouse.db);
  await warehouse.close();
}

const started = performance.now();
const runId = crypto.randomUUID();
const observedAt = new Date().toISOString();
const observedOn = observedAt.slice(0, 10);
const observedMonth = `${observedOn.slice(0, 8)}01`;
/** A month row's ranks up to today's element: NULL before it (not collected), -1: not ranked. */
const monthRanks = (rank: number | null) =>
  `{${[...new Array<string>(Number(observedOn.slice(8, 10)) - 1).fill('NULL'), String(rank ?? -1)].join(',')}}`;
const db = new pg.Pool({
  connectionString: args.databaseUrl,
  max: 4,
  options: `-c search_path=${args.searchPath}`,
});
const http = new Map<string, Pool>();
const overall = pLimit(args.concurrency);
let requests = 0;
let nextSeries = 1;
/** Rows built per table; rows COPYed per table (none in unchanged mode). */
const rowCounts: Record<string, number> = {};
const rowCountsWritten: Record<string, number> = {};

async function get(
  cred: Credential,
  limit: LimitFunction,
  path: string,
  query = '',
): Promise<unknown> {
  return overall(() =>
    limit(async () => {
      const base = new URL(cred.baseUrl);
      let pool = http.get(base.origin);
      if (!pool) {
        pool = new Pool(base.origin, { connections: args.concurrency });
        http.set(base.origin, pool);
      }
      const auth = `auth_token=${encodeURIComponent(cred.authToken)}&user_email=${encodeURIComponent(cred.userEmail)}`;
      requests += 1;
      const response = await pool.request({
        method: 'GET',
        path: `${base.pathname.replace(/\/+$/, '')}/api/v2${path}?${query}${auth}`,
        headers: { accept: 'application/json' },
      });
      const body = JSON.parse(await response.body.text()) as { success: boolean; result: unknown };
      if (response.statusCode !== 200 || !body.success) {
        throw new Error(`${path}: HTTP ${response.statusCode}`);
      }
      return body.result;
    }),
  );
}

async function copy(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  lines: string[],
) {
  rowCounts[table] = (rowCounts[table] ?? 0) + lines.length;
  if (lines.length === 0 || !writes) return;
  rowCountsWritten[table] = (rowCountsWritten[table] ?? 0) + lines.length;
  await pipeline(
    Readable.from(lines),
    client.query(copyFrom(`copy ${table} (${columns.join(', ')}) from stdin`)),
  );
}

let changedRows = 0;
/** Unchanged mode: one read of the stored hashes per hashed table for the batch's businesses. */
async function compare(batch: Batch): Promise<void> {
  const client = await db.connect();
  try {
    for (const [table, built] of batch.hashes) {
      if (built.length === 0) continue;
      const { rows } = await client.query<{ content_hash: string }>(
        `select content_hash from ${table} where business_id = any($1::bigint[])`,
        [batch.businessIds],
      );
      const stored = new Set(rows.map((r) => r.content_hash));
      for (const h of built) if (!stored.has(h)) changedRows += 1;
    }
  } finally {
    client.release();
  }
}

/** One transaction, one COPY per table, parents first. */
async function flush(batch: Batch): Promise<void> {
  if (args.readsOnly) return;
  if (args.unchanged) {
    for (const [table, lines] of batch.lines)
      rowCounts[table] = (rowCounts[table] ?? 0) + lines.length;
    return compare(batch);
  }
  const client = await db.connect();
  try {
    await client.query('begin');
    for (const table of TABLES)
      await copy(client, table, COLUMNS[table], batch.lines.get(table) ?? []);
    await client.query('commit');
  } finally {
    client.release();
  }
}

function addBusiness(
  batch: Batch,
  account: string,
  full: Json,
  listings: Json[],
  reviews: [string, Record<string, Json[]>][],
  rankings: Record<string, Record<string, unknown>>,
  keywords: Json[],
): void {
  const id = full['id'] as number;
  batch.businessIds.push(id);
  const { id: _id, ...profile } = full;
  profile['latitude'] = num(full['latitude']);
  profile['longitude'] = num(full['longitude']);
  const profileHash = sha1(profile);
  const t = observedAt;
  batch.add('businesses', [
    id,
    account,
    str(full['name']),
    str(full['street']),
    str(full['city']),
    str(full['state_name']),
    str(full['postal_code']),
    str(full['phone']),
    num(full['latitude']),
    num(full['longitude']),
    str(full['biz_url']),
    str(full['owner_first_name']),
    str(full['owner_last_name']),
    str(full['facebook_url']),
    str(full['twitter_url']),
    str(full['description']),
    str(full['tagline']),
    str(full['storecode']),
    JSON.stringify(full['additional_categories'] ?? []),
    JSON.stringify(full['business_hours'] ?? []),
    bool(full['hide_address']),
    profileHash,
    t,
    t,
    t,
    t,
    t,
    t,
    t,
    t,
  ]);
  batch.add('business_versions', [id, t, profileHash, JSON.stringify(profile), runId]);

  const accuracy = { accurate: 0, inaccurate: 0, notPresent: 0 };
  for (const l of listings) {
    const { site_username, site_password, ...content } = l;
    const status = str(l['status']) ?? 'Unknown';
    if (status === 'Accurate') accuracy.accurate += 1;
    else if (status === 'Inaccurate') accuracy.inaccurate += 1;
    else if (status === 'Not Present') accuracy.notPresent += 1;
    batch.add('listings', [
      id,
      l['id'] as number,
      str(l['site_name']),
      status,
      str(l['sync_status']),
      str(l['order_status']),
      str(l['name']),
      bool(l['name_valid']),
      str(l['phone']),
      bool(l['phone_valid']),
      str(l['street']),
      str(l['city']),
      str(l['state']),
      str(l['postal_code']),
      bool(l['address_valid']),
      str(l['live_link']),
      bool(l['claimed']),
      site_username != null || site_password != null,
      sha1(content),
      t,
      t,
      t,
    ]);
    batch.add('listing_status_history', [
      id,
      l['id'] as number,
      t,
      str(l['site_name']),
      status,
      str(l['sync_status']),
      bool(l['name_valid']),
      bool(l['phone_valid']),
      bool(l['address_valid']),
      bool(l['claimed']),
      runId,
    ]);
  }
  batch.add('listing_accuracy_days', [
    id,
    observedOn,
    listings.length,
    accuracy.accurate,
    accuracy.inaccurate,
    accuracy.notPresent,
  ]);

  for (const [category, bySite] of reviews) {
    if (Array.isArray(bySite)) continue;
    for (const [site, items] of Object.entries(bySite)) {
      for (const r of items) {
        const responses = (r['responses'] as Json[] | undefined) ?? [];
        const contentHash = sha1(r);
        const [reviewedAt, precision] = when(r['date']);
        const rid = r['id'] as string;
        batch.add('reviews', [
          rid,
          id,
          site,
          category,
          str(r['type']),
          str(r['title']),
          str(r['content']) ?? '',
          str(r['author_name']),
          str(r['author_avatar']),
          num(r['rating']),
          reviewedAt,
          precision,
          str(r['permalink']),
          num(r['likes_count']),
          num(r['likes_change']),
          r['can_respond'] === true,
          responses.length,
          contentHash,
          t,
          t,
        ]);
        batch.add('review_versions', [
          rid,
          t,
          contentHash,
          num(r['rating']),
          str(r['title']),
          str(r['content']) ?? '',
          num(r['likes_count']),
          num(r['likes_change']),
          responses.length,
          runId,
        ]);
        for (const p of responses) {
          const [respondedAt, respondedPrecision] = when(p['date']);
          batch.add('review_responses', [
            p['id'] as string,
            rid,
            id,
            str(p['title']),
            str(p['content']),
            str(p['author_name']),
            str(p['author_avatar']),
            respondedAt,
            respondedPrecision,
            sha1(p),
            t,
            t,
          ]);
        }
      }
    }
  }

  const keywordIds = new Map<string, number>();
  for (const k of keywords) {
    keywordIds.set(k['keyword'] as string, k['id'] as number);
    batch.add('keywords', [
      k['id'] as number,
      id,
      str(k['keyword']),
      str(k['city']),
      str(k['state']),
      bool(k['primary']),
      k['archived'] === true,
      sha1(k),
      t,
      t,
    ]);
  }
  if (Array.isArray(rankings)) return;
  const window = new Array<string>(30).fill('NULL');
  for (const [keyword, sites] of Object.entries(rankings)) {
    const series: [string, unknown][] = [];
    for (const [site, value] of Object.entries(sites)) {
      if (value !== null && typeof value === 'object') {
        const v = value as Json;
        series.push([`${site}.local`, v['local']], [`${site}.organic`, v['organic']]);
      } else series.push([site, value]);
    }
    for (const [site, value] of series) {
      const rank = typeof value === 'number' ? value : null;
      const seriesId = nextSeries++;
      batch.add('rank_series', [seriesId, id, keyword, site, keywordIds.get(keyword) ?? null]);
      batch.add('rank_months_current', [seriesId, observedMonth, monthRanks(rank)]);
      batch.add('rank_latest', [
        seriesId,
        observedOn,
        rank,
        rank,
        rank,
        1,
        rank === null ? 1 : 0,
        1,
        `{${rank ?? 'NULL'},${window.join(',')}}`,
      ]);
    }
  }
}

// Accounts and reference data first: every business row points at its account.
const setup = await db.connect();
try {
  for (const cred of writes ? credentials : []) {
    await setup.query('insert into accounts (name, user_email, base_url) values ($1, $2, $3)', [
      cred.name,
      cred.userEmail,
      cred.baseUrl,
    ]);
  }
  // The calendar the rank views read days from: this month's days (as the sync's writer adds).
  if (writes) {
    await setup.query(
      `insert into rank_days (observed_on, month, day)
       select g::date, $1::date, extract(day from g)::smallint
       from generate_series($1::date, $1::date + interval '1 month' - interval '1 day', interval '1 day') g
       on conflict (observed_on) do nothing`,
      [observedMonth],
    );
  }
} finally {
  setup.release();
}

async function loadReference(cred: Credential, limit: LimitFunction): Promise<void> {
  const [countries, subCategories] = (await Promise.all([
    get(cred, limit, '/countries.json'),
    get(cred, limit, '/sub_categories.json'),
  ])) as [Json[], Json[]];
  const states = (
    (await Promise.all(
      countries.map((c) => get(cred, limit, `/countries/${c['id'] as number}/states.json`)),
    )) as Json[][]
  ).flat();
  const client = await db.connect();
  try {
    const line = (values: Value[]) => `${values.map(field).join('\t')}\n`;
    await copy(
      client,
      'countries',
      ['country_id', 'name'],
      countries.map((c) => line([c['id'] as number, str(c['name'])])),
    );
    await copy(
      client,
      'states',
      ['state_id', 'name', 'iso', 'country_id'],
      states.map((s) =>
        line([s['id'] as number, str(s['name']), str(s['iso']), s['country_id'] as number]),
      ),
    );
    await copy(
      client,
      'sub_categories',
      ['sub_category_id', 'name'],
      subCategories.map((c) => line([c['id'] as number, str(c['name'])])),
    );
  } finally {
    client.release();
  }
}

const flushes: Promise<void>[] = [];
let batch = new Batch();
function businessDone(): void {
  if (batch.businessIds.length >= BATCH) {
    flushes.push(flush(batch));
    batch = new Batch();
  }
}

async function loadAccount(cred: Credential, index: number): Promise<void> {
  const limit = pLimit(args.accountConcurrency);
  const businessLimit = pLimit(args.accountConcurrency);
  const reference = index === 0 ? loadReference(cred, limit) : Promise.resolve();
  const list = (await get(cred, limit, '/businesses.json')) as Json[];
  await Promise.all(
    list.map((summary) =>
      businessLimit(async () => {
        const id = summary['id'] as number;
        const [full, listings, reviews, social, rankings, keywords] = await Promise.all([
          get(cred, limit, `/businesses/${id}.json`, 'type=all&'),
          get(cred, limit, `/businesses/${id}/listings.json`),
          get(cred, limit, `/businesses/${id}/reviews.json`, 'category=review&'),
          get(cred, limit, `/businesses/${id}/reviews.json`, 'category=social&'),
          get(cred, limit, `/businesses/${id}/rankings.json`),
          get(cred, limit, `/businesses/${id}/keywords.json`),
        ]);
        addBusiness(
          batch,
          cred.name,
          full as Json,
          listings as Json[],
          [
            ['review', reviews as Record<string, Json[]>],
            ['social', social as Record<string, Json[]>],
          ],
          rankings as Record<string, Record<string, unknown>>,
          keywords as Json[],
        );
        businessDone();
      }),
    ),
  );
  await reference;
}

await Promise.all(credentials.map((cred, i) => loadAccount(cred, i)));
if (batch.businessIds.length > 0) flushes.push(flush(batch));
await Promise.all(flushes);
if (writes) {
  await db.query(
    `select setval(pg_get_serial_sequence('rank_series', 'series_id'), greatest($1::int, 1))`,
    [nextSeries - 1],
  );
  await db.query('update accounts set last_synced_at = now()');
}
const wallSeconds = (performance.now() - started) / 1000;
for (const pool of http.values()) await pool.close();
await db.end();
const cpu = process.cpuUsage();
process.stdout.write(
  `${JSON.stringify({
    wallSeconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    requests,
    rows: rowCounts,
    written: Object.values(rowCountsWritten).reduce((a, b) => a + b, 0),
    ...(args.unchanged ? { changedRows } : {}),
  })}\n`,
);
