/**
 * A review id served under two businesses (docs/warehouse.md, "Rules as implemented"): the
 * copy under the business that does not hold the stored row is quarantined with a reason
 * naming both, the stored row (its versions and responses too) stays with its owner, the
 * rest of the business loads, the run ends `partial`, and the reviews answer is not
 * recorded as applied, so an unchanged answer the next night is read and quarantined again
 * rather than skipped.
 *
 * The sandbox never serves one id under two businesses, so a small proxy in front of it
 * appends, to business B's reviews and social items, one review (with responses) and one
 * social item of business A, on the wire; everything else is the sandbox's own answer over
 * real HTTP.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Credential, Review } from '../../src/api/index.ts';
import { listBusinesses, listReviews } from '../../src/api/index.ts';
import { ANSWER_READS } from '../../src/streams/index.ts';
import type { SyncResult } from '../../src/sync/run.ts';
import {
  type BusinessSnapshot,
  writeBusinessSnapshotIsolating,
} from '../../src/warehouse/write/snapshot.ts';
import { skipOnPglite, testBackends } from '../helpers/database.ts';
import { startRewritingProxy } from '../helpers/rewriting-proxy.ts';
import { nightOf, sync, worldPerTest } from './harness.ts';

const WORLD = { seed: 7, accounts: 1, businessesPerAccount: 2, startDate: '2026-06-01' };
/** Reads of one business: its profile, listings, reviews, social items, ranks, keywords, … */
const READS = ANSWER_READS.length;

/**
 * Which business's answers carry which other's items (`items`: a review and a social item;
 * `response`: one response, on a review of `to`'s own); `carried` fills as they are
 * served: id → what it is.
 */
interface Carry {
  from: number;
  to: number;
  what: 'items' | 'response';
  carried: Map<string, 'review' | 'social' | 'response'>;
}

type ServedReview = { id: string; responses: { id: string }[] } & Record<string, unknown>;

/**
 * Forwards to the sandbox. While `carry` is set, `carry.to`'s reviews answer gains the
 * first review of `carry.from` that has responses, and its social answer the first social
 * item of `carry.from`, each under the site the sandbox serves it on; or (`response`) the
 * first review of `carry.to` gains the first response of `carry.from`.
 */
async function startCarryingProxy(upstream: string, state: { carry: Carry | null }) {
  return startRewritingProxy(upstream, async (url, answer, served, forward) => {
    let text = served;
    const reviews =
      /^\/api\/v2\/businesses\/(\d+)\/reviews\.json\?.*\bcategory=(review|social)\b/.exec(url);
    const carry = state.carry;
    if (reviews && carry && Number(reviews[1]) === carry.to && answer.ok) {
      const category = reviews[2] as 'review' | 'social';
      const from = await forward(
        url.replace(`/businesses/${carry.to}/`, `/businesses/${carry.from}/`),
      );
      const sites = (JSON.parse(from.text) as { result: Record<string, ServedReview[]> }).result;
      const found = Object.entries(sites)
        .flatMap(([site, items]) => items.map((item) => [site, item] as const))
        .find(([, item]) => category === 'social' || item.responses.length > 0);
      const json = JSON.parse(text) as { result: Record<string, ServedReview[]> | [] };
      const own = Array.isArray(json.result) ? [] : Object.values(json.result).flat();
      if (found && carry.what === 'response' && category === 'review' && own[0]) {
        const taken = found[1].responses[0] as { id: string };
        own[0].responses = [...own[0].responses, taken];
        carry.carried.set(taken.id, 'response');
        text = JSON.stringify(json);
      } else if (found && carry.what === 'items') {
        const [site, item] = found;
        const result = Array.isArray(json.result) ? {} : json.result;
        result[site] = [...(result[site] ?? []), item];
        json.result = result;
        carry.carried.set(item.id, category);
        text = JSON.stringify(json);
      }
    }
    return text;
  });
}

describe.each(testBackends)('a review id served under two businesses (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  const state: { carry: Carry | null } = { carry: null };
  let proxy: Awaited<ReturnType<typeof startCarryingProxy>>;
  let credential: Credential;
  beforeEach(async () => {
    state.carry = null;
    proxy = await startCarryingProxy(world.sandbox.baseUrl, state);
    credential = { ...(world.sandbox.credentials[0] as Credential), baseUrl: proxy.url };
  });
  afterEach(async () => {
    await proxy.close();
  });

  const db = () => world.warehouse.db;
  /** A night of the sandbox's (unmoving) day: the same bodies each time. */
  const night = (extra: Parameters<typeof sync>[3] = {}) =>
    sync(world.warehouse, world.api, [credential], { now: () => nightOf(world.sandbox), ...extra });
  const businesses = async () =>
    (await listBusinesses(world.api, credential)).records.map((b) => b.id).sort((x, y) => x - y);
  const carrying = (from: number, to: number, what: Carry['what'] = 'items'): Carry => {
    state.carry = { from, to, what, carried: new Map() };
    return state.carry;
  };

  /** Stored review rows with their responses and versions: what must not move. */
  const storedRows = async (ids: readonly string[]) => {
    const { rows } = await sql<{
      review_id: string;
      business_id: string;
      content_hash: string;
      removed_at: Date | null;
      responses: string | null;
      versions: number;
    }>`
      select r.review_id::text, r.business_id::text, r.content_hash, r.removed_at,
        (select string_agg(p.response_id || ':' || p.business_id || ':' || p.content_hash,
                           ',' order by p.response_id)
           from review_responses p where p.review_id = r.review_id) as responses,
        (select count(*)::int from review_versions v where v.review_id = r.review_id) as versions
      from reviews r where r.review_id = any(${ids}::uuid[]) order by r.review_id`.execute(db());
    return rows;
  };
  const reviewIdsOf = async (businessId: number) =>
    (
      await db()
        .selectFrom('reviews')
        .select(sql<string>`review_id::text`.as('id'))
        .where('business_id', '=', businessId)
        .execute()
    ).map((row) => row.id);
  /** Each row, and each of its responses, stands under `owner`. */
  const expectOwnedBy = (rows: Awaited<ReturnType<typeof storedRows>>, owner: number) => {
    for (const row of rows) {
      expect(Number(row.business_id)).toBe(owner);
      for (const response of row.responses?.split(',') ?? []) {
        expect(response.split(':')[1]).toBe(String(owner));
      }
    }
  };
  const quarantined = async (runId: string) =>
    (
      await db()
        .selectFrom('quarantine')
        .select(['business_id', 'stream', 'location', 'reason'])
        .where('run_id', '=', runId)
        .orderBy('reason')
        .execute()
    ).map((row) => ({ ...row, business_id: Number(row.business_id) }));
  /** The business's recorded review bodies (`business_answers`: a row per read). */
  const reviewsRecorded = async (businessId: number) => {
    const { rows } = await sql<{ reviews_hash: string | null; socials_hash: string | null }>`
      select max(body_hash) filter (where read = 'reviews') as reviews_hash,
        max(body_hash) filter (where read = 'socials') as socials_hash
      from business_answers where business_id = ${businessId} group by business_id`.execute(db());
    if (!rows[0]) throw new Error(`business ${businessId} has no answers recorded`);
    return rows[0];
  };
  /** The quarantine rows a night must leave: each carried item, under `copy`, naming both. */
  const expectedQuarantine = (carry: Carry, owner: number, copy: number) =>
    [...carry.carried]
      .map(([id, category]) => ({
        business_id: copy,
        stream: 'reviews',
        location: `reviews ${id}`,
        reason: `${category === 'social' ? 'social item' : 'review'} ${id} is stored under business ${owner}; business ${copy}'s answer carries it too`,
      }))
      .sort((x, y) => (x.reason < y.reason ? -1 : 1));
  const expectQuarantinedNight = async (
    result: SyncResult,
    carry: Carry,
    owner: number,
    copy: number,
  ) => {
    expect(result.status).toBe('partial');
    expect(result.stats.businesses.failed).toBe(0);
    expect(result.stats.quarantined).toBe(carry.carried.size);
    expect(await quarantined(result.runId)).toEqual(expectedQuarantine(carry, owner, copy));
    // Its reviews answer is not taken as applied: the next night reads it again.
    expect(await reviewsRecorded(copy)).toEqual({ reviews_hash: null, socials_hash: null });
    const ownerRecord = await reviewsRecorded(owner);
    expect(ownerRecord.reviews_hash).not.toBeNull();
    expect(ownerRecord.socials_hash).not.toBeNull();
  };

  it('quarantines the copy of a review stored under another business, night after night', async () => {
    const [a, b] = (await businesses()) as [number, number];
    const first = await night();
    expect(first.status).toBe('succeeded');
    const ownReviewsOfB = await db()
      .selectFrom('reviews')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('business_id', '=', b)
      .executeTakeFirstOrThrow();

    const ofA = await reviewIdsOf(a);
    const before = await storedRows(ofA);

    const carry = carrying(a, b);
    const second = await night();
    const ids = [...carry.carried.keys()];
    expect([...carry.carried.values()].sort()).toEqual(['review', 'social']);
    const carried = await storedRows(ids);
    expect(carried).toHaveLength(2);
    expect(carried.some((row) => row.responses !== null)).toBe(true);
    expectOwnedBy(carried, a);
    // Not one of A's rows, responses or versions changed.
    expect(await storedRows(ofA)).toEqual(before);
    await expectQuarantinedNight(second, carry, a, b);
    // The rest of B's reviews loaded, none of A's came over.
    expect(
      await db()
        .selectFrom('reviews')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('business_id', '=', b)
        .where('removed_at', 'is', null)
        .executeTakeFirstOrThrow(),
    ).toEqual(ownReviewsOfB);

    // The same bodies on two more nights: read, not skipped, and quarantined again.
    for (let n = 0; n < 2; n++) {
      const again = await night();
      await expectQuarantinedNight(again, carry, a, b);
      // Every read but B's reviews and social items was skipped as applied.
      expect(again.stats.answersUnchanged).toBe(2 * READS - 2);
      expect(await storedRows(ofA)).toEqual(before);
    }
  });

  it('quarantines a response stored under another business, and writes the review that carries it', async () => {
    const [a, b] = (await businesses()) as [number, number];
    expect((await night()).status).toBe('succeeded');
    const ofA = await reviewIdsOf(a);
    const before = await storedRows(ofA);

    const carry = carrying(a, b, 'response');
    const second = await night();
    const [responseId] = [...carry.carried.keys()];
    expect([...carry.carried.values()]).toEqual(['response']);
    expect(second.status).toBe('partial');
    expect(second.stats.quarantined).toBe(1);
    const rows = await quarantined(second.runId);
    expect(rows).toEqual([
      {
        business_id: b,
        stream: 'reviews',
        location: `responses ${responseId}`,
        reason: expect.stringMatching(
          new RegExp(
            `^response ${responseId} \\(of review [0-9a-f-]{36}\\) is stored under business ${a}; business ${b}'s answer carries it too$`,
          ),
        ),
      },
    ]);
    expect(await storedRows(ofA)).toEqual(before);
    expect(await reviewsRecorded(b)).toEqual({ reviews_hash: null, socials_hash: null });

    const third = await night();
    expect(third.status).toBe('partial');
    expect(await quarantined(third.runId)).toEqual(rows);
    expect(await storedRows(ofA)).toEqual(before);
  });

  it('quarantines the higher of two businesses that serve one review on the same night', async () => {
    const [a, b] = (await businesses()) as [number, number];
    const carry = carrying(a, b);
    const first = await night();
    const ids = [...carry.carried.keys()];
    expect(ids).toHaveLength(2);
    // The lower business id holds both rows (the one owner rule); the other's copies are refused.
    const before = await storedRows(ids);
    expect(before).toHaveLength(2);
    const owner = Number(before[0]?.business_id);
    expect(owner).toBe(a);
    expectOwnedBy(before, owner);
    expect(before.map((row) => row.versions)).toEqual([1, 1]);
    const copy = owner === a ? b : a;
    await expectQuarantinedNight(first, carry, owner, copy);

    for (let n = 0; n < 2; n++) {
      const again = await night();
      await expectQuarantinedNight(again, carry, owner, copy);
      expect(await storedRows(ids)).toEqual(before);
    }
  });

  it.for([
    ['by COPY', true],
    ['by the upsert', false],
  ] as const)(
    'keeps a row a concurrent business committed while this one waited on it (%s)',
    async ([, copyNewRows], context) => {
      skipOnPglite(context, backend, 'one connection: its transactions never overlap');
      const [a, b] = (await businesses()) as [number, number];
      // The businesses and the account are stored; no review yet.
      const prelude = await night({ streams: ['businesses'] });
      const summaries = (await listBusinesses(world.api, credential)).records;
      const carry = carrying(a, b);
      const snapshotOf = async (id: number): Promise<BusinessSnapshot> => {
        const reviews = (await listReviews(world.api, credential, id, 'review')).records;
        const socials = (await listReviews(world.api, credential, id, 'social')).records;
        const seen = new Set(reviews.map((review) => review.id));
        return {
          accountName: credential.name,
          businessId: id,
          summary: summaries.find((summary) => summary.id === id) as BusinessSnapshot['summary'],
          full: null,
          records: { reviews: [...reviews, ...socials.filter((s: Review) => !seen.has(s.id))] },
          rejected: [],
        };
      };
      const [ofA, ofB] = [await snapshotOf(a), await snapshotOf(b)];
      expect(ofB.records.reviews?.length).toBeGreaterThanOrEqual(16); // enough to go by COPY
      const ctx = { runId: prelude.runId, observedAt: nightOf(world.sandbox), copyNewRows };

      // A's transaction holds its new rows uncommitted until B's write waits on one of them.
      let writingB: ReturnType<typeof writeBusinessSnapshotIsolating> | undefined;
      await writeBusinessSnapshotIsolating(db(), ofA, {
        ...ctx,
        inTransaction: async () => {
          writingB = writeBusinessSnapshotIsolating(db(), ofB, ctx);
          await vi.waitFor(
            async () => {
              const { rows } = await sql<{ n: number }>`
              select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`.execute(db());
              expect(rows[0]?.n).toBe(1);
            },
            { timeout: 10_000, interval: 20 },
          );
        },
      });
      const writtenB = await (writingB as NonNullable<typeof writingB>);

      expect(writtenB.quarantined).toBe(2);
      expect(await quarantined(prelude.runId)).toEqual(expectedQuarantine(carry, a, b));
      const rows = await storedRows([...carry.carried.keys()]);
      expect(rows).toHaveLength(2);
      expectOwnedBy(rows, a);
      expect(rows.map((row) => row.versions)).toEqual([1, 1]);
      // B's own reviews loaded.
      const { rows: ofBStored } = await sql<{ n: number }>`
      select count(*)::int as n from reviews where business_id = ${b}`.execute(db());
      expect(ofBStored[0]?.n).toBe((ofB.records.reviews?.length ?? 0) - 2);
    },
  );
});
