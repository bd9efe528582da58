/**
 * The sync's error handling when the upstream answers errors with HTTP 200, which the
 * contract allows (docs/upstream.md, Errors): each case runs with the sandbox's statuses
 * and with every error answered 200, on each backend. A wrong token still fails only its
 * credential; review response requests of both id forms (number and uuid) are followed
 * to their end, and an unknown one is closed as `Invalid` with the upstream's text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiClient,
  listBusinesses,
  listListings,
  listReviews,
  respondToReview,
} from '../../src/api/index.ts';
import type { Credential } from '../../src/api/types.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { recordResponseRequest } from '../../src/warehouse/review-response-requests.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { count, sync, testApiClient, type WorldShape, worldTruth } from './harness.ts';

/** The sandbox's world; the oracle rebuilds the same one, independent of the client. */
const WORLD: WorldShape = {
  seed: 29,
  accounts: 2,
  businessesPerAccount: 3,
  startDate: '2026-01-01',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const cases = testBackends.flatMap((backend) => [
  { backend, mode: 'statuses', errorsWith200: false },
  { backend, mode: 'every error with HTTP 200', errorsWith200: true },
]);

describe.each(cases)('sync ($backend) with $mode', ({ backend, errorsWith200 }) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeAll(async () => {
    sandbox = await startSandbox({
      ...WORLD,
      port: 0,
      faults: { errorsWith200 },
    });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('fails only the credential with a wrong token; the others land whole', async () => {
    const good = sandbox.credentials;
    const bad = { ...good[0]!, name: 'wrong-token', authToken: 'sbx_not_the_token_4242' };
    const result = await sync(warehouse, api, [...good, bad]);

    expect(result.status).toBe('partial');
    const outcome = result.stats.credentials.find((c) => c.name === 'wrong-token');
    expect(outcome?.status).toBe('failed');
    expect(outcome?.error).toContain('Authentication Failure');
    for (const credential of good) {
      expect(result.stats.credentials.find((c) => c.name === credential.name)?.status).toBe(
        'succeeded',
      );
    }
    const upstream = worldTruth(WORLD, 0);
    expect(await count(warehouse, 'businesses')).toBe(upstream.businesses.length);
    expect(await count(warehouse, 'listings')).toBe(upstream.listings.size);
    expect(await count(warehouse, 'quarantine')).toBe(0);
  });

  it('follows response requests with numeric and uuid ids to their end, and closes an unknown one as Invalid', async () => {
    // Accounts exist in the warehouse after the first test's run; make sure of it alone.
    await sync(warehouse, api, sandbox.credentials);
    const submitted: string[] = [];
    for (const credential of sandbox.credentials) {
      const { businessId, reviewId } = await answerableReview(api, credential);
      const { requestId } = await respondToReview(api, credential, businessId, reviewId, 'Thanks!');
      await recordResponseRequest(warehouse.db, {
        requestId,
        accountName: credential.name,
        businessId,
        reviewId,
        content: 'Thanks!',
        submittedAt: new Date(),
      });
      submitted.push(requestId);
    }
    expect(submitted[0]).toMatch(/^\d+$/);
    expect(submitted[1]).toMatch(UUID);
    const first = sandbox.credentials[0]!;
    const known = await answerableReview(api, first);
    const unknownId = '123';
    await recordResponseRequest(warehouse.db, {
      requestId: unknownId,
      accountName: first.name,
      businessId: known.businessId,
      reviewId: known.reviewId,
      content: 'Never submitted upstream',
      submittedAt: new Date(),
    });

    // Every request path ends within four sandbox days.
    sandbox.advanceDays(4);
    const result = await sync(warehouse, api, sandbox.credentials);

    // `Invalid Request ID` is permanent: the unknown request is closed, not a failure.
    expect(result.status).toBe('succeeded');
    expect(result.stats.responseRequests).toMatchObject({ checked: 2, invalid: 1, errors: 0 });
    const rows = await warehouse.db
      .selectFrom('review_response_requests')
      .select(['request_id', 'status', 'completed_at', 'last_error'])
      .orderBy('request_id')
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
});

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
