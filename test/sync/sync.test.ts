/**
 * The sync run end to end: the sandbox over real HTTP, the warehouse on each backend,
 * and the sandbox in both modes (docs/upstream.md, Errors): with HTTP statuses, and with
 * every error answered HTTP 200, which the contract allows.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import {
  type ApiClient,
  listBusinesses,
  listListings,
  listReviews,
  respondToReview,
} from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { recordResponseRequest } from '../../src/warehouse/runs/review-response-requests.ts';
import { testBackends } from '../helpers/database.ts';
import { sharedBuild } from '../helpers/warehouse-copies.ts';
import {
  contentDigest,
  count,
  dumpAll,
  rowsWritten,
  rowVersions,
  sync,
  tableCounts,
  testApiClient,
  type WorldShape,
  worldTruth,
} from './harness.ts';

/** The sandbox's world; the oracle rebuilds the same one (see worldTruth). */
const WORLD: WorldShape = {
  seed: 11,
  accounts: 2,
  businessesPerAccount: 6,
  startDate: '2026-01-01',
};

const cases = testBackends.flatMap((backend) => [
  { backend, mode: 'statuses', errorsWith200: false },
  { backend, mode: 'every error with HTTP 200', errorsWith200: true },
]);

describe.each(cases)('sync run ($backend) with $mode', ({ backend, errorsWith200 }) => {
  const shape = { ...WORLD, faults: { errorsWith200 } };
  // One sandbox at day 0 for the file's builds and the tests that only read upstream: a
  // sync reads it and changes nothing there. A test that moves its clock or answers a
  // review starts one of its own (ownWorld), the same world at the same day.
  let shared: { sandbox: RunningSandbox; api: ApiClient };
  beforeAll(async () => {
    shared = { sandbox: await startSandbox({ ...shape, port: 0 }), api: testApiClient() };
  });
  afterAll(async () => {
    await shared?.api.close();
    await shared?.sandbox.close();
  });
  async function ownWorld(): Promise<{ sandbox: RunningSandbox; api: ApiClient }> {
    const sandbox = await startSandbox({ ...shape, port: 0 });
    const api = testApiClient();
    onTestFinished(async () => {
      await api.close();
      await sandbox.close();
    });
    return { sandbox, api };
  }

  // Built once per backend and mode, when a test first asks: the tests that only read a
  // build share it (read-only), and each test that syncs on from one works on a copy, so
  // no test leans on the one before it.
  /** The first sync of day 0, into an empty warehouse. */
  const firstSync = sharedBuild(backend, (warehouse) =>
    sync(warehouse, shared.api, shared.sandbox.credentials),
  );
  /** The first sync of day 0 with a credential of a wrong token beside the good ones. */
  const withWrongToken = sharedBuild(backend, async (warehouse) => {
    const good = shared.sandbox.credentials;
    const bad = { ...good[0]!, name: 'wrong-token', authToken: 'sbx_not_the_token_4242' };
    return { good, bad, result: await sync(warehouse, shared.api, [...good, bad]) };
  });

  it('lands exactly what the world.sandbox served, in every table', async () => {
    const truth = worldTruth(WORLD, 0);
    const { built: result, reader } = await firstSync();
    const world = { warehouse: reader };
    expect(result.status).toBe('succeeded');
    expect(result.stats.businesses).toMatchObject({ listed: 12, synced: 12, failed: 0 });

    expect(await count(world.warehouse, 'accounts')).toBe(WORLD.accounts);
    expect(truth.businesses).toHaveLength(12);
    expect(await count(world.warehouse, 'businesses', sql`archived_at is null`)).toBe(
      truth.businesses.length,
    );
    expect(await count(world.warehouse, 'listings')).toBe(truth.listings.size);
    expect(await count(world.warehouse, 'reviews')).toBe(truth.reviews);
    expect(await count(world.warehouse, 'review_responses')).toBe(truth.responses);
    expect(await count(world.warehouse, 'rank_observations')).toBe(truth.ranks);
    expect(await count(world.warehouse, 'keywords')).toBe(truth.keywords);
    expect(await count(world.warehouse, 'countries')).toBeGreaterThan(0);
    expect(await count(world.warehouse, 'states')).toBeGreaterThan(0);
    expect(await count(world.warehouse, 'sub_categories')).toBeGreaterThan(50);
    // The first sync sets the baseline: one history row per listing, one version per business, no alert.
    expect(await count(world.warehouse, 'listing_status_history')).toBe(truth.listings.size);
    expect(await count(world.warehouse, 'business_versions')).toBe(truth.businesses.length);
    expect(await count(world.warehouse, 'alerts')).toBe(0);
    expect(await count(world.warehouse, 'quarantine')).toBe(0);

    // Spot values: every listing as the world.sandbox built it (its full or its short form).
    const rows = await world.warehouse.db
      .selectFrom('listings')
      .select([
        'business_id',
        'listing_id',
        'site_name',
        'status',
        'sync_status',
        'live_link',
        'has_site_credentials',
      ])
      .execute();
    const landed = new Map(rows.map((r) => [`${r.business_id}:${r.listing_id}`, r]));
    for (const [key, raw] of truth.listings) {
      expect(landed.get(key), key).toEqual({
        business_id: Number(key.split(':')[0]),
        listing_id: raw['id'],
        site_name: raw['site_name'],
        status: raw['status'],
        sync_status: raw['sync_status'],
        live_link: raw['live_link'] === undefined ? null : String(raw['live_link']),
        has_site_credentials: Boolean(raw['site_username'] || raw['site_password']),
      });
    }
    const business = await world.warehouse.db
      .selectFrom('businesses')
      .select(['latitude', 'longitude'])
      .where('business_id', '=', truth.businesses[0]!)
      .executeTakeFirstOrThrow();
    expect(typeof business.latitude).toBe('number');
    expect(await count(world.warehouse, 'rank_observations', sql`rank is null`)).toBeGreaterThan(0);
    expect(
      await count(world.warehouse, 'rank_observations', sql`site like 'Google_new.%'`),
    ).toBeGreaterThan(0);

    const run = await world.warehouse.db
      .selectFrom('sync_runs')
      .selectAll()
      .where('run_id', '=', result.runId)
      .executeTakeFirstOrThrow();
    expect(run.status).toBe('succeeded');
    expect(run.finished_at).toBeInstanceOf(Date);
    expect((run.stats as { requests: number }).requests).toBe(result.stats.requests);
  });

  it('writes no row when nothing changed upstream', async () => {
    const first = await firstSync();
    expect(first.built.status).toBe('succeeded');
    const world = { ...shared, warehouse: await first.copy() };
    expect(await count(world.warehouse, 'listings')).toBeGreaterThan(0);
    const digest = await contentDigest(world.warehouse);
    const counts = await tableCounts(world.warehouse);
    const versions = await rowVersions(world.warehouse);
    const result = await sync(world.warehouse, world.api, world.sandbox.credentials);
    expect(result.status).toBe('succeeded');
    expect(rowsWritten(result)).toBe(0);
    expect(await contentDigest(world.warehouse)).toEqual(digest);
    expect(await rowVersions(world.warehouse)).toEqual(versions);
    expect({ ...(await tableCounts(world.warehouse)), sync_runs: 0 }).toEqual({
      ...counts,
      sync_runs: 0,
    });
  });

  it('after a day, history grows by exactly the changed rows and each newly Inaccurate listing alerts once', async () => {
    const first = await firstSync();
    expect(first.built.status).toBe('succeeded');
    const world = { ...(await ownWorld()), warehouse: await first.copy() };
    const before = worldTruth(WORLD, 0);
    const historyBefore = await count(world.warehouse, 'listing_status_history');
    expect(historyBefore).toBe(before.listings.size);
    world.sandbox.advanceDays(1);
    const after = worldTruth(WORLD, 1);
    const tracked = [
      'status',
      'sync_status',
      'name_valid',
      'phone_valid',
      'address_valid',
      'claimed',
    ] as const;
    let changed = 0;
    let newlyInaccurate = 0;
    for (const [key, listing] of after.listings) {
      const previous = before.listings.get(key);
      if (!previous || tracked.some((field) => previous[field] !== listing[field])) changed += 1;
      if (listing['status'] === 'Inaccurate' && previous?.['status'] !== 'Inaccurate')
        newlyInaccurate += 1;
    }
    expect(changed).toBeGreaterThan(0);

    const result = await sync(world.warehouse, world.api, world.sandbox.credentials);
    expect(['succeeded']).toContain(result.status);
    expect((await count(world.warehouse, 'listing_status_history')) - historyBefore).toBe(changed);
    expect(await count(world.warehouse, 'alerts')).toBe(newlyInaccurate);
    expect(result.stats.alerts).toBe(newlyInaccurate);
    const archived = before.businesses.filter((id) => !after.businesses.includes(id)).length;
    expect(await count(world.warehouse, 'businesses', sql`archived_at is not null`)).toBe(archived);

    // The same day again raises nothing new.
    const again = await sync(world.warehouse, world.api, world.sandbox.credentials);
    expect(again.stats.alerts).toBe(0);
    expect(rowsWritten(again)).toBe(0);
  });

  it('one credential with a wrong token: the others load whole, the run is partial', async () => {
    const { built, reader } = await withWrongToken();
    const { good, bad, result } = built;
    const world = { ...shared, warehouse: reader };
    // The refusal the sync met, as served in this mode.
    const probe = await fetch(
      `${world.sandbox.baseUrl}/api/v2/businesses.json?auth_token=${bad.authToken}&user_email=${encodeURIComponent(bad.userEmail)}`,
    );
    expect(probe.status).toBe(errorsWith200 ? 200 : 401);
    expect(await probe.json()).toEqual({ success: false, message: 'Authentication Failure' });
    expect(result.status).toBe('partial');
    const outcome = result.stats.credentials.find((c) => c.name === 'wrong-token');
    expect(outcome?.status).toBe('failed');
    expect(outcome?.error).toContain('Authentication Failure');
    expect(outcome?.error).not.toContain(bad.authToken);
    for (const credential of good) {
      expect(result.stats.credentials.find((c) => c.name === credential.name)?.status).toBe(
        'succeeded',
      );
    }
    const upstream = worldTruth(WORLD, 0);
    expect(await count(world.warehouse, 'businesses')).toBe(upstream.businesses.length);
    expect(await count(world.warehouse, 'listings')).toBe(upstream.listings.size);
    expect(await count(world.warehouse, 'quarantine')).toBe(0);
    const run = await world.warehouse.db
      .selectFrom('sync_runs')
      .select(['status', 'error'])
      .where('run_id', '=', result.runId)
      .executeTakeFirstOrThrow();
    expect(run.status).toBe('partial');
    expect(run.error).toContain('wrong-token');
  });

  it('follows response requests with numeric and uuid ids to their end, and closes an unknown one as Invalid', async () => {
    // The accounts must be in the world.warehouse before their requests are.
    const synced = await firstSync();
    expect(synced.built.status).toBe('succeeded');
    const world = { ...(await ownWorld()), warehouse: await synced.copy() };
    const submitted: string[] = [];
    for (const credential of world.sandbox.credentials) {
      const { businessId, reviewId } = await answerableReview(world.api, credential);
      const { requestId } = await respondToReview(
        world.api,
        credential,
        businessId,
        reviewId,
        'Thanks!',
      );
      await recordResponseRequest(world.warehouse.db, {
        requestId,
        accountName: credential.name,
        businessId,
        reviewId,
        content: 'Thanks!',
        submittedAt: new Date(),
      });
      submitted.push(requestId);
    }
    // The world.sandbox issues numbers to its even accounts and uuids to its odd ones.
    expect(submitted[0]).toMatch(/^\d+$/);
    expect(submitted[1]).toMatch(UUID);
    const first = world.sandbox.credentials[0]!;
    const known = await answerableReview(world.api, first);
    const unknownId = '123';
    await recordResponseRequest(world.warehouse.db, {
      requestId: unknownId,
      accountName: first.name,
      businessId: known.businessId,
      reviewId: known.reviewId,
      content: 'Never submitted upstream',
      submittedAt: new Date(),
    });

    // Every request path ends within four world.sandbox days.
    world.sandbox.advanceDays(4);
    const result = await sync(world.warehouse, world.api, world.sandbox.credentials);

    // `Invalid Request ID` is permanent: the unknown request is closed, not a failure.
    expect(result.status).toBe('succeeded');
    expect(result.stats.responseRequests).toMatchObject({ checked: 2, invalid: 1, errors: 0 });
    const rows = await world.warehouse.db
      .selectFrom('review_response_requests')
      .select(['request_id', 'status', 'completed_at', 'last_error'])
      .execute();
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    for (const requestId of submitted) {
      const row = byId.get(requestId);
      expect(['Completed', 'Failed']).toContain(row?.status);
      expect(row?.completed_at).not.toBeNull();
      expect(row?.last_error).toBeNull();
    }
    const unknown = byId.get(unknownId);
    expect(unknown?.status).toBe('Invalid');
    expect(unknown?.completed_at).not.toBeNull();
    expect(unknown?.last_error).toContain('Invalid Request ID');
  });

  it('keeps every token and directory password out of every table', async () => {
    const { built, reader } = await withWrongToken();
    const { bad } = built;
    const world = { ...shared, warehouse: reader };
    const dump = await dumpAll(world.warehouse);
    expect(dump.length).toBeGreaterThan(1000);
    for (const credential of world.sandbox.credentials)
      expect(dump).not.toContain(credential.authToken);
    expect(dump).not.toContain(bad.authToken);
    const passwords = await directoryPasswords(world.sandbox);
    expect(passwords.length).toBeGreaterThan(0);
    for (const password of passwords) expect(dump).not.toContain(password);
  });
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A review of the credential's that operation 9 would accept now, and its business. */
async function answerableReview(
  api: ApiClient,
  credential: Credential,
): Promise<{ businessId: number; reviewId: string }> {
  for (const business of (await listBusinesses(api, credential)).records) {
    const logins = new Map(
      (await listListings(api, credential, business.id)).records.map((l) => [
        l.siteName,
        l.hasSiteCredentials,
      ]),
    );
    const review = (await listReviews(api, credential, business.id, 'review')).records.find(
      (r) => r.canRespond && logins.get(r.siteName) === true,
    );
    if (review) return { businessId: business.id, reviewId: review.id };
  }
  throw new Error(`no answerable review for ${credential.name}`);
}

/** The directory passwords the sandbox serves, read raw (the client drops them). */
async function directoryPasswords(sandbox: RunningSandbox): Promise<string[]> {
  const passwords = new Set<string>();
  for (const credential of sandbox.credentials) {
    const auth = `auth_token=${encodeURIComponent(credential.authToken)}&user_email=${encodeURIComponent(credential.userEmail)}`;
    const list = (await (
      await fetch(`${sandbox.baseUrl}/api/v2/businesses.json?${auth}`)
    ).json()) as {
      result: { id: number }[];
    };
    for (const business of list.result) {
      const listings = (await (
        await fetch(`${sandbox.baseUrl}/api/v2/businesses/${business.id}/listings.json?${auth}`)
      ).json()) as { result: { site_password?: string | null }[] };
      for (const listing of listings.result) {
        if (listing.site_password) passwords.add(listing.site_password);
      }
    }
  }
  return [...passwords];
}
