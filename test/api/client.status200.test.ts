/**
 * The contract promises no HTTP status for any error (docs/upstream.md, Errors): the
 * client must decide by the body alone. Every error the upstream can send, and the
 * review response round trip with both forms of request id, run twice: with the
 * sandbox's statuses (401/404/422) and with every error answered HTTP 200.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  type ApiErrorCode,
  addKeyword,
  createApiClient,
  createBusiness,
  deleteKeyword,
  getBusiness,
  getResponseStatus,
  listBusinesses,
  listCountries,
  listKeywords,
  listListings,
  listReviews,
  respondToReview,
  updateBusiness,
} from '../../src/api/index.ts';
import type { Credential, Review } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof ApiError)) {
    throw new Error(`expected an ApiError, got ${outcome === undefined ? 'success' : outcome}`);
  }
  return outcome;
}

interface Answerable extends Review {
  businessId: number;
  hasCredentials: boolean;
}

describe.each([
  { mode: 'statuses', errorsWith200: false },
  { mode: 'every error with HTTP 200', errorsWith200: true },
])('the client with $mode', ({ errorsWith200 }) => {
  let sandbox: RunningSandbox;
  let cred: Credential;
  let other: Credential;
  let api: ReturnType<typeof createApiClient>;
  let reviews: Answerable[];

  /** The status an error must have been served with in this mode. */
  const expectServed = (error: ApiError, status: number) =>
    expect(error.status).toBe(errorsWith200 ? 200 : status);

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 17,
      accounts: 2,
      businessesPerAccount: 4,
      port: 0,
      faults: { errorsWith200 },
    });
    [cred, other] = [sandbox.credentials[0]!, sandbox.credentials[1]!];
    api = createApiClient({
      retry: { baseDelayMs: 1, maxDelayMs: 10 },
      logger: silentLogger(),
    });
    reviews = [];
    for (const credential of [cred, other]) {
      for (const business of (await listBusinesses(api, credential)).records) {
        const logins = new Map(
          (await listListings(api, credential, business.id)).records.map((l) => [
            l.siteName,
            l.hasSiteCredentials,
          ]),
        );
        for (const review of (await listReviews(api, credential, business.id, 'review')).records) {
          reviews.push({
            ...review,
            businessId: business.id,
            hasCredentials: logins.get(review.siteName) === true,
          });
        }
      }
    }
  });
  beforeEach(() => sandbox.resetStats());
  afterAll(async () => {
    await api.close();
    await sandbox.close();
  });

  const ownedBy = (credential: Credential) => (r: Answerable) =>
    Math.floor(r.businessId / 10_000_000) === sandbox.credentials.indexOf(credential) + 1;

  it('reads AUTH_FAILURE from the body and does not retry it', async () => {
    const error = await failure(listCountries(api, { ...cred, authToken: 'sbx_wrong' }));
    expect(error.code).toBe('AUTH_FAILURE');
    expectServed(error, 401);
    expect(sandbox.stats().requests).toBe(1);
  });

  it('reads the not-found texts of each operation and does not retry them', async () => {
    const cases: Array<[Promise<unknown>, ApiErrorCode]> = [
      [getBusiness(api, cred, 42), 'BUSINESS_NOT_FOUND'],
      [listListings(api, cred, 42), 'BUSINESS_NOT_FOUND'],
      [updateBusiness(api, cred, 42, { name: 'Renamed' }), 'BUSINESS_NOT_FOUND'],
      [listKeywords(api, cred, 42), 'INVALID_LOCATION_ID'],
      [addKeyword(api, cred, 42, 'plumber'), 'INVALID_LOCATION_ID'],
      [deleteKeyword(api, cred, 1), 'INVALID_KEYWORD_ID'],
    ];
    for (const [call, code] of cases) {
      const error = await failure(call);
      expect(error.code).toBe(code);
      expectServed(error, 404);
    }
    expect(sandbox.stats().requests).toBe(cases.length);
  });

  it('reads VALIDATION_FAILED with its sentences split out', async () => {
    const error = await failure(
      createBusiness(api, cred, {
        name: 'A',
        street: '1 Main',
        city: 'Austin',
        state_id: 44,
        country_id: 1,
        postal_code: '78701',
        phone: 'call me',
        sub_category_id: 1,
        description: 'short',
      }),
    );
    expect(error.code).toBe('VALIDATION_FAILED');
    expectServed(error, 422);
    expect(error.messages).toEqual(
      expect.arrayContaining(['Name is too short (minimum is 2 characters).', 'Phone is invalid.']),
    );
  });

  it('reads every refusal of operation 9 from the body', async () => {
    const mine = reviews.filter(ownedBy(cred));
    const some = mine[0]!;
    const refusals: Array<[Promise<unknown>, ApiErrorCode]> = [
      [respondToReview(api, cred, some.businessId, crypto.randomUUID(), 'x'), 'REVIEW_ID_INVALID'],
      [respondToReview(api, cred, some.businessId, some.id, '  '), 'REVIEW_CONTENT_EMPTY'],
      [respondToReview(api, other, some.businessId, some.id, 'x'), 'REVIEW_NOT_YOURS'],
    ];
    const noLogin = mine.find((r) => !r.hasCredentials);
    if (noLogin) {
      refusals.push([
        respondToReview(api, cred, noLogin.businessId, noLogin.id, 'x'),
        'SITE_CREDENTIALS_NOT_SET',
      ]);
    }
    const unsupported = mine.find(
      (r) => r.hasCredentials && !['Facebook', 'Google', 'Yelp'].includes(r.siteName),
    );
    if (unsupported) {
      refusals.push([
        respondToReview(api, cred, unsupported.businessId, unsupported.id, 'x'),
        'RESPOND_NOT_SUPPORTED',
      ]);
    }
    const answered = mine.find(
      (r) =>
        r.hasCredentials &&
        ['Facebook', 'Google', 'Yelp'].includes(r.siteName) &&
        r.responses.length > 0,
    );
    if (answered) {
      refusals.push([
        respondToReview(api, cred, answered.businessId, answered.id, 'x'),
        'RESPONSE_ALREADY_EXISTS',
      ]);
    }
    // The sandbox's data has each kind (seed 17): every refusal above is really exercised.
    expect(refusals).toHaveLength(6);
    for (const [call, code] of refusals) {
      const error = await failure(call);
      expect(error.code).toBe(code);
      expect(error.status === 200).toBe(errorsWith200);
    }
  });

  it('follows a response with a numeric request id and one with a uuid', async () => {
    const submitted: string[] = [];
    for (const credential of [cred, other]) {
      const review = reviews.find((r) => ownedBy(credential)(r) && r.canRespond)!;
      const { requestId } = await respondToReview(
        api,
        credential,
        review.businessId,
        review.id,
        'Thank you for the visit!',
      );
      submitted.push(requestId);
      expect(
        await getResponseStatus(api, credential, review.businessId, review.id, requestId),
      ).toEqual({ status: 'Created' });
      const again = await failure(
        respondToReview(api, credential, review.businessId, review.id, 'Again'),
      );
      expect(again.code).toBe('RESPONSE_IN_PROGRESS');
      // Op 10 checks its business, then the request.
      const wrongBusiness = await failure(
        getResponseStatus(api, credential, 42, review.id, requestId),
      );
      expect(wrongBusiness.code).toBe('BUSINESS_NOT_FOUND');
      expectServed(wrongBusiness, 404);
    }
    expect(submitted[0]).toMatch(/^\d+$/);
    expect(submitted[1]).toMatch(UUID);
  });

  it('reads INVALID_REQUEST_ID for an unknown request of either form', async () => {
    const review = reviews.find(ownedBy(cred))!;
    for (const requestId of [987654, crypto.randomUUID()]) {
      const error = await failure(
        getResponseStatus(api, cred, review.businessId, review.id, requestId),
      );
      expect(error.code).toBe('INVALID_REQUEST_ID');
      expectServed(error, 404);
    }
  });
});
