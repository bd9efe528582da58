/**
 * Records against the database's columns:
 * - every value a schema accepts is one its column stores (property-based, both backends);
 * - a value that still fails its write (a record built past the schemas) costs only that
 *   record: it is quarantined with the database's reason, and its siblings, the rest of
 *   the business and its alerts commit.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { businessFullSchema, businessSummarySchema } from '../../src/api/businesses.ts';
import { LISTING_STATUSES, LISTING_SYNC_STATUSES } from '../../src/api/index.ts';
import { keywordSchema } from '../../src/api/keywords.ts';
import { listingSchema } from '../../src/api/listings.ts';
import { rankingsFromResult } from '../../src/api/rankings.ts';
import { countrySchema, stateSchema, subCategorySchema } from '../../src/api/reference.ts';
import {
  responseStatusSchema,
  responseSubmittedSchema,
  reviewsFromResult,
} from '../../src/api/reviews.ts';
import { parseRecords } from '../../src/api/schemas.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  recordResponseRequest,
  recordResponseStatus,
} from '../../src/warehouse/runs/review-response-requests.ts';
import { writeReferenceData } from '../../src/warehouse/tables/reference-data.ts';
import {
  type BusinessSnapshot,
  writeBusinessSnapshotIsolating,
} from '../../src/warehouse/write/snapshot.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import {
  ACCOUNT,
  BUSINESS_ID,
  ctx,
  DAY1,
  DAY2,
  full,
  listing,
  review,
  reviewId,
  snapshot,
  summary,
} from './fixtures.ts';
import { addAccount, write } from './helpers.ts';

/**
 * 3,000 CJK characters that do not repeat (9,000 bytes): too big for a btree index entry
 * even after compression (the key columns of `rank_observations`, `keywords`, `listings`).
 */
const INCOMPRESSIBLE = Array.from({ length: 3000 }, (_, i) =>
  String.fromCodePoint(0x4e00 + ((i * 7919) % 20000)),
).join('');

// Strings that break a naive text or jsonb write, mixed into arbitrary Unicode.
const awkwardStrings = fc.constantFrom(
  INCOMPRESSIBLE,
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\ud83d\ude00',
  '\\u0000',
  "'; drop table reviews; --",
  '',
  ' ',
  'x'.repeat(5000),
);
// Mostly plausible values, so that records get through to the writers, with the edges
// mixed in often enough that every run meets several.
const anyString = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }), weight: 12 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 1 },
  { arbitrary: awkwardStrings, weight: 1 },
);
const anyNumber = fc.oneof(
  { arbitrary: fc.integer({ min: -1000, max: 1000 }), weight: 12 },
  { arbitrary: fc.integer(), weight: 2 },
  { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      3_000_000_000,
      -3_000_000_000,
      2 ** 31,
      2 ** 31 - 1,
      -(2 ** 31),
      1.5,
      2 ** 53,
      1e308,
    ),
    weight: 1,
  },
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const textish = maybe(fc.oneof(anyString, anyNumber));
const anyDate = fc.oneof(
  { arbitrary: fc.constant('2026-01-02'), weight: 4 },
  fc
    .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z') })
    .map((d) => (Number.isNaN(d.getTime()) ? '2026-01-01' : d.toISOString())),
  fc.constantFrom(
    '0000-01-01',
    '0001-01-01T00:30:00+01:00',
    '9999-12-31T23:00:00-05:00',
    '2026-02-30',
    '2026-01-02',
  ),
  anyString,
);
const anyId = fc.oneof(
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.constantFrom('99999999999999999999', '12', 2 ** 53, -1),
);

const rawResponse = fc.record({
  id: fc.oneof({ arbitrary: fc.uuid(), weight: 8 }, { arbitrary: anyString, weight: 1 }),
  title: textish,
  content: textish,
  author_name: textish,
  author_avatar: textish,
  date: maybe(anyDate),
});
const rawReview = fc.record({
  id: fc.uuid(),
  title: textish,
  content: maybe(anyString),
  author_name: textish,
  author_avatar: textish,
  rating: maybe(anyNumber),
  date: maybe(anyDate),
  permalink: textish,
  type: anyString,
  likes_count: maybe(anyNumber),
  likes_change: maybe(anyNumber),
  can_respond: fc.boolean(),
  responses: fc.array(rawResponse, { maxLength: 1 }),
});
const rawListing = fc.record({
  id: anyId,
  site_name: anyString,
  status: fc.constantFrom(...LISTING_STATUSES),
  sync_status: maybe(fc.constantFrom(...LISTING_SYNC_STATUSES)),
  order_status: textish,
  name: textish,
  phone: textish,
  street: textish,
  city: textish,
  state: textish,
  postal_code: textish,
  live_link: maybe(fc.oneof(anyString, anyNumber)),
  claimed: maybe(fc.boolean()),
});
const rawKeyword = fc.record({
  id: anyId,
  keyword: anyString,
  city: textish,
  state: textish,
  primary: maybe(fc.boolean()),
  location_id: fc.constant(BUSINESS_ID),
  archived: fc.boolean(),
});
const rawRank = fc.oneof(anyNumber, anyString, fc.constant('-'), fc.constant(null));
const rawRankings = fc.dictionary(
  anyString,
  fc.dictionary(anyString, fc.oneof(rawRank, fc.record({ local: rawRank, organic: rawRank })), {
    maxKeys: 3,
  }),
  { maxKeys: 3 },
);
const rawFull = fc.record({
  id: fc.constant(BUSINESS_ID),
  name: anyString,
  street: textish,
  city: textish,
  state_name: textish,
  postal_code: textish,
  phone: textish,
  latitude: maybe(fc.oneof(anyNumber, anyString)),
  longitude: maybe(fc.oneof(anyNumber, anyString)),
  description: textish,
  additional_categories: fc.array(fc.oneof(anyString, anyNumber), { maxLength: 3 }),
  business_hours: fc.array(fc.record({ day: anyString, start_time: textish, end_time: textish }), {
    maxLength: 2,
  }),
  hide_address: maybe(fc.boolean()),
});

const rawSummary = fc.record({
  id: fc.constant(BUSINESS_ID),
  name: anyString,
  street: textish,
  city: textish,
  state_name: textish,
  postal_code: textish,
  phone: textish,
});
const rawReference = fc.record({
  countries: fc.array(fc.record({ id: anyId, name: anyString }), { maxLength: 3 }),
  states: fc.array(fc.record({ id: anyId, name: anyString, iso: textish, country_id: anyId }), {
    maxLength: 3,
  }),
  subCategories: fc.array(fc.record({ id: anyId, name: anyString }), { maxLength: 3 }),
});

// Operations 9 and 10: what `api reviews respond` and every sync store.
const rawSubmitted = fc.record({
  request_id: fc.oneof(fc.integer(), anyString),
  message: textish,
});
const rawStatus = fc.record({ status: anyString });

describe.each(testBackends)('values and columns (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
    await addAccount(wh);
  });
  afterAll(async () => {
    await wh.close();
  });

  it('every record a schema accepts is written without a database error', async () => {
    const accepted = {
      summary: 0,
      full: 0,
      listings: 0,
      reviews: 0,
      rankings: 0,
      keywords: 0,
      reference: 0,
      responseRequests: 0,
    };
    await fc.assert(
      fc.asyncProperty(
        rawFull,
        fc.array(rawListing, { maxLength: 4 }),
        fc.dictionary(anyString, fc.array(rawReview, { maxLength: 3 }), { maxKeys: 2 }),
        rawRankings,
        fc.array(rawKeyword, { maxLength: 3 }),
        rawSummary,
        rawReference,
        fc.tuple(rawSubmitted, rawStatus),
        async (profile, listings, reviews, rankings, keywords, listed, reference, response) => {
          const fullParsed = businessFullSchema.safeParse(profile);
          const summaryParsed = businessSummarySchema.safeParse(listed);
          const snap: BusinessSnapshot = snapshot({
            summary: summaryParsed.success ? summaryParsed.data : summary(),
            full: fullParsed.success ? fullParsed.data : null,
            listings: parseRecords(listingSchema, listings, String).records,
            reviews: reviewsFromResult(reviews, 'review').records,
            rankings: rankingsFromResult(rankings).records,
            keywords: parseRecords(keywordSchema, keywords, String).records,
          });
          if (fullParsed.success) accepted.full += 1;
          if (summaryParsed.success) accepted.summary += 1;
          accepted.listings += snap.records.listings?.length ?? 0;
          accepted.reviews += snap.records.reviews?.length ?? 0;
          accepted.rankings += snap.records.rankings?.length ?? 0;
          accepted.keywords += snap.records.keywords?.length ?? 0;
          // The plain writer, no safety net: the schemas alone must be enough.
          await write(wh, snap, ctx(DAY1));
          const countries = parseRecords(countrySchema, reference.countries, String).records;
          const states = parseRecords(stateSchema, reference.states, String).records;
          const subCategories = parseRecords(subCategorySchema, reference.subCategories, String);
          accepted.reference += countries.length + states.length + subCategories.records.length;
          await writeReferenceData(wh.db, {
            countries,
            states,
            subCategories: subCategories.records,
          });
          const submitted = responseSubmittedSchema.safeParse(response[0]);
          const status = responseStatusSchema.safeParse(response[1]);
          if (submitted.success && status.success) {
            accepted.responseRequests += 1;
            await recordResponseRequest(wh.db, {
              requestId: submitted.data.requestId,
              accountName: ACCOUNT,
              businessId: BUSINESS_ID,
              reviewId: reviewId(1),
              content: 'Thank you',
              submittedAt: DAY1,
            });
            await recordResponseStatus(wh.db, {
              requestId: submitted.data.requestId,
              status: status.data.status,
              observedAt: DAY2,
            });
          }
        },
      ),
      { numRuns: 60, seed: 1204 },
    );
    // The generators reach the writers: the property is not vacuously true.
    for (const n of Object.values(accepted)) expect(n).toBeGreaterThan(5);
  });

  it('a record the database refuses is quarantined; its siblings and the alert commit', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    // Built past the schemas: only the writer's safety net stands between it and the table.
    const next = snapshot({
      listings: [listing(1, { status: 'Inaccurate' }), listing(2), listing(3)],
      reviews: [
        review(1, { content: 'updated text' }),
        review(2, { likesCount: 3_000_000_000 }),
        review(3, { content: 'nul \u0000 inside' }),
        review(4),
      ],
    });
    const result = await writeBusinessSnapshotIsolating(wh.db, next, ctx(DAY2));

    expect(result.alerts).toBe(1);
    expect(result.quarantined).toBe(2);
    const reviews = await wh.db
      .selectFrom('reviews')
      .select(['review_id', 'content', 'likes_count', 'removed_at'])
      .orderBy('review_id')
      .execute();
    expect(reviews.map((r) => r.review_id)).toEqual([reviewId(1), reviewId(2), reviewId(4)]);
    expect(reviews[0]?.content).toBe('updated text');
    // Review 2 keeps its last stored value: the refused one never replaced it.
    expect(reviews[1]?.likes_count).toBe(12);
    // Still upstream, only unstorable: its row is kept, not marked removed.
    expect(reviews.map((r) => r.removed_at)).toEqual([null, null, null]);
    const alerts = await wh.db.selectFrom('alerts').select(['kind', 'listing_id']).execute();
    expect(alerts).toEqual([{ kind: 'listing_inaccurate', listing_id: 1 }]);
    const quarantined = await wh.db
      .selectFrom('quarantine')
      .select(['stream', 'location', 'reason', 'business_id'])
      .orderBy('location')
      .execute();
    expect(quarantined).toEqual([
      {
        stream: 'reviews',
        location: `reviews ${reviewId(2)}`,
        reason: expect.stringMatching(/out of range.*SQLSTATE 22003/),
        business_id: BUSINESS_ID,
      },
      {
        stream: 'reviews',
        location: `reviews ${reviewId(3)}`,
        reason: expect.stringMatching(/SQLSTATE 22/),
        business_id: BUSINESS_ID,
      },
    ]);
    // The stored payload is the record with the NUL replaced, so jsonb took it.
    const { rows } = await sql<{ content: string }>`
      select payload->>'content' as content from quarantine
      where location = ${`reviews ${reviewId(3)}`}`.execute(wh.db);
    expect(rows[0]?.content).toBe('nul \ufffd inside');
  });

  it('an unstorable profile is quarantined and the stored profile kept', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const next = snapshot({
      full: full({ description: 'bad \u0000 text' }),
      summary: summary({ name: 'Harbor Dental & Sons' }),
      listings: [listing(1, { status: 'Inaccurate' }), listing(2), listing(3)],
    });
    const result = await writeBusinessSnapshotIsolating(wh.db, next, ctx(DAY2));
    expect(result.alerts).toBe(1);
    expect(result.quarantined).toBe(1);
    const business = await wh.db
      .selectFrom('businesses')
      .select(['name', 'description'])
      .executeTakeFirstOrThrow();
    expect(business).toEqual({
      name: 'Harbor Dental & Sons',
      description: 'Family dentistry by the harbor.',
    });
    const q = await wh.db.selectFrom('quarantine').select(['stream', 'location']).execute();
    expect(q).toEqual([{ stream: 'businesses', location: `business ${BUSINESS_ID}` }]);
  });
});
