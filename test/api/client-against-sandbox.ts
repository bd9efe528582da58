/**
 * The client against the sandbox over real HTTP: every operation, every error code the
 * upstream can send, every normalisation rule as served, retries and limits under each
 * fault kind (counted on the sandbox's own stats), and no secret in logs or errors.
 *
 * One suite, run in two files, one per mode (client.sandbox.statuses.test.ts and
 * client.sandbox.http200.test.ts): some of it waits for the client's own timeouts (hangs),
 * so the two halves wait side by side in two workers rather than one after the other. A
 * test about the client's pauses runs them, and the sandbox's rate limit, on a clock it
 * moves (test/helpers/manual-clock.ts) and asserts what was waited, never how long it took.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Credential, Review } from '../../src/api/index.ts';
import {
  ApiError,
  type ApiErrorCode,
  addKeyword,
  apiStats,
  archiveBusiness,
  type BusinessInput,
  type createApiClient,
  createBusiness,
  deleteKeyword,
  getBusiness,
  getBusinessFull,
  getRankings,
  getResponseStatus,
  isValidationCode,
  listBusinesses,
  listCountries,
  listKeywords,
  listListings,
  listReviews,
  listStates,
  listSubCategories,
  RESPONSE_REQUEST_STATUSES,
  respondToReview,
  updateBusiness,
} from '../../src/api/index.ts';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { manualClock, settleWith } from '../helpers/manual-clock.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { sandboxRequests } from '../helpers/sandbox-requests.ts';
import { clientPool, failure } from './harness.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A review of the credential's that operation 9 would accept now, and its business. */
async function answerableReview(
  api: ReturnType<typeof createApiClient>,
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
      (r) => r.canRespond && r.responses.length === 0 && logins.get(r.siteName) === true,
    );
    if (review) return { businessId: business.id, reviewId: review.id };
  }
  throw new Error(`no answerable review for ${credential.name}`);
}

/**
 * The contract promises no HTTP status (docs/upstream.md, Errors): every behaviour runs
 * with the sandbox's statuses and with every error of the contract answered HTTP 200
 * (`mode`).
 * Transport faults (5xx, 429, resets, hangs) are the same in both modes.
 */
export function clientAgainstSandbox(mode: 'statuses' | 'every error with HTTP 200'): void {
  const errorsWith200 = mode === 'every error with HTTP 200';
  const { client, closeAll } = clientPool();
  describe(`the client with ${mode}`, () => {
    let sb: RunningSandbox;
    let cred: Credential;
    let other: Credential;
    let businessIds: number[];

    /** The status an error of the contract is served with in this mode (the body decides). */
    const served = (status: number) => (errorsWith200 ? 200 : status);

    /** The raw upstream body, bypassing the client, to compare with what the client made of it. */
    async function raw(path: string, c: Credential = cred, extra = ''): Promise<unknown> {
      const query = `auth_token=${c.authToken}&user_email=${encodeURIComponent(c.userEmail)}${extra}`;
      const response = await fetch(`${c.baseUrl}/api/v2${path}?${query}`);
      return response.json();
    }

    /** The shared sandbox's requests, as events. */
    const requests = sandboxRequests();

    beforeAll(async () => {
      sb = await startSandbox({
        seed: 11,
        accounts: 2,
        businessesPerAccount: 6,
        port: 0,
        faults: { errorsWith200 },
        logger: requests.logger,
      });
      cred = sb.credentials[0]!;
      other = sb.credentials[1]!;
      const api = client();
      businessIds = (await listBusinesses(api, cred)).records.map((b) => b.id);
    });

    afterEach(() => {
      sb.setFaults({ ...DEFAULT_FAULTS, errorsWith200 });
      sb.resetStats();
    });

    afterAll(async () => {
      await closeAll();
      await sb.close();
    });

    describe('operations', () => {
      it('lists, reads basic and full businesses', async () => {
        const api = client();
        const list = await listBusinesses(api, cred);
        expect(list.rejected).toEqual([]);
        expect(list.records).toHaveLength(6);
        const id = list.records[0]!.id;
        const basic = await getBusiness(api, cred, id);
        expect(basic).toMatchObject({ id, name: list.records[0]!.name });
        expect(typeof basic.hideAddress).toBe('boolean');
        for (const businessId of businessIds) {
          const full = await getBusinessFull(api, cred, businessId);
          expect(typeof full.latitude).toBe('number');
          expect(typeof full.longitude).toBe('number');
          expect(full.businessHours.length).toBeGreaterThan(0);
        }
      });

      it('serves coordinates as strings, and the client makes numbers of them', async () => {
        const api = client();
        const id = businessIds[0]!;
        const body = (await raw(`/businesses/${id}.json`, cred, '&type=all')) as {
          result: { latitude: string | number };
        };
        const full = await getBusinessFull(api, cred, id);
        expect(full.latitude).toBe(Number(body.result.latitude));
      });

      it('creates, updates and archives a business', async () => {
        const api = client();
        const [countries, subCategories] = await Promise.all([
          listCountries(api, cred),
          listSubCategories(api, cred),
        ]);
        const country = countries.records.find((c) => /united states/i.test(c.name))!;
        const states = await listStates(api, cred, country.id);
        expect(states.records.length).toBeGreaterThan(0);
        expect(states.records.every((s) => s.countryId === country.id)).toBe(true);
        const texas = states.records.find((s) => s.iso === 'TX') ?? states.records[0]!;
        let created: Awaited<ReturnType<typeof createBusiness>> | undefined;
        // Only a primary sub category is allowed and the flag is not served: try a few.
        for (const sub of subCategories.records) {
          const input: BusinessInput = {
            name: 'Sandbox Test Plumbing',
            street: '100 Congress Ave',
            city: 'Austin',
            state_id: texas.id,
            country_id: country.id,
            postal_code: '78701',
            phone: '512-555-0199',
            sub_category_id: sub.id,
            description: 'A family business fixing pipes. '.repeat(8),
          };
          try {
            created = await createBusiness(api, cred, input);
            break;
          } catch (error) {
            if (!(error instanceof ApiError) || !isValidationCode(error.code)) throw error;
          }
        }
        expect(created).toMatchObject({ name: 'Sandbox Test Plumbing', city: 'Austin' });
        const id = created!.id;
        const updated = await updateBusiness(api, cred, id, { name: 'Sandbox Test Pipes' });
        expect(updated).toMatchObject({ id, name: 'Sandbox Test Pipes' });
        await expect(archiveBusiness(api, cred, id)).resolves.toBeUndefined();
      });

      it('lists listings without ever keeping directory logins', async () => {
        const api = client();
        const id = businessIds[0]!;
        const listings = await listListings(api, cred, id);
        expect(listings.rejected).toEqual([]);
        expect(listings.records.length).toBeGreaterThan(0);
        const rawBody = (await raw(`/businesses/${id}/listings.json`)) as {
          result: Array<Record<string, unknown>>;
        };
        const passwords = rawBody.result
          .map((l) => l['site_password'])
          .filter((p): p is string => typeof p === 'string');
        expect(passwords.length).toBeGreaterThan(0);
        const text = JSON.stringify(listings);
        for (const password of passwords) expect(text).not.toContain(password);
        for (const listing of listings.records) {
          const source = rawBody.result.find((l) => l['id'] === listing.id)!;
          expect(listing.hasSiteCredentials).toBe(
            typeof source['site_password'] === 'string' ||
              typeof source['site_username'] === 'string',
          );
        }
      });

      it('parses short-form listings with the rest null, numeric live links as strings', async () => {
        const api = client();
        const all = (
          await Promise.all(businessIds.map((id) => listListings(api, cred, id)))
        ).flatMap((r) => r.records);
        const notPresent = all.filter((l) => l.status === 'Not Present');
        expect(notPresent.length).toBeGreaterThan(0);
        expect(notPresent[0]).toMatchObject({ name: null, phone: null, liveLink: null });
        expect(all.every((l) => l.liveLink === null || typeof l.liveLink === 'string')).toBe(true);
        expect(all.some((l) => l.liveLink !== null && /^\d+$/.test(l.liveLink))).toBe(true);
      });

      it('lists reviews and social items with site, category and both date precisions', async () => {
        const api = client();
        const reviews: Review[] = [];
        for (const id of businessIds) {
          for (const category of ['review', 'social'] as const) {
            const result = await listReviews(api, cred, id, category);
            expect(result.rejected).toEqual([]);
            expect(result.records.every((r) => r.category === category)).toBe(true);
            reviews.push(...result.records);
          }
        }
        expect(reviews.length).toBeGreaterThan(0);
        expect(reviews.every((r) => r.siteName.length > 0)).toBe(true);
        expect(reviews.some((r) => r.reviewedAtPrecision === 'day')).toBe(true);
        expect(reviews.some((r) => r.reviewedAtPrecision === 'instant')).toBe(true);
        const dayOnly = reviews.find((r) => r.reviewedAtPrecision === 'day')!;
        expect(dayOnly.reviewedAt!.toISOString()).toMatch(/T00:00:00\.000Z$/);
        expect(reviews.some((r) => r.type === 'LikesCount' && r.likesCount !== null)).toBe(true);
      });

      it('reads rankings with - as null and Google_new split in two', async () => {
        const api = client();
        const all = (
          await Promise.all(businessIds.map((id) => getRankings(api, cred, id)))
        ).flatMap((r) => r.records);
        expect(all.length).toBeGreaterThan(0);
        expect(all.some((r) => r.rank === null)).toBe(true);
        expect(all.some((r) => r.site === 'Google_new.local' && typeof r.rank === 'number')).toBe(
          true,
        );
        expect(all.some((r) => r.site === 'Google_new.organic')).toBe(true);
        expect(all.some((r) => r.site === 'Google_new')).toBe(false);
      });

      it('lists, adds and deletes keywords', async () => {
        const api = client();
        const id = businessIds[1]!;
        const before = await listKeywords(api, cred, id);
        expect(before.rejected).toEqual([]);
        const added = await addKeyword(api, cred, id, 'emergency plumber');
        expect(added).toMatchObject({
          keyword: 'emergency plumber',
          businessId: id,
          archived: false,
        });
        const after = await listKeywords(api, cred, id);
        expect(after.records.map((k) => k.id)).toContain(added.id);
        const deleted = await deleteKeyword(api, cred, added.id);
        expect(deleted.message).toContain(String(added.id));
        const finally_ = await listKeywords(api, cred, id);
        expect(finally_.records.map((k) => k.id)).not.toContain(added.id);
      });
    });

    describe('errors by message text', () => {
      it('AUTH_FAILURE for a wrong token, with no retry', async () => {
        const api = client();
        const error = await failure(listBusinesses(api, { ...cred, authToken: 'sbx_wrong' }));
        expect(error.code).toBe('AUTH_FAILURE');
        expect(error.status).toBe(served(401));
        expect(error.retryable).toBe(false);
        expect(error.message).toBe(
          `list_businesses on credential "${cred.name}" failed: Authentication Failure`,
        );
        expect(sb.stats().requests).toBe(1);
      });

      it('BUSINESS_NOT_FOUND, INVALID_LOCATION_ID, INVALID_KEYWORD_ID', async () => {
        const api = client();
        const notFound = await failure(listListings(api, cred, 42));
        expect(notFound.code).toBe('BUSINESS_NOT_FOUND');
        expect(notFound.status).toBe(served(404));
        expect(notFound.message).toBe(
          `list_listings for business 42 on credential "${cred.name}" failed: This business doesn't exist`,
        );
        // Another account's business is not this credential's.
        const theirs = (await listBusinesses(api, other)).records[0]!.id;
        sb.resetStats();
        const cases: Array<[Promise<unknown>, ApiErrorCode]> = [
          [getBusinessFull(api, cred, 42), 'BUSINESS_NOT_FOUND'],
          [getRankings(api, cred, 42), 'BUSINESS_NOT_FOUND'],
          [getBusiness(api, cred, theirs), 'BUSINESS_NOT_FOUND'],
          [updateBusiness(api, cred, 42, { name: 'Renamed' }), 'BUSINESS_NOT_FOUND'],
          [listKeywords(api, cred, 42), 'INVALID_LOCATION_ID'],
          [addKeyword(api, cred, 42, 'x'), 'INVALID_LOCATION_ID'],
          [deleteKeyword(api, cred, 1), 'INVALID_KEYWORD_ID'],
        ];
        for (const [call, code] of cases) {
          const error = await failure(call);
          expect(error.code).toBe(code);
          expect(error.status).toBe(served(404));
          expect(error.retryable).toBe(false);
        }
        // None of them is retried: one request each.
        expect(sb.stats().requests).toBe(cases.length);
      });

      it('VALIDATION_FAILED with the individual messages split out', async () => {
        const api = client();
        const error = await failure(
          createBusiness(api, cred, {
            name: 'A',
            street: '1 Main',
            city: 'Austin',
            state_id: 1,
            country_id: 1,
            postal_code: '78701',
            phone: 'call me',
            sub_category_id: 1,
            description: 'short',
          }),
        );
        expect(error.code).toBe('VALIDATION_FAILED');
        expect(error.status).toBe(served(422));
        expect(error.upstreamMessage).toMatch(/^The business was not created\./);
        expect(error.messages).toEqual(
          expect.arrayContaining([
            'Name is too short (minimum is 2 characters).',
            'Phone is invalid.',
          ]),
        );
        expect(error.messages!.every((m) => !m.startsWith('The business'))).toBe(true);
      });

      it('serves an error with the status of the mode and a body of success false and its message', async () => {
        const api = client();
        const response = await fetch(
          `${cred.baseUrl}/api/v2/businesses/42.json?auth_token=${cred.authToken}&user_email=${encodeURIComponent(cred.userEmail)}`,
        );
        expect(response.status).toBe(served(404));
        expect(await response.json()).toEqual({
          success: false,
          message: "This business doesn't exist",
        });
        // The client reads it from the body alone, whatever the status.
        const error = await failure(getBusiness(api, cred, 42));
        expect(error.code).toBe('BUSINESS_NOT_FOUND');
        expect(error.status).toBe(served(404));
        expect(error.retryable).toBe(false);
      });

      it('keeps an unknown message under UPSTREAM_ERROR', async () => {
        const api = client();
        const error = await failure(addKeyword(api, cred, businessIds[0]!, '   '));
        expect(error.code).toBe('UPSTREAM_ERROR');
        expect(error.status).toBe(served(422));
        expect(error.upstreamMessage).toBe("Keyword can't be blank");
      });

      it('INVALID_REQUEST_ID for an unknown response request of either id form', async () => {
        const api = client();
        const review = (await listReviews(api, cred, businessIds[0]!, 'review')).records[0]!;
        for (const reviewId of [review.id, crypto.randomUUID()]) {
          for (const requestId of [987654, crypto.randomUUID()]) {
            const error = await failure(
              getResponseStatus(api, cred, businessIds[0]!, reviewId, requestId),
            );
            expect(error.code).toBe('INVALID_REQUEST_ID');
            expect(error.status).toBe(served(404));
          }
        }
      });
    });

    describe('review responses', () => {
      // A sandbox of its own per test: these tests submit responses and move its clock.
      let rsb: RunningSandbox;
      let rcred: Credential;
      let reviews: Review[];
      let credentialsBySite: Map<string, boolean>[];
      let ids: number[];

      beforeEach(async () => {
        rsb = await startSandbox({
          seed: 23,
          accounts: 2,
          businessesPerAccount: 8,
          port: 0,
          faults: { errorsWith200 },
        });
        rcred = rsb.credentials[0]!;
        const api = client();
        ids = (await listBusinesses(api, rcred)).records.map((b) => b.id);
        reviews = [];
        credentialsBySite = [];
        for (const id of ids) {
          reviews.push(
            ...(await listReviews(api, rcred, id, 'review')).records.map((r) => ({
              ...r,
              businessId: id,
            })),
          );
          const listings = (await listListings(api, rcred, id)).records;
          credentialsBySite.push(new Map(listings.map((l) => [l.siteName, l.hasSiteCredentials])));
        }
      });

      afterEach(async () => {
        await rsb.close();
      });

      const businessOf = (review: Review) => (review as Review & { businessId: number }).businessId;
      const hasCreds = (review: Review) =>
        credentialsBySite[ids.indexOf(businessOf(review))]?.get(review.siteName) === true;
      const respond = (api: ReturnType<typeof client>, review: Review, content = 'Thank you!') =>
        respondToReview(api, rcred, businessOf(review), review.id, content);

      async function codesFor(
        reviewsToTry: Review[],
        content?: string,
      ): Promise<Set<ApiErrorCode | 'ok'>> {
        const api = client();
        const codes = new Set<ApiErrorCode | 'ok'>();
        for (const review of reviewsToTry) {
          try {
            await respond(api, review, content);
            codes.add('ok');
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
            expect(error.status === 200).toBe(errorsWith200);
            codes.add(error.code);
          }
        }
        return codes;
      }

      it('submits a response, reads its status, and refuses a second one in progress', async () => {
        const api = client();
        const candidates = reviews.filter(
          (r) => r.canRespond && r.responses.length === 0 && hasCreds(r),
        );
        let submitted: { review: Review; requestId: string } | undefined;
        for (const review of candidates) {
          try {
            const result = await respond(api, review);
            submitted = { review, requestId: result.requestId };
            break;
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
          }
        }
        expect(submitted).toBeDefined();
        expect(typeof submitted!.requestId).toBe('string');
        expect(submitted!.requestId).toMatch(/^\d+$/);
        const status = await getResponseStatus(
          api,
          rcred,
          businessOf(submitted!.review),
          submitted!.review.id,
          submitted!.requestId,
        );
        expect(status.status).toBe('Created');
        const again = await failure(respond(api, submitted!.review));
        expect(again.code).toBe('RESPONSE_IN_PROGRESS');
        expect(again.status).toBe(served(422));
        expect(again.message).toContain(`respond_to_review for review ${submitted!.review.id}`);
        expect(apiStats(api).byOperation['respond_to_review']).toMatchObject({
          ok: 1,
          RESPONSE_IN_PROGRESS: 1,
        });
      });

      it('follows a response with a numeric request id and one with a uuid', async () => {
        // The sandbox issues numbers to its even accounts and uuids to its odd ones.
        const api = client();
        const submitted: string[] = [];
        for (const credential of rsb.credentials) {
          const { businessId, reviewId } = await answerableReview(api, credential);
          const { requestId } = await respondToReview(
            api,
            credential,
            businessId,
            reviewId,
            'Thank you for the visit!',
          );
          submitted.push(requestId);
          expect(await getResponseStatus(api, credential, businessId, reviewId, requestId)).toEqual(
            {
              status: 'Created',
            },
          );
          const again = await failure(
            respondToReview(api, credential, businessId, reviewId, 'Again'),
          );
          expect(again.code).toBe('RESPONSE_IN_PROGRESS');
          // Op 10 checks its business, then the request.
          const wrongBusiness = await failure(
            getResponseStatus(api, credential, 42, reviewId, requestId),
          );
          expect(wrongBusiness.code).toBe('BUSINESS_NOT_FOUND');
          expect(wrongBusiness.status).toBe(served(404));
        }
        expect(submitted[0]).toMatch(/^\d+$/);
        expect(submitted[1]).toMatch(UUID);
      });

      it('REVIEW_ID_INVALID, REVIEW_CONTENT_EMPTY, REVIEW_NOT_YOURS', async () => {
        const api = client();
        const some = reviews[0]!;
        const invalid = await failure(
          respondToReview(api, rcred, businessOf(some), crypto.randomUUID(), 'Hi'),
        );
        expect(invalid.code).toBe('REVIEW_ID_INVALID');
        expect(invalid.status === 200).toBe(errorsWith200);
        const empty = await failure(respond(api, some, '  '));
        expect(empty.code).toBe('REVIEW_CONTENT_EMPTY');
        expect(empty.status === 200).toBe(errorsWith200);
        const stranger = rsb.credentials[1]!;
        const notYours = await failure(
          respondToReview(api, stranger, businessOf(some), some.id, 'Hello'),
        );
        expect(notYours.code).toBe('REVIEW_NOT_YOURS');
        expect(notYours.status === 200).toBe(errorsWith200);
      });

      it('SITE_CREDENTIALS_NOT_SET and RESPOND_NOT_SUPPORTED', async () => {
        const noCreds = reviews.filter((r) => !hasCreds(r));
        const unsupported = reviews.filter(
          (r) => hasCreds(r) && !['Facebook', 'Google', 'Yelp'].includes(r.siteName),
        );
        expect(noCreds.length).toBeGreaterThan(0);
        expect(unsupported.length).toBeGreaterThan(0);
        expect(await codesFor(noCreds.slice(0, 3))).toEqual(new Set(['SITE_CREDENTIALS_NOT_SET']));
        expect(await codesFor(unsupported.slice(0, 3))).toEqual(new Set(['RESPOND_NOT_SUPPORTED']));
      });

      it('RESPONSE_ALREADY_EXISTS for a review that has a response', async () => {
        // can_respond is false on an answered review (it agrees with op 9): pick by site.
        const answered = reviews.filter(
          (r) =>
            ['Facebook', 'Google', 'Yelp'].includes(r.siteName) &&
            r.responses.length > 0 &&
            hasCreds(r),
        );
        expect(answered.length).toBeGreaterThan(0);
        expect(await codesFor(answered)).toContain('RESPONSE_ALREADY_EXISTS');
      });

      it('RESPONSE_ALREADY_SUBMITTED and RESPONSE_PREVIOUSLY_FAILED once requests end', async () => {
        const api = client();
        const fresh = reviews.filter(
          (r) => r.canRespond && r.responses.length === 0 && hasCreds(r),
        );
        const submitted: Array<{ review: Review; requestId: string }> = [];
        for (const review of fresh) {
          try {
            submitted.push({ review, requestId: (await respond(api, review)).requestId });
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
          }
        }
        expect(submitted.length).toBeGreaterThan(3);
        rsb.advanceDays(1);
        const next = await getResponseStatus(
          api,
          rcred,
          businessOf(submitted[0]!.review),
          submitted[0]!.review.id,
          submitted[0]!.requestId,
        );
        expect(next.status).toBe('In Progress');
        rsb.advanceDays(5);
        const finals = new Set<string>();
        const codes = new Set<string>();
        for (const { review, requestId } of submitted) {
          const { status } = await getResponseStatus(
            api,
            rcred,
            businessOf(review),
            review.id,
            requestId,
          );
          expect(RESPONSE_REQUEST_STATUSES).toContain(status);
          finals.add(status);
          codes.add((await failure(respond(api, review))).code);
        }
        expect([...finals].every((s) => s === 'Completed' || s === 'Failed')).toBe(true);
        expect(codes).toContain('RESPONSE_ALREADY_SUBMITTED');
        expect(finals.has('Failed')).toBe(true);
        expect(codes).toContain('RESPONSE_PREVIOUSLY_FAILED');
      });
    });

    describe('retries and faults', () => {
      it.each(['503', '502', '500', '429', 'reset', 'hang'] as const)(
        'a scripted %s then success: 2 requests upstream, 1 retry',
        async (kind) => {
          sb.setFaults({ script: [{ kind, operation: 'list_listings', retryAfterSeconds: 0 }] });
          const api = client({ timeouts: { headersMs: 300 } });
          const result = await listListings(api, cred, businessIds[0]!);
          expect(result.records.length).toBeGreaterThan(0);
          const upstream = sb.stats().byOperation['list_listings'];
          expect(upstream).toEqual({ [kind]: 1, ok: 1 });
          expect(apiStats(api)).toMatchObject({ requests: 2, retries: 1 });
          expect(apiStats(api).byOperation['list_listings']).toEqual({ ok: 1 });
        },
      );

      it.each([
        ['503', 'UPSTREAM_UNAVAILABLE', 503],
        ['500', 'UPSTREAM_UNAVAILABLE', 500],
        ['429', 'RATE_LIMITED', 429],
        ['reset', 'UPSTREAM_UNAVAILABLE', undefined],
        ['hang', 'TIMEOUT', undefined],
      ] as const)(
        '%s on every attempt ends as %s after maxAttempts',
        async (kind, code, status) => {
          const script = Array.from({ length: 3 }, () => ({ kind, retryAfterSeconds: 0 }));
          sb.setFaults({ script });
          const api = client({ retry: { maxAttempts: 3 }, timeouts: { headersMs: 200 } });
          const error = await failure(getRankings(api, cred, businessIds[0]!));
          expect(error.code).toBe(code);
          expect(error.status).toBe(status);
          expect(error.retryable).toBe(true);
          // Counted per operation: a request another test left hanging on this sandbox (its
          // client gave up, the connection stays open) must not count here.
          expect(sb.stats().byOperation['get_rankings']).toEqual({ [kind]: 3 });
          expect(apiStats(api)).toMatchObject({ requests: 3, retries: 2 });
          expect(apiStats(api).byOperation['get_rankings']).toEqual({ [code]: 1 });
        },
      );

      it('a hang ends as TIMEOUT within the short timeout', async () => {
        sb.setFaults({ hangRate: 1 });
        const api = client({ retry: { maxAttempts: 1 }, timeouts: { headersMs: 150 } });
        const error = await failure(listCountries(api, cred));
        expect(error.code).toBe('TIMEOUT');
        expect(error.message).toMatch(/no response headers within 150 ms/);
        expect(apiStats(api)).toMatchObject({ requests: 1, retries: 0 });
      });

      it('a non-JSON body is BAD_PAYLOAD with a short snippet, not retried', async () => {
        sb.setFaults({ script: [{ kind: 'non-json' }] });
        const api = client();
        const error = await failure(listBusinesses(api, cred));
        expect(error.code).toBe('BAD_PAYLOAD');
        expect(error.status).toBe(200);
        expect(error.message).toContain('Down for maintenance');
        const snippet = /not JSON: "(.*)"$/.exec(error.message)?.[1] ?? '';
        expect(snippet.length).toBeGreaterThan(0);
        expect(snippet.length).toBeLessThanOrEqual(200);
        expect(sb.stats().requests).toBe(1);
      });

      it('connection refused ends as UPSTREAM_UNAVAILABLE after retries', async () => {
        const api = client({ retry: { maxAttempts: 2 } });
        const closed = { ...cred, baseUrl: 'http://127.0.0.1:9' };
        const error = await failure(listCountries(api, closed));
        expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
        expect(error.message).toContain('ECONNREFUSED');
        expect(apiStats(api)).toMatchObject({ requests: 2, retries: 1 });
      });

      it('gives up with PAUSE_TOO_LONG when Retry-After exceeds the maximum', async () => {
        sb.setFaults({ script: [{ kind: '429', retryAfterSeconds: 3600 }] });
        const clock = manualClock();
        const api = client({ retry: { maxRetryAfterMs: 2000 }, clock });
        const error = await failure(listBusinesses(api, cred));
        expect(error.code).toBe('PAUSE_TOO_LONG');
        expect(error.status).toBe(429);
        expect(error.message).toMatch(
          /on credential ".+" failed: .*asked this credential to pause for 3600 s \(Retry-After\), longer than the 2 s a run waits/,
        );
        // It gave up at once: no wait of any length was started.
        expect(clock.sleeps).toEqual([]);
        expect(sb.stats().requests).toBe(1);
        // The credential stays paused: further calls fail fast without being sent.
        const next = await failure(listCountries(api, cred));
        expect(next.code).toBe('PAUSE_TOO_LONG');
        expect(next.message).toMatch(/paused this credential \(Retry-After\) for another \d+ s/);
        expect(clock.sleeps).toEqual([]);
        expect(sb.stats().requests).toBe(1);
      });

      it('a 429 storm slows the client down instead of failing it', async () => {
        // The sandbox's rate limit and the client's pauses on one clock the test moves: the
        // storm takes what it takes of that clock, none of the wall clock's.
        const clock = manualClock();
        const own = await startSandbox({
          seed: 11,
          accounts: 1,
          businessesPerAccount: 6,
          port: 0,
          faults: { errorsWith200, rateLimitPerSecond: 5, retryAfterSeconds: 1 },
          clock,
        });
        try {
          const mine = own.credentials[0]!;
          const ids = (await listBusinesses(client(), mine)).records.map((b) => b.id);
          own.resetStats();
          const started = clock.now();
          const api = client({ retry: { baseDelayMs: 50, maxDelayMs: 1000 }, clock });
          const calls = Array.from({ length: 24 }, (_, i) =>
            getBusiness(api, mine, ids[i % ids.length]!),
          );
          const results = await settleWith(clock, Promise.all(calls));
          expect(results).toHaveLength(24);
          const limited = own.stats().byOperation['get_business']?.['429'] ?? 0;
          expect(limited).toBeGreaterThan(0);
          // Each 429's Retry-After of 1 s was waited out on the clock, and the 24 calls at 5
          // a second (a burst of 5 allowed) took at least 19 / 5 s of it.
          expect(clock.sleeps.filter((ms) => ms === 1000).length).toBeGreaterThan(0);
          expect(clock.now() - started).toBeGreaterThanOrEqual(3800);
          expect(apiStats(api).byOperation['get_business']).toEqual({ ok: 24 });
          expect(apiStats(api).retries).toBe(limited);
        } finally {
          await own.close();
        }
      });

      it('never retries writes: a scripted 503 on add_keyword is one request and an error', async () => {
        sb.setFaults({ script: [{ kind: '503', operation: 'add_keyword' }] });
        const api = client();
        const error = await failure(addKeyword(api, cred, businessIds[0]!, 'water heater'));
        expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
        expect(error.status).toBe(503);
        expect(sb.stats().byOperation['add_keyword']).toEqual({ '503': 1 });
        expect(apiStats(api)).toMatchObject({ requests: 1, retries: 0 });
      });

      it('never retries a write on a reset either', async () => {
        sb.setFaults({ script: [{ kind: 'reset', operation: 'update_business' }] });
        const api = client();
        const error = await failure(
          updateBusiness(api, cred, businessIds[0]!, { name: 'Renamed' }),
        );
        expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
        expect(sb.stats().requests).toBe(1);
      });

      it('aborts a hung call on the caller signal', async () => {
        sb.setFaults({ hangRate: 1 });
        const api = client();
        const controller = new AbortController();
        const hung = requests.count({ operation: 'list_businesses', outcome: 'hang' });
        const call = listBusinesses(api, cred, { signal: controller.signal });
        // Aborted once the sandbox holds the request, whatever the machine's speed.
        await requests.when({ operation: 'list_businesses', outcome: 'hang' }, hung + 1);
        controller.abort(new Error('run interrupted'));
        await expect(call).rejects.toThrow('run interrupted');
        expect(apiStats(api).byOperation['list_businesses']).toEqual({ aborted: 1 });
      });
    });

    describe('record-level validation against injected malformed records', () => {
      it('returns exactly the fault-free records, each malformed one rejected and scrubbed', async () => {
        const api = client();
        const id = businessIds[2]!;
        const clean = {
          businesses: await listBusinesses(api, cred),
          listings: await listListings(api, cred, id),
          reviews: await listReviews(api, cred, id, 'review'),
          keywords: await listKeywords(api, cred, id),
          countries: await listCountries(api, cred),
        };
        sb.setFaults({ malformedRate: 0.3 });
        sb.resetStats();
        const dirty = {
          businesses: await listBusinesses(api, cred),
          listings: await listListings(api, cred, id),
          reviews: await listReviews(api, cred, id, 'review'),
          keywords: await listKeywords(api, cred, id),
          countries: await listCountries(api, cred),
        };
        let rejected = 0;
        for (const key of Object.keys(clean) as Array<keyof typeof clean>) {
          expect(dirty[key].records).toEqual(clean[key].records);
          rejected += dirty[key].rejected.length;
        }
        expect(rejected).toBeGreaterThan(0);
        expect(rejected).toBe(sb.stats().malformedRecordsServed);
        expect(dirty.reviews.rejected.every((r) => /^[A-Za-z ]+\[\d+\]$/.test(r.location))).toBe(
          true,
        );
        expect(dirty.listings.rejected.every((r) => /^\[\d+\]$/.test(r.location))).toBe(true);
        for (const r of dirty.listings.rejected) {
          expect(r.reason.length).toBeGreaterThan(0);
          expect(JSON.stringify(r.payload)).not.toMatch(/pw-[0-9a-f]{12}/);
        }
      });
    });

    describe('secrets', () => {
      it('never logs or throws the token, the email or a directory password', async () => {
        const { logger, lines } = memoryLogger('debug');
        const api = client({ logger, retry: { maxAttempts: 2 }, timeouts: { headersMs: 150 } });
        const errors: ApiError[] = [];
        const collect = (p: Promise<unknown>) =>
          p.catch((error: unknown) => {
            if (error instanceof ApiError) errors.push(error);
            else throw error;
          });
        const id = businessIds[0]!;
        const wrongToken = 'sbx_this_token_is_wrong_0123456789';
        sb.setFaults({ script: [{ kind: '503' }, { kind: 'reset' }, { kind: 'non-json' }] });
        await collect(listListings(api, cred, id));
        await collect(listListings(api, cred, id));
        sb.setFaults({ malformedRate: 0.5, script: [{ kind: 'hang' }, { kind: 'hang' }] });
        await collect(listListings(api, cred, id));
        await collect(listListings(api, cred, id));
        await collect(listBusinesses(api, { ...cred, authToken: wrongToken }));
        await collect(getBusiness(api, cred, 42));
        await collect(createBusiness(api, cred, { name: 'x' } as BusinessInput));
        const listingsBody = (await raw(`/businesses/${id}/listings.json`)) as {
          result: Array<Record<string, unknown>>;
        };
        const passwords = listingsBody.result
          .map((l) => l['site_password'])
          .filter((p): p is string => typeof p === 'string' && p.length > 0);
        expect(passwords.length).toBeGreaterThan(0);
        expect(errors.length).toBeGreaterThanOrEqual(4);
        const texts = [
          ...lines(),
          ...errors.map((e) => e.message),
          ...errors.map((e) => JSON.stringify({ ...e, cause: String(e.cause) })),
        ];
        expect(lines().length).toBeGreaterThan(5);
        for (const text of texts) {
          expect(text).not.toContain(cred.authToken);
          expect(text).not.toContain(wrongToken);
          expect(text).not.toContain(cred.userEmail);
          for (const password of passwords) expect(text).not.toContain(password);
        }
      });
    });
  });
}
