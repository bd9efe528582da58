/**
 * Answers that stall, swell or contradict themselves (docs/configuration.md, "Limits";
 * docs/upstream.md, "Quirks"), against the sandbox over real HTTP in both status modes:
 * a dripped body ends at the total request time, an answer over a bound is refused before
 * validation, duplicate ids collapse or are refused, an empty answer is an answer, and a
 * Retry-After longer than a run waits fails at once with PAUSE_TOO_LONG. The sandbox's time
 * is a clock the test moves (test/helpers/manual-clock.ts): a dripped body it never moves
 * for stays at its headers, so only the client's own limit can end the call.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type ApiClientOptions,
  answerSettings,
  createConfiguredApiClient,
} from '../../src/api/client.ts';
import type { Credential } from '../../src/api/index.ts';
import {
  apiStats,
  createApiClient,
  getRankings,
  listBusinesses,
  listKeywords,
  listListings,
  listReviews,
} from '../../src/api/index.ts';
import { rankingEntrySchema } from '../../src/api/rankings.ts';
import { reviewSchema } from '../../src/api/reviews.ts';
import { loadConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { manualClock, settleWith } from '../helpers/manual-clock.ts';
import { clientPool, failure } from './harness.ts';

const { client, closeAll } = clientPool();

describe.each([
  { mode: 'statuses', errorsWith200: false },
  { mode: 'every error with HTTP 200', errorsWith200: true },
])('answers that stall, swell or contradict themselves, with $mode', ({ errorsWith200 }) => {
  let sb: RunningSandbox;
  let cred: Credential;
  let businessIds: number[];
  /** A business with reviews on at least one site. */
  let reviewed: number;
  /** The sandbox's: a dripped body comes only as far as the test moves it. */
  const sandboxClock = manualClock();

  beforeAll(async () => {
    sb = await startSandbox({
      seed: 21,
      accounts: 1,
      businessesPerAccount: 4,
      port: 0,
      faults: { errorsWith200 },
      clock: sandboxClock,
    });
    cred = sb.credentials[0]!;
    const api = client();
    businessIds = (await listBusinesses(api, cred)).records.map((b) => b.id);
    let found: number | undefined;
    for (const id of businessIds) {
      if ((await listReviews(api, cred, id, 'review')).records.length > 0) {
        found = id;
        break;
      }
    }
    if (found === undefined) throw new Error('no business with reviews in the sandbox');
    reviewed = found;
    sb.resetStats();
  });

  afterEach(() => {
    sb.setFaults({ ...DEFAULT_FAULTS, errorsWith200 });
    sb.resetStats();
    vi.restoreAllMocks();
  });

  afterAll(async () => {
    await closeAll();
    await sb.close();
  });

  describe('a dripped body', () => {
    it('fails at the total request time, naming the setting, not retried, while the other calls finish', async () => {
      // 4000 bytes at a byte every 20 ms of a sandbox clock that never moves: the headers
      // come, the body never does. The total limit (real time, the client's own) ends the
      // call; loose enough for the undripped call beside it on a loaded machine.
      sb.setFaults({
        script: [{ kind: 'drip', operation: 'list_listings', dripBytes: 4000, dripIntervalMs: 20 }],
      });
      const mark = sandboxClock.sleeps.length;
      const api = client({ requestTimeoutMs: 2000 });
      const [dripped, other] = await Promise.all([
        failure(listListings(api, cred, businessIds[0]!)),
        listListings(api, cred, businessIds[1]!),
      ]);
      expect(dripped.code).toBe('TIMEOUT');
      expect(dripped.message).toContain(
        'took longer than 2 s in all (headers and body), the limit set by LISTINGS_REQUEST_TIMEOUT_SECONDS; it was not retried',
      );
      // The dripped call's, not the one beside it.
      expect(dripped.message).toContain(`list_listings for business ${businessIds[0]} `);
      // The client cut the connection with the body unfinished: the sandbox, still waiting
      // for its first tick, saw it close.
      await sandboxClock.idle();
      expect(sandboxClock.sleeps.slice(mark)).toEqual([20]);
      expect(other.records.length).toBeGreaterThan(0);
      expect(sb.stats().byOperation['list_listings']).toEqual({ drip: 1, ok: 1 });
      // One attempt only for the dripped call, and the other call's one.
      expect(apiStats(api)).toMatchObject({ requests: 2, retries: 0 });
      expect(apiStats(api).byOperation['list_listings']).toEqual({ TIMEOUT: 1, ok: 1 });
    });

    it('a drip that ends within the total time is the same answer as an undripped one', async () => {
      const api = client({ requestTimeoutMs: 5000 });
      const plain = await listListings(api, cred, businessIds[0]!);
      sb.setFaults({
        script: [
          {
            kind: 'drip',
            operation: 'list_listings',
            dripChunkBytes: 2048,
            dripIntervalMs: 5,
            dripBytes: 10_000,
          },
        ],
      });
      // The sandbox's clock moves whenever it waits for a tick.
      const dripped = await settleWith(sandboxClock, listListings(api, cred, businessIds[0]!));
      expect(dripped).toEqual(plain);
      expect(sb.stats().byOperation['list_listings']).toEqual({ ok: 1, drip: 1 });
    });
  });

  describe('bounds on one answer', () => {
    it('refuses 100,000 keywords (7 MB, under the byte cap) before validating any', async () => {
      // The 7 MB answer of the issue once; transport is the same in both modes.
      const count = errorsWith200 ? 2001 : 100_000;
      sb.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count, sitesPerKeyword: 4 }],
      });
      const validate = vi.spyOn(rankingEntrySchema, 'safeParse');
      const api = client();
      const error = await failure(getRankings(api, cred, businessIds[0]!));
      expect(error.code).toBe('TOO_MANY_RECORDS');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(
        `the answer has ${count} keywords, more than the 2000 allowed by LISTINGS_MAX_KEYWORDS_PER_BUSINESS`,
      );
      expect(validate).not.toHaveBeenCalled();
      // One summary for quarantine, never the answer itself.
      expect(error.rejected).toHaveLength(1);
      expect(error.rejected![0]).toMatchObject({
        location: 'rankings',
        payload: {
          count,
          limit: 2000,
          setting: 'LISTINGS_MAX_KEYWORDS_PER_BUSINESS',
          sample: ['keyword 0', 'keyword 1', 'keyword 2'],
        },
      });
      expect(JSON.stringify(error.rejected).length).toBeLessThan(1000);
      expect(sb.stats().byOperation['get_rankings']).toEqual({ oversized: 1 });
      expect(apiStats(api)).toMatchObject({ requests: 1, retries: 0 });
    });

    it('refuses a keyword with more sites than allowed, keeping the others', async () => {
      sb.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count: 3, sitesPerKeyword: 6 }],
      });
      const api = client({ bounds: { sitesPerKeyword: 5 } });
      const result = await getRankings(api, cred, businessIds[0]!);
      expect(result.records).toEqual([]);
      expect(result.rejected.map((r) => r.location)).toEqual([
        'keyword 0',
        'keyword 1',
        'keyword 2',
      ]);
      expect(result.rejected[0]!.reason).toBe(
        'keyword: 6 sites, more than the 5 allowed by LISTINGS_MAX_SITES_PER_KEYWORD',
      );
      // At the bound, the entry is taken.
      sb.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count: 2, sitesPerKeyword: 5 }],
      });
      const atBound = await getRankings(api, cred, businessIds[0]!);
      expect(atBound.rejected).toEqual([]);
      expect(atBound.records).toHaveLength(10);
    });

    it('refuses a rankings answer whose keyword × site pairs are past their bound, each within its own', async () => {
      // 300 keywords × 40 sites: each bound alone holds; the 12,000 series they expand into
      // do not (2,000 × 50 such once peaked at 364 MB: npm run bench:answer-shape).
      sb.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count: 300, sitesPerKeyword: 40 }],
      });
      const validate = vi.spyOn(rankingEntrySchema, 'safeParse');
      const api = client();
      const error = await failure(getRankings(api, cred, businessIds[0]!));
      expect(error.code).toBe('TOO_MANY_RECORDS');
      expect(error.message).toContain(
        'the answer has 12000 keyword × site pairs, more than the 10000 allowed by LISTINGS_MAX_RANK_SERIES_PER_BUSINESS',
      );
      expect(validate).not.toHaveBeenCalled();
      // At the bound, the answer is taken.
      sb.setFaults({
        script: [{ kind: 'oversized', operation: 'get_rankings', count: 250, sitesPerKeyword: 40 }],
      });
      const atBound = await getRankings(api, cred, businessIds[0]!);
      expect(atBound.rejected).toEqual([]);
      expect(atBound.records).toHaveLength(10_000);
    });

    it('refuses reviews, listings and keywords past their bounds, and takes them at the bound', async () => {
      const api = client({
        bounds: { reviewsPerAnswer: 20, listingsPerAnswer: 20, keywordsPerBusiness: 20 },
      });
      const validate = vi.spyOn(reviewSchema, 'safeParse');
      sb.setFaults({ script: [{ kind: 'oversized', operation: 'list_reviews', count: 21 }] });
      const reviews = await failure(listReviews(api, cred, reviewed, 'review'));
      expect(reviews.code).toBe('TOO_MANY_RECORDS');
      expect(reviews.message).toContain(
        'the answer has 21 reviews, more than the 20 allowed by LISTINGS_MAX_REVIEWS_PER_ANSWER',
      );
      expect(validate).not.toHaveBeenCalled();

      sb.setFaults({ script: [{ kind: 'oversized', operation: 'list_listings', count: 21 }] });
      const listings = await failure(listListings(api, cred, businessIds[0]!));
      expect(listings.code).toBe('TOO_MANY_RECORDS');
      expect(listings.message).toContain('LISTINGS_MAX_LISTINGS_PER_ANSWER');

      sb.setFaults({ script: [{ kind: 'oversized', operation: 'list_keywords', count: 21 }] });
      const keywords = await failure(listKeywords(api, cred, businessIds[0]!));
      expect(keywords.code).toBe('TOO_MANY_RECORDS');
      expect(keywords.message).toContain('LISTINGS_MAX_KEYWORDS_PER_BUSINESS');

      sb.setFaults({
        script: [
          { kind: 'oversized', operation: 'list_reviews', count: 20 },
          { kind: 'oversized', operation: 'list_listings', count: 20 },
        ],
      });
      expect((await listReviews(api, cred, reviewed, 'review')).records).toHaveLength(20);
      expect((await listListings(api, cred, businessIds[0]!)).records).toHaveLength(20);
    });
  });

  describe('the same id twice in one answer', () => {
    it('collapses identical listings and counts them', async () => {
      const api = client();
      const plain = await listListings(api, cred, businessIds[0]!);
      expect(plain.duplicates).toBe(0);
      sb.setFaults({
        script: [{ kind: 'duplicate', operation: 'list_listings', copies: 'identical' }],
      });
      const doubled = await listListings(api, cred, businessIds[0]!);
      expect(doubled.records).toEqual(plain.records);
      expect(doubled.rejected).toEqual([]);
      expect(doubled.duplicates).toBe(1);
      expect(sb.stats().byOperation['list_listings']).toEqual({ ok: 1, duplicate: 1 });
    });

    it('refuses both copies of a listing that disagree, with the id in each payload', async () => {
      const api = client();
      const plain = await listListings(api, cred, businessIds[0]!);
      sb.setFaults({
        script: [{ kind: 'duplicate', operation: 'list_listings', copies: 'disagreeing' }],
      });
      const doubled = await listListings(api, cred, businessIds[0]!);
      expect(doubled.duplicates).toBe(0);
      expect(doubled.rejected).toHaveLength(2);
      const [a, b] = doubled.rejected as [
        { location: string; reason: string; payload: { id: number; status: string } },
        { location: string; reason: string; payload: { id: number; status: string } },
      ];
      expect(a.payload.id).toBe(b.payload.id);
      expect(new Set([a.payload.status, b.payload.status])).toEqual(
        new Set(['Accurate', 'Inaccurate']),
      );
      expect(a.reason).toMatch(
        new RegExp(
          `^listing ${a.payload.id} appears 2 times in the answer \\(at \\[\\d+\\], \\[${plain.records.length}\\]\\) and the copies disagree; none is stored$`,
        ),
      );
      expect(b.location).toBe(`[${plain.records.length}]`);
      // Scrubbed as every quarantined payload is: no directory login or password.
      expect(JSON.stringify(doubled.rejected)).not.toMatch(/site_username|pw-[0-9a-f]{12}/);
      expect(doubled.records).toEqual(plain.records.filter((l) => l.id !== a.payload.id));
    });

    it('collapses identical reviews and refuses disagreeing ones', async () => {
      const api = client();
      const plain = await listReviews(api, cred, reviewed, 'review');
      sb.setFaults({ script: [{ kind: 'duplicate', operation: 'list_reviews' }] });
      const same = await listReviews(api, cred, reviewed, 'review');
      expect(same.records).toEqual(plain.records);
      expect(same.duplicates).toBe(1);

      sb.setFaults({
        script: [{ kind: 'duplicate', operation: 'list_reviews', copies: 'disagreeing' }],
      });
      const differ = await listReviews(api, cred, reviewed, 'review');
      expect(differ.rejected).toHaveLength(2);
      const id = (differ.rejected[0]!.payload as { id: string }).id;
      expect(differ.rejected[0]!.reason).toContain(`review ${id.toLowerCase()} appears 2 times`);
      expect(differ.records).toEqual(plain.records.filter((r) => r.id !== id));
    });

    it('collapses an identical business and refuses a disagreeing one', async () => {
      const api = client();
      sb.setFaults({ script: [{ kind: 'duplicate', operation: 'list_businesses' }] });
      const same = await listBusinesses(api, cred);
      expect(same.records.map((b) => b.id)).toEqual(businessIds);
      expect(same.duplicates).toBe(1);
      sb.setFaults({
        script: [{ kind: 'duplicate', operation: 'list_businesses', copies: 'disagreeing' }],
      });
      const differ = await listBusinesses(api, cred);
      expect(differ.records.map((b) => b.id)).toEqual(businessIds.slice(1));
      expect(differ.rejected.map((r) => (r.payload as { id: number }).id)).toEqual([
        businessIds[0],
        businessIds[0],
      ]);
    });
  });

  it('an empty answer is an answer: no records, nothing refused', async () => {
    sb.setFaults({
      script: [
        { kind: 'empty', operation: 'list_listings' },
        { kind: 'empty', operation: 'list_reviews' },
      ],
    });
    const api = client();
    expect(await listListings(api, cred, businessIds[0]!)).toEqual({
      records: [],
      rejected: [],
      duplicates: 0,
    });
    expect(await listReviews(api, cred, reviewed, 'review')).toEqual({
      records: [],
      rejected: [],
    });
    expect(sb.stats().byOperation).toMatchObject({
      list_listings: { empty: 1 },
      list_reviews: { empty: 1 },
    });
  });

  it('Retry-After: 86400 fails the call at once with PAUSE_TOO_LONG, and the credential after it', async () => {
    sb.setFaults({
      script: [{ kind: '429', operation: 'list_reviews', retryAfterSeconds: 86_400 }],
    });
    const clock = manualClock();
    const api = client({ clock, retry: { maxRetryAfterMs: 300_000 } });
    const error = await failure(listReviews(api, cred, reviewed, 'review'));
    expect(error.code).toBe('PAUSE_TOO_LONG');
    expect(error.message).toBe(
      `list_reviews for business ${reviewed} (review) on credential "${cred.name}" failed: Rate limit exceeded. Try again later.; the upstream asked this credential to pause for 86400 s (Retry-After), longer than the 300 s a run waits, so the call gives up`,
    );
    expect(error.message).not.toContain(cred.authToken);
    expect(clock.sleeps).toEqual([]);
    const next = await failure(listListings(api, cred, businessIds[0]!));
    expect(next.code).toBe('PAUSE_TOO_LONG');
    expect(next.message).toContain(`on credential "${cred.name}"`);
    expect(sb.stats().requests).toBe(1);
  });
});

describe('the settings', () => {
  it('have generous defaults and read their variables', () => {
    const defaults = loadConfig({});
    expect(defaults.upstreamRequestTimeoutMs).toBe(120_000);
    expect(defaults.upstreamMaxKeywordsPerBusiness).toBe(2000);
    expect(defaults.upstreamMaxSitesPerKeyword).toBe(50);
    expect(defaults.upstreamMaxRankSeriesPerBusiness).toBe(10_000);
    expect(defaults.upstreamMaxReviewsPerAnswer).toBe(20_000);
    expect(defaults.upstreamMaxListingsPerAnswer).toBe(2000);
    const set = loadConfig({
      LISTINGS_REQUEST_TIMEOUT_SECONDS: '30',
      LISTINGS_MAX_KEYWORDS_PER_BUSINESS: '10',
      LISTINGS_MAX_SITES_PER_KEYWORD: '3',
      LISTINGS_MAX_REVIEWS_PER_ANSWER: '7',
      LISTINGS_MAX_LISTINGS_PER_ANSWER: '9',
    });
    expect(set).toMatchObject({
      upstreamRequestTimeoutMs: 30_000,
      upstreamMaxKeywordsPerBusiness: 10,
      upstreamMaxSitesPerKeyword: 3,
      upstreamMaxReviewsPerAnswer: 7,
      upstreamMaxListingsPerAnswer: 9,
    });
    expect(() => loadConfig({ LISTINGS_REQUEST_TIMEOUT_SECONDS: '0' })).toThrow(
      'LISTINGS_REQUEST_TIMEOUT_SECONDS must be a whole number from 1 to 3600 (got "0")',
    );
  });

  it('reach the configured client, each bound from its own variable', () => {
    const bounds = (env: Record<string, string>) =>
      answerSettings(createConfiguredApiClient(loadConfig(env), silentLogger())).bounds;
    expect(bounds({})).toEqual({
      keywordsPerBusiness: 2000,
      sitesPerKeyword: 50,
      rankSeriesPerBusiness: 10_000,
      reviewsPerAnswer: 20_000,
      listingsPerAnswer: 2000,
    });
    expect(
      bounds({
        LISTINGS_MAX_KEYWORDS_PER_BUSINESS: '11',
        LISTINGS_MAX_SITES_PER_KEYWORD: '12',
        LISTINGS_MAX_RANK_SERIES_PER_BUSINESS: '13',
        LISTINGS_MAX_REVIEWS_PER_ANSWER: '14',
        LISTINGS_MAX_LISTINGS_PER_ANSWER: '15',
      }),
    ).toEqual({
      keywordsPerBusiness: 11,
      sitesPerKeyword: 12,
      rankSeriesPerBusiness: 13,
      reviewsPerAnswer: 14,
      listingsPerAnswer: 15,
    });
  });

  it('refuse bad client options', () => {
    expect(() => createApiClient({ requestTimeoutMs: 0 })).toThrow(
      'requestTimeoutMs must be a positive integer',
    );
    expect(() => createApiClient({ bounds: { reviewsPerAnswer: 0 } })).toThrow(
      'bounds.reviewsPerAnswer must be a positive integer',
    );
  });
});

describe.each(testBackends)('in a sync (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  /** The sandbox's, never moved: a dripped body stays at its headers. */
  const clock = manualClock();

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 5,
      accounts: 1,
      businessesPerAccount: 2,
      port: 0,
      clock,
    });
    warehouse = await createTestWarehouse(backend);
  });
  afterEach(async () => {
    sandbox.setFaults(DEFAULT_FAULTS);
    sandbox.resetStats();
    await truncateAll(warehouse);
  });
  afterAll(async () => {
    await warehouse?.close();
    await sandbox?.close();
  });

  async function sync(options: ApiClientOptions = {}) {
    const api = client(options);
    return runSync({
      warehouse,
      api,
      credentials: sandbox.credentials,
      logger: silentLogger(),
      trigger: 'test',
    });
  }

  it('a dripped listings answer fails its stream at the total time; the other business syncs and the run ends', async () => {
    sandbox.setFaults({
      script: [{ kind: 'drip', operation: 'list_listings', dripBytes: 4000, dripIntervalMs: 20 }],
    });
    const mark = clock.sleeps.length;
    // Loose enough for the undripped answers on a loaded machine; the drip never ends.
    const result = await sync({ requestTimeoutMs: 2000 });
    expect(result.status).toBe('partial');
    expect(result.stats.streamFailures).toBe(1);
    expect(result.stats.businesses.synced).toBe(1);
    expect(result.stats.failures).toEqual([
      expect.objectContaining({
        stream: 'listings',
        reason: expect.stringContaining('LISTINGS_REQUEST_TIMEOUT_SECONDS'),
      }),
    ]);
    expect(sandbox.stats().byOperation['list_listings']).toMatchObject({ drip: 1, ok: 1 });
    // The run's client cut the dripped connection with its body unfinished: the sandbox,
    // still waiting for the first tick, saw it close.
    await clock.idle();
    expect(clock.sleeps.slice(mark)).toEqual([20]);
  });

  it('an oversized rankings answer fails its stream, keeps the stored ranks and quarantines a summary', async () => {
    expect((await sync()).status).toBe('succeeded');
    const ranks = () =>
      warehouse.db
        .selectFrom('rank_observations')
        .select(['business_id', 'keyword', 'site', 'rank'])
        .orderBy(['business_id', 'keyword', 'site'])
        .execute();
    const before = await ranks();
    expect(before.length).toBeGreaterThan(0);
    sandbox.setFaults({
      script: [{ kind: 'oversized', operation: 'get_rankings', count: 2001, sitesPerKeyword: 4 }],
    });
    const result = await sync();
    expect(result.status).toBe('partial');
    expect(result.stats.streamFailures).toBe(1);
    expect(await ranks()).toEqual(before);
    const quarantined = await warehouse.db
      .selectFrom('quarantine')
      .select(['stream', 'location', 'reason', 'payload'])
      .execute();
    expect(quarantined).toEqual([
      {
        stream: 'rankings',
        location: 'rankings',
        reason:
          'the answer has 2001 keywords, more than the 2000 allowed by LISTINGS_MAX_KEYWORDS_PER_BUSINESS; it was refused whole, before any record was validated (raise the setting if such an answer is expected)',
        payload: {
          count: 2001,
          limit: 2000,
          setting: 'LISTINGS_MAX_KEYWORDS_PER_BUSINESS',
          sample: ['keyword 0', 'keyword 1', 'keyword 2'],
        },
      },
    ]);
  });

  it('a listing served twice, Accurate and Inaccurate, is refused: the stored row stays, no alert', async () => {
    expect((await sync()).status).toBe('succeeded');
    const listings = () =>
      warehouse.db
        .selectFrom('listings')
        .select(['listing_id', 'status', 'removed_at'])
        .orderBy('listing_id')
        .execute();
    const before = await listings();
    const alertsBefore = await warehouse.db.selectFrom('alerts').select('alert_id').execute();
    sandbox.setFaults({
      script: [{ kind: 'duplicate', operation: 'list_listings', copies: 'disagreeing' }],
    });
    const result = await sync();
    expect(result.status).toBe('partial');
    const quarantined = await warehouse.db
      .selectFrom('quarantine')
      .select(['stream', 'reason', 'payload'])
      .execute();
    expect(quarantined).toHaveLength(2);
    const id = (quarantined[0]!.payload as { id: number }).id;
    for (const row of quarantined) {
      expect(row.stream).toBe('listings');
      expect((row.payload as { id: number }).id).toBe(id);
      expect(row.reason).toContain(`listing ${id} appears 2 times in the answer`);
    }
    expect(await listings()).toEqual(before);
    const alerts = await warehouse.db
      .selectFrom('alerts')
      .select(['alert_id', 'kind', 'listing_id'])
      .execute();
    expect(alerts.filter((a) => String(a.listing_id) === String(id))).toEqual([]);
    expect(alerts).toHaveLength(alertsBefore.length);
  });
});
