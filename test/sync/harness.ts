/**
 * What the sync suites share: a sandbox over real HTTP, a warehouse per backend, a client
 * with short retry delays, what the sandbox serves (computed from its world), and a
 * digest of the warehouse's content that leaves out times and run ids, so that two runs
 * can be compared row for row.
 */
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { type ApiClient, createApiClient } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { buildRankings, listKeywords } from '../../src/sandbox/keywords.ts';
import { buildListings } from '../../src/sandbox/listings.ts';
import { STATE_BY_ID } from '../../src/sandbox/reference-data.ts';
import { buildReviews } from '../../src/sandbox/reviews.ts';
import {
  DEFAULT_FAULTS,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { createWorld, listBusinesses as worldBusinesses } from '../../src/sandbox/world.ts';
import type { SyncOptions } from '../../src/sync/options.ts';
import { runSync, type SyncResult } from '../../src/sync/run.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { CONTRACT_TABLES } from '../helpers/contract-tables.ts';
import { createTestWarehouse, type TestBackend, type TestWarehouse } from '../helpers/database.ts';
import { scannableText } from '../helpers/secret-scan.ts';

export function testApiClient(): ApiClient {
  return createApiClient({
    concurrency: 16,
    accountConcurrency: 8,
    timeouts: { connectMs: 2000, headersMs: 2000, bodyMs: 2000 },
    retry: { maxAttempts: 12, baseDelayMs: 1, maxDelayMs: 20, maxRetryAfterMs: 5000 },
    logger: silentLogger(),
  });
}

/** A suite's sandbox and client, and the warehouse of the test running (see `sandboxSuite`). */
export interface SandboxSuite {
  readonly sandbox: RunningSandbox;
  readonly api: ApiClient;
  /** A migrated warehouse for the test running (createTestWarehouse), closed after it. */
  createWarehouse(backend: TestBackend): Promise<TestWarehouse>;
}

/**
 * One sandbox (on a free port) and one `testApiClient` for a describe block, started
 * before its first test and closed after its last; after each test the sandbox's faults
 * are cleared and the test's warehouse is closed. Call inside the describe block.
 */
export function sandboxSuite(options: SandboxOptions): SandboxSuite {
  let sandbox: RunningSandbox | undefined;
  let api: ApiClient | undefined;
  let warehouse: TestWarehouse | undefined;
  const suite: SandboxSuite = {
    get sandbox() {
      if (!sandbox) throw new Error('the sandbox starts in beforeAll');
      return sandbox;
    },
    get api() {
      if (!api) throw new Error('the client is made in beforeAll');
      return api;
    },
    async createWarehouse(backend) {
      warehouse = await createTestWarehouse(backend);
      return warehouse;
    },
  };
  beforeAll(async () => {
    sandbox = await startSandbox({ ...options, port: 0 });
    api = testApiClient();
  });
  afterEach(async () => {
    sandbox?.setFaults({ ...DEFAULT_FAULTS, script: [] });
    await warehouse?.close();
    warehouse = undefined;
  });
  afterAll(async () => {
    await api?.close();
    await sandbox?.close();
  });
  return suite;
}

/** A test's own sandbox, warehouse and client (see `worldPerTest`). */
export interface TestWorld {
  readonly sandbox: RunningSandbox;
  readonly warehouse: TestWarehouse;
  readonly api: ApiClient;
}

/**
 * A sandbox (on a free port), a migrated warehouse and a `testApiClient` for each test of
 * a describe block, made before the test and closed after it, so that no test leans on
 * the one before it. Call inside the describe block.
 */
export function worldPerTest(backend: TestBackend, options: SandboxOptions): TestWorld {
  let sandbox: RunningSandbox | undefined;
  let warehouse: TestWarehouse | undefined;
  let api: ApiClient | undefined;
  beforeEach(async () => {
    sandbox = await startSandbox({ ...options, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterEach(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
    api = warehouse = sandbox = undefined;
  });
  const made = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the test world is made in beforeEach');
    return value;
  };
  return {
    get sandbox() {
      return made(sandbox);
    },
    get warehouse() {
      return made(warehouse);
    },
    get api() {
      return made(api);
    },
  };
}

/** A night's observation time, 04:00 UTC of the sandbox's day: fixed, so two builds compare to the millisecond. */
export function nightOf(sandbox: RunningSandbox): Date {
  return new Date(`${sandbox.today()}T04:00:00.000Z`);
}

export async function sync(
  warehouse: Warehouse,
  api: ApiClient,
  credentials: readonly Credential[],
  extra: Partial<SyncOptions> = {},
): Promise<SyncResult> {
  return runSync({
    warehouse,
    api,
    credentials,
    logger: silentLogger(),
    trigger: 'test',
    ...extra,
  });
}

/**
 * What the sandbox serves on a day, computed from its own world (the same seed, the
 * records before they are serialised), never through src/api: a parsing bug in the client
 * would otherwise agree with itself. Valid for a sandbox that has seen no writes.
 */
export interface WorldTruth {
  businesses: number[];
  /** `businessId:listingId` → the listing as the upstream serves it (snake_case). */
  listings: Map<string, Record<string, unknown>>;
  /** Distinct review ids over both categories (an item may be listed in either). */
  reviews: number;
  responses: number;
  /** One observation per keyword and site; `Google_new` gives two (local, organic). */
  ranks: number;
  keywords: number;
}

export interface WorldShape {
  seed: number;
  accounts: number;
  businessesPerAccount: number;
  startDate: string;
}

export function worldTruth(shape: WorldShape, day: number): WorldTruth {
  const world = createWorld(shape);
  world.day = day;
  const truth: WorldTruth = {
    businesses: [],
    listings: new Map(),
    reviews: 0,
    responses: 0,
    ranks: 0,
    keywords: 0,
  };
  const responsesByReview = new Map<unknown, number>();
  for (const account of world.accounts) {
    for (const business of worldBusinesses(world, account)) {
      truth.businesses.push(business.id);
      const iso = STATE_BY_ID.get(business.profile.stateId)?.iso ?? '';
      for (const listing of buildListings(world, business, day, iso)) {
        truth.listings.set(`${business.id}:${listing['id']}`, listing);
      }
      for (const category of ['review', 'social'] as const) {
        // Counts only: whether an item can be answered does not change them.
        const canRespond = () => false;
        for (const items of Object.values(
          buildReviews(world, business, day, category, canRespond),
        )) {
          for (const item of items) {
            responsesByReview.set(item['id'], (item['responses'] as unknown[]).length);
          }
        }
      }
      for (const sites of Object.values(buildRankings(world, business, day))) {
        for (const [site, rank] of Object.entries(sites)) {
          truth.ranks += site === 'Google_new' ? Object.keys(rank as object).length : 1;
        }
      }
      truth.keywords += listKeywords(world, business, day).length;
    }
  }
  truth.reviews = responsesByReview.size;
  for (const n of responsesByReview.values()) truth.responses += n;
  return truth;
}

export async function count(warehouse: Warehouse, table: string, where = sql`true`) {
  const row = await sql<{
    n: number;
  }>`select count(*)::int as n from ${sql.table(table)} where ${where}`.execute(warehouse.db);
  return row.rows[0]?.n ?? 0;
}

/** The content of every data table without times and run ids, in a stable order. */
const DIGEST: Record<string, string> = {
  businesses:
    'business_id, account_name, name, latitude, longitude, content_hash, archived_at is null as live',
  business_versions: 'business_id, content_hash',
  listings: 'business_id, listing_id, status, content_hash, removed_at is null as live',
  listing_status_history: 'business_id, listing_id, status, previous_status, sync_status',
  reviews: 'review_id, business_id, category, content_hash',
  review_versions: 'review_id, content_hash',
  review_responses: 'response_id, review_id, content_hash',
  rank_observations: 'business_id, keyword, site, observed_on, rank',
  keywords: 'keyword_id, business_id, keyword, is_primary, archived, deleted_at is null as live',
  countries: 'country_id, name',
  states: 'state_id, name, iso, country_id',
  sub_categories: 'sub_category_id, name',
  alerts: 'kind, business_id, listing_id, site_name, previous_status, status, dedupe_key',
};

export async function contentDigest(warehouse: Warehouse): Promise<Record<string, unknown[]>> {
  const digest: Record<string, unknown[]> = {};
  for (const [table, columns] of Object.entries(DIGEST)) {
    const result = await sql<{ row: string }>`
      select row_to_json(t)::text as row
      from (select ${sql.raw(columns)} from ${sql.table(table)}) t
      order by 1`.execute(warehouse.db);
    digest[table] = result.rows.map((r) => r.row);
  }
  return digest;
}

/**
 * The physical row versions of every data table (each row's xmin, in ctid order): any
 * insert, update or delete changes it, even one that leaves the values as they were.
 * `accounts` (its last_synced_at) and `sync_runs` are the run's own bookkeeping.
 */
export async function rowVersions(warehouse: Warehouse): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  for (const table of CONTRACT_TABLES) {
    if (table === 'accounts' || table === 'sync_runs') continue;
    const result = await sql<{ v: string | null }>`
      select string_agg(xmin::text, ',' order by ctid) as v from ${sql.table(table)}`.execute(
      warehouse.db,
    );
    versions[table] = result.rows[0]?.v ?? '';
  }
  return versions;
}

/** Row counts of every contract table. */
export async function tableCounts(warehouse: Warehouse): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of CONTRACT_TABLES) counts[table] = await count(warehouse, table);
  return counts;
}

/**
 * Every contract table as text, for secret scans, followed by the same with its JSON
 * escapes decoded, so that a secret stored escaped is found too (test/helpers/secret-scan.ts).
 */
export async function dumpAll(warehouse: Warehouse): Promise<string> {
  const parts: string[] = [];
  for (const table of CONTRACT_TABLES) {
    const result = await sql<{
      row: string;
    }>`select row_to_json(t)::text as row from ${sql.table(table)} t`.execute(warehouse.db);
    parts.push(...result.rows.map((r) => r.row));
  }
  return scannableText(parts.join('\n'));
}

/** Rows written according to the run's own stats: inserts, updates and deletes of data tables. */
export function rowsWritten(result: SyncResult): number {
  return Object.entries(result.stats.tables)
    .filter(([table]) => table !== 'accounts' && table !== 'sync_runs')
    .reduce((sum, [, c]) => sum + c.inserted + c.updated + c.deleted, 0);
}
