/**
 * The schemas, fed raw payloads shaped like the seed's samples and quirks. Pure: no HTTP.
 */
import { describe, expect, it } from 'vitest';
import {
  businessBasicSchema,
  businessFullSchema,
  businessSummarySchema,
} from '../../src/api/businesses.ts';
import { keywordSchema } from '../../src/api/keywords.ts';
import { listingSchema } from '../../src/api/listings.ts';
import { rankingsFromResult } from '../../src/api/rankings.ts';
import { countrySchema, stateSchema, subCategorySchema } from '../../src/api/reference.ts';
import {
  responseStatusSchema,
  responseSubmittedSchema,
  reviewSchema,
  reviewsFromResult,
} from '../../src/api/reviews.ts';
import { parseRecords, readEnvelope } from '../../src/api/schemas.ts';

const REVIEW_ID = '0b8f6a3c-6f5e-4d2a-9c1b-2a7e5d4c3b21';

describe('businesses', () => {
  const summary = {
    id: 42,
    name: 'Acme Plumbing',
    street: '1 Main St',
    city: 'Austin',
    state_name: 'Texas',
    postal_code: '78701',
    phone: '512-555-0100',
  };

  it('maps a summary to camelCase', () => {
    expect(businessSummarySchema.parse(summary)).toEqual({
      id: 42,
      name: 'Acme Plumbing',
      street: '1 Main St',
      city: 'Austin',
      stateName: 'Texas',
      postalCode: '78701',
      phone: '512-555-0100',
    });
  });

  it('keeps basic-read fields', () => {
    const basic = businessBasicSchema.parse({
      ...summary,
      biz_url: 'https://acme.example',
      hide_address: false,
    });
    expect(basic.bizUrl).toBe('https://acme.example');
    expect(basic.hideAddress).toBe(false);
  });

  it('turns latitude/longitude strings and numbers into numbers, empty into null', () => {
    const full = {
      ...summary,
      latitude: '30.2672',
      longitude: -97.7431,
      biz_url: 'https://acme.example',
      owner_first_name: 'Ada',
      owner_last_name: 'Lovelace',
      facebook_url: null,
      twitter_url: null,
      description: 'x'.repeat(200),
      tagline: 'We fix it',
      storecode: 'S1',
      additional_categories: ['12', 13],
      business_hours: [
        { day: 'Monday', start_time: '09:00', end_time: '17:00' },
        { day: 'Sunday', start_time: null, end_time: null },
      ],
      hide_address: true,
    };
    const parsed = businessFullSchema.parse(full);
    expect(parsed.latitude).toBe(30.2672);
    expect(parsed.longitude).toBe(-97.7431);
    expect(parsed.additionalCategories).toEqual(['12', '13']);
    expect(parsed.businessHours[1]).toEqual({ day: 'Sunday', startTime: null, endTime: null });
    expect(parsed.facebookUrl).toBeNull();

    const empty = businessFullSchema.parse({ ...full, latitude: '', longitude: '  ' });
    expect(empty.latitude).toBeNull();
    expect(empty.longitude).toBeNull();
    expect(businessFullSchema.safeParse({ ...full, latitude: 'north' }).success).toBe(false);
  });
});

describe('listings', () => {
  const complete = {
    id: 7,
    site_username: 'acme-login',
    site_password: 'hunter2-directory',
    sync_status: 'success',
    order_status: 'success',
    name: 'Acme Plumbing',
    name_valid: true,
    phone: '512-555-0100',
    phone_valid: false,
    street: '1 Main St',
    city: 'Austin',
    state: 'TX',
    postal_code: '78701',
    address_valid: true,
    live_link: 'https://directory.example/acme',
    claimed: null,
    site_name: 'Yelp',
    status: 'Inaccurate',
  };

  it('never keeps the directory login or password', () => {
    const listing = listingSchema.parse(complete);
    expect(listing.hasSiteCredentials).toBe(true);
    expect(JSON.stringify(listing)).not.toContain('hunter2');
    expect(JSON.stringify(listing)).not.toContain('acme-login');
    expect(Object.keys(listing)).not.toContain('siteUsername');
  });

  it('parses a listing carrying only some fields, the rest null', () => {
    const partial = listingSchema.parse({
      id: 8,
      site_username: null,
      site_password: null,
      sync_status: 'in progress',
      site_name: 'Bing',
      status: 'Not Present',
    });
    expect(partial).toMatchObject({
      id: 8,
      siteName: 'Bing',
      status: 'Not Present',
      syncStatus: 'in progress',
      name: null,
      nameValid: null,
      liveLink: null,
      claimed: null,
      hasSiteCredentials: false,
    });
  });

  it('hasSiteCredentials is true when either is a non-empty string', () => {
    const base = { id: 1, site_name: 'A', status: 'Accurate' };
    expect(listingSchema.parse({ ...base, site_username: 'u' }).hasSiteCredentials).toBe(true);
    expect(listingSchema.parse({ ...base, site_password: 'p' }).hasSiteCredentials).toBe(true);
    expect(listingSchema.parse({ ...base, site_username: '' }).hasSiteCredentials).toBe(false);
  });

  it('turns a numeric live_link into a string', () => {
    expect(listingSchema.parse({ ...complete, live_link: 12345 }).liveLink).toBe('12345');
  });

  it('rejects one bad record without failing its siblings, secrets removed', () => {
    const result = parseRecords(
      listingSchema,
      [complete, { ...complete, id: 'x', status: 'Sideways' }, { ...complete, id: 9 }],
      (i) => `[${i}]`,
    );
    expect(result.records.map((l) => l.id)).toEqual([7, 9]);
    expect(result.rejected).toHaveLength(1);
    const [bad] = result.rejected;
    expect(bad?.location).toBe('[1]');
    expect(bad?.reason).toMatch(/status/);
    expect(JSON.stringify(bad?.payload)).not.toContain('hunter2');
    expect(JSON.stringify(bad?.payload)).not.toContain('acme-login');
    expect(bad?.payload).not.toHaveProperty('site_username');
  });
});

describe('reviews', () => {
  const review = {
    id: REVIEW_ID,
    title: null,
    content: '',
    author_name: 'Sam',
    author_avatar: null,
    rating: 4,
    date: '2024-03-05',
    permalink: null,
    type: 'Review',
    can_respond: true,
    responses: [
      {
        id: '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f',
        title: null,
        content: 'Thanks!',
        author_name: 'Owner',
        author_avatar: null,
        date: '2024-03-06T10:15:00Z',
      },
    ],
  };

  it('reads a date-only review at midnight UTC with precision day', () => {
    const parsed = reviewSchema.parse(review);
    expect(parsed.reviewedAt?.toISOString()).toBe('2024-03-05T00:00:00.000Z');
    expect(parsed.reviewedAtPrecision).toBe('day');
    expect(parsed.content).toBe('');
    expect(parsed.responses[0]?.respondedAt?.toISOString()).toBe('2024-03-06T10:15:00.000Z');
    expect(parsed.responses[0]?.respondedAtPrecision).toBe('instant');
  });

  it('reads an ISO UTC timestamp as an instant', () => {
    const parsed = reviewSchema.parse({ ...review, date: '2024-03-05T18:30:12.000Z' });
    expect(parsed.reviewedAt?.toISOString()).toBe('2024-03-05T18:30:12.000Z');
    expect(parsed.reviewedAtPrecision).toBe('instant');
    expect(reviewSchema.safeParse({ ...review, date: '2024-02-30' }).success).toBe(false);
    expect(reviewSchema.safeParse({ ...review, date: 'yesterday' }).success).toBe(false);
  });

  it('keeps unknown types and social counts', () => {
    const parsed = reviewSchema.parse({
      ...review,
      type: 'Reel',
      likes_count: 12,
      likes_change: -1,
    });
    expect(parsed.type).toBe('Reel');
    expect(parsed.likesCount).toBe(12);
    expect(parsed.likesChange).toBe(-1);
  });

  it('splits the site map, carrying site and category, rejecting per review', () => {
    const result = reviewsFromResult(
      {
        // Three distinct reviews: the same id twice would be a duplicate (collapsed).
        Yelp: [
          review,
          { ...review, id: '3c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f' },
          { ...review, id: '4c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f' },
          { ...review, id: 'not-a-uuid' },
        ],
        Google: [{ ...review, id: '2c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f', date: 'soon' }],
        Facebook: 'oops',
      },
      'review',
    );
    expect(result.records).toHaveLength(3);
    expect(result.records[0]).toMatchObject({ siteName: 'Yelp', category: 'review' });
    expect(result.rejected.map((r) => r.location).sort()).toEqual([
      'Facebook',
      'Google[0]',
      'Yelp[3]',
    ]);
    expect(result.duplicates).toBe(0);
  });

  it('collapses a review repeated identically, and refuses copies that disagree', () => {
    const result = reviewsFromResult(
      {
        Yelp: [review, review],
        Google: [{ ...review, id: '5c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f' }],
        Facebook: [{ ...review, id: '5C2D3E4F-5A6B-4C7D-8E9F-0A1B2C3D4E5F' }],
      },
      'review',
    );
    expect(result.records).toHaveLength(1);
    expect(result.records[0]).toMatchObject({ id: review.id, siteName: 'Yelp' });
    expect(result.duplicates).toBe(1);
    // The same uuid on two sites (in any case) is one review that disagrees on its site.
    expect(result.rejected.map((r) => r.location)).toEqual(['Google[0]', 'Facebook[0]']);
    expect(result.rejected[0]!.reason).toBe(
      'review 5c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f appears 2 times in the answer (at Google[0], Facebook[0]) and the copies disagree; none is stored',
    );
  });

  it('accepts an empty result served as []', () => {
    expect(reviewsFromResult([], 'social')).toEqual({ records: [], rejected: [] });
    expect(() => reviewsFromResult('nope', 'social')).toThrow();
  });
});

describe('review responses', () => {
  it('makes request ids strings whether numbers or strings', () => {
    expect(responseSubmittedSchema.parse({ request_id: 1234, message: 'ok' }).requestId).toBe(
      '1234',
    );
    expect(
      responseSubmittedSchema.parse({ request_id: '9d7e6a5b-1111-4222-8333-444455556666' })
        .requestId,
    ).toBe('9d7e6a5b-1111-4222-8333-444455556666');
  });

  it('keeps response statuses, known or not', () => {
    expect(responseStatusSchema.parse({ status: 'Retry In Progress' })).toEqual({
      status: 'Retry In Progress',
    });
    expect(responseStatusSchema.parse({ status: 'Queued' }).status).toBe('Queued');
  });
});

describe('rankings', () => {
  it('turns - into null and Google_new into two sites', () => {
    const result = rankingsFromResult({
      'plumber austin': {
        'Google Maps': 3,
        Google: '-',
        Bing: 12,
        Google_new: { local: 2, organic: 7 },
      },
    });
    expect(result.rejected).toEqual([]);
    expect(result.records).toEqual([
      { keyword: 'plumber austin', site: 'Google Maps', rank: 3 },
      { keyword: 'plumber austin', site: 'Google', rank: null },
      { keyword: 'plumber austin', site: 'Bing', rank: 12 },
      { keyword: 'plumber austin', site: 'Google_new.local', rank: 2 },
      { keyword: 'plumber austin', site: 'Google_new.organic', rank: 7 },
    ]);
  });

  it('rejects a bad keyword entry whole, keeping the others', () => {
    const result = rankingsFromResult({
      good: { Yelp: 1 },
      bad: { Yelp: 'first' },
      worse: 'n/a',
    });
    expect(result.records).toEqual([{ keyword: 'good', site: 'Yelp', rank: 1 }]);
    expect(result.rejected.map((r) => r.location).sort()).toEqual(['bad', 'worse']);
  });

  it('accepts [] as no keywords and refuses a non-object result', () => {
    expect(rankingsFromResult([])).toEqual({ records: [], rejected: [] });
    expect(() => rankingsFromResult(42)).toThrow();
  });
});

describe('keywords and reference data', () => {
  it('maps a keyword', () => {
    expect(
      keywordSchema.parse({
        id: 5,
        keyword: 'plumber',
        city: 'Austin',
        state: 'TX',
        primary: null,
        location_id: 42,
        archived: false,
      }),
    ).toEqual({
      id: 5,
      keyword: 'plumber',
      city: 'Austin',
      state: 'TX',
      primary: null,
      businessId: 42,
      archived: false,
    });
  });

  it('maps countries, states and sub categories', () => {
    expect(countrySchema.parse({ id: 1, name: 'United States' })).toEqual({
      id: 1,
      name: 'United States',
    });
    expect(stateSchema.parse({ id: 44, name: 'Texas', iso: 'TX', country_id: 1 })).toEqual({
      id: 44,
      name: 'Texas',
      iso: 'TX',
      countryId: 1,
    });
    expect(subCategorySchema.parse({ id: 3, name: 'Plumbers' })).toEqual({
      id: 3,
      name: 'Plumbers',
    });
  });
});

describe('envelopes', () => {
  it('reads success, failure (any status), bare arrays and malformed bodies', () => {
    expect(readEnvelope({ success: true, result: [1] })).toMatchObject({
      kind: 'ok',
      result: [1],
    });
    expect(readEnvelope({ success: false, message: 'Authentication Failure' })).toMatchObject({
      kind: 'failure',
      message: 'Authentication Failure',
    });
    expect(readEnvelope([{ id: 1 }], { bareArray: true })).toMatchObject({ kind: 'ok' });
    expect(readEnvelope([{ id: 1 }])).toMatchObject({ kind: 'malformed' });
    expect(readEnvelope('hello')).toMatchObject({ kind: 'malformed' });
    expect(readEnvelope({ status: 'Completed' }, { bodyIsResult: true })).toMatchObject({
      kind: 'ok',
      result: { status: 'Completed' },
    });
    expect(
      readEnvelope({ success: false, message: 'Invalid Request ID' }, { bodyIsResult: true }),
    ).toMatchObject({ kind: 'failure' });
  });
});
