/**
 * The schemas refuse what the warehouse columns cannot store, naming the field: such a
 * record is quarantined by the client instead of failing its business's write.
 */
import { describe, expect, it } from 'vitest';
import { listingSchema } from '../../src/api/listings.ts';
import { rankingsFromResult } from '../../src/api/rankings.ts';
import { reviewSchema } from '../../src/api/reviews.ts';

const REVIEW = {
  id: '5b0a4c1e-9d2f-4b7a-8c3e-2f1d0e9a8b7c',
  title: 'Great',
  content: 'Clean and quick.',
  author_name: 'Pat',
  rating: 5,
  date: '2026-01-02',
  type: 'Review',
  likes_count: 3,
  likes_change: 1,
  can_respond: true,
  responses: [
    {
      id: '0c9d8e7f-6a5b-4c3d-8e1f-0a9b8c7d6e5f',
      content: 'Thanks!',
      date: '2026-01-03',
    },
  ],
};

function reasonOf(schema: typeof reviewSchema | typeof listingSchema, value: unknown): string {
  const parsed = schema.safeParse(value);
  expect(parsed.success).toBe(false);
  return parsed.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') ?? '';
}

describe('values the columns cannot store', () => {
  it('accepts the ordinary review', () => {
    expect(reviewSchema.safeParse(REVIEW).success).toBe(true);
  });

  it.each([
    ['content', { content: 'fine\u0000text' }, /content: .*NUL/],
    ['content', { content: 'half \ud83d pair' }, /content: .*lone UTF-16 surrogate/],
    ['title', { title: 'a\u0000' }, /title: .*NUL/],
    ['author_name', { author_name: '\udc00' }, /author_name: .*surrogate/],
    ['type', { type: 'Re\u0000view' }, /type: .*NUL/],
    ['likes_count', { likes_count: 3_000_000_000 }, /likes_count: .*at most 2147483647/],
    ['likes_change', { likes_change: -3_000_000_000 }, /likes_change: .*at least -2147483648/],
    ['likes_change', { likes_change: 1.5 }, /likes_change: expected a whole number/],
    ['date', { date: '0000-06-01T00:00:00Z' }, /date: /],
  ])('a review whose %s the column cannot store is refused, naming it', (_f, patch, reason) => {
    expect(reasonOf(reviewSchema, { ...REVIEW, ...patch })).toMatch(reason);
  });

  it('a review response id must be a uuid (the column is uuid)', () => {
    const reason = reasonOf(reviewSchema, {
      ...REVIEW,
      responses: [{ ...REVIEW.responses[0], id: 'resp-17' }],
    });
    expect(reason).toMatch(/^responses\.0\.id: /);
    expect(reviewSchema.safeParse({ ...REVIEW, responses: [{ id: 17 }] }).success).toBe(false);
  });

  it('a surrogate pair (an emoji) is stored as it is', () => {
    const parsed = reviewSchema.parse({ ...REVIEW, content: 'five stars \ud83d\ude00' });
    expect(parsed.content).toBe('five stars 😀');
  });

  it('listing text and ids beyond 2^53 are refused', () => {
    const listing = { id: 7, site_name: 'Yelp', status: 'Accurate' };
    expect(listingSchema.safeParse(listing).success).toBe(true);
    expect(reasonOf(listingSchema, { ...listing, phone: '555\u0000' })).toMatch(/^phone: .*NUL/);
    expect(reasonOf(listingSchema, { ...listing, id: '99999999999999999999' })).toMatch(/^id: /);
    // site_name is part of an index key: a btree entry holds about 2,700 bytes.
    expect(reasonOf(listingSchema, { ...listing, site_name: '網'.repeat(501) })).toMatch(
      /^site_name: expected at most 500 characters/,
    );
  });

  it('a rank beyond the smallint column and a keyword with NUL are rejected records', () => {
    const { records, rejected } = rankingsFromResult({
      plumber: { Google: 3, Bing: 32_767 },
      'huge rank': { Google: 3_000_000_000 },
      'past smallint': { Google: 32_768, Yelp: '40000' },
      'nul\u0000keyword': { Google: 1 },
    });
    expect(records).toEqual([
      { keyword: 'plumber', site: 'Google', rank: 3 },
      { keyword: 'plumber', site: 'Bing', rank: 32_767 },
    ]);
    expect(rejected.map((r) => r.reason)).toEqual([
      expect.stringMatching(/^Google: expected a whole rank from 0 to 32767 .* got 3000000000/),
      expect.stringMatching(/^Google: .*32767.* got 32768; Yelp: .*32767.* got "40000"/),
      expect.stringMatching(/^keyword: .*NUL/),
    ]);
  });
});
