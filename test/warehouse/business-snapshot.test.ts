import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { columnTypesOf, listingShape } from '../../src/api/index.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import {
  ACCOUNT,
  BUSINESS_ID,
  ctx,
  DAY1,
  DAY1_LATER,
  DAY2,
  DAY3,
  full,
  keyword,
  listing,
  RUN_ID,
  review,
  reviewId,
  snapshot,
  summary,
} from './fixtures.ts';
import { addAccount, countRows, write } from './helpers.ts';

describe.each(testBackends)('writeBusinessSnapshot (%s)', (backend) => {
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

  it('lands exact rows in every table on the first write', async () => {
    const result = await write(wh, snapshot(), ctx(DAY1));
    expect(result.alerts).toBe(0);
    expect(result.quarantined).toBe(0);
    expect(result.stats).toEqual({
      businesses: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
      business_versions: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
      listings: { inserted: 3, updated: 0, unchanged: 0, deleted: 0 },
      listing_status_history: { inserted: 3, updated: 0, unchanged: 0, deleted: 0 },
      alerts: { inserted: 0, updated: 0, unchanged: 0, deleted: 0 },
      reviews: { inserted: 2, updated: 0, unchanged: 0, deleted: 0 },
      review_versions: { inserted: 2, updated: 0, unchanged: 0, deleted: 0 },
      review_responses: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
      rank_observations: { inserted: 4, updated: 0, unchanged: 0, deleted: 0 },
      keywords: { inserted: 2, updated: 0, unchanged: 0, deleted: 0 },
    });

    const business = await wh.db.selectFrom('businesses').selectAll().executeTakeFirstOrThrow();
    expect(business).toMatchObject({
      business_id: BUSINESS_ID,
      account_name: ACCOUNT,
      name: 'Harbor Dental',
      state_name: 'Maine',
      latitude: 43.6591,
      longitude: -70.2568,
      twitter_url: 'https://twitter.example/harbor',
      facebook_url: null,
      additional_categories: ['dentist', 'orthodontist'],
      business_hours: [
        { day: 'Monday', start_time: '09:00', end_time: '17:00' },
        { day: 'Sunday', start_time: null, end_time: null },
      ],
      hide_address: false,
      first_seen_at: DAY1,
      last_seen_at: DAY1,
      archived_at: null,
      profile_first_read_at: DAY1,
      listings_first_synced_at: DAY1,
      reviews_first_synced_at: DAY1,
      rankings_first_synced_at: DAY1,
      keywords_first_synced_at: DAY1,
    });
    expect(business.content_hash).toMatch(/^[0-9a-f]{40}$/);
    expect(business.first_seen_at).toBeInstanceOf(Date);

    const versions = await wh.db.selectFrom('business_versions').selectAll().execute();
    expect(versions).toEqual([
      expect.objectContaining({
        business_id: BUSINESS_ID,
        observed_at: DAY1,
        content_hash: business.content_hash,
        run_id: RUN_ID,
        profile: expect.objectContaining({ name: 'Harbor Dental', latitude: 43.6591 }),
      }),
    ]);

    const listings = await wh.db.selectFrom('listings').selectAll().orderBy('listing_id').execute();
    expect(listings).toHaveLength(3);
    // A column added to the listing's shape since this was written is null here, as the
    // fixture leaves it (fixtures.ts, BARE_LISTING): the values below stay exact.
    const added = Object.fromEntries(
      Object.keys(columnTypesOf(listingShape)).map((c) => [c, null]),
    );
    expect(listings[2]).toEqual({
      ...added,
      business_id: BUSINESS_ID,
      listing_id: 3,
      site_name: 'Site3',
      status: 'Not Present',
      sync_status: 'success',
      order_status: null,
      name: 'Harbor Dental',
      name_valid: true,
      phone: '207-555-0143',
      phone_valid: true,
      street: '12 Pier Rd',
      city: 'Portland',
      state: 'ME',
      postal_code: '04101',
      address_valid: true,
      live_link: 'https://dir.example/3',
      claimed: null,
      has_site_credentials: false,
      content_hash: expect.stringMatching(/^[0-9a-f]{40}$/),
      first_seen_at: DAY1,
      last_seen_at: DAY1,
      status_changed_at: DAY1,
      removed_at: null,
    });
    const history = await wh.db
      .selectFrom('listing_status_history')
      .selectAll()
      .orderBy('listing_id')
      .execute();
    expect(history.map((h) => [h.listing_id, h.previous_status, h.status])).toEqual([
      [1, null, 'Accurate'],
      [2, null, 'Accurate'],
      [3, null, 'Not Present'],
    ]);

    const reviews = await wh.db.selectFrom('reviews').selectAll().orderBy('review_id').execute();
    expect(reviews[0]).toMatchObject({
      review_id: reviewId(1),
      business_id: BUSINESS_ID,
      category: 'review',
      rating: 4.5,
      reviewed_at: new Date('2025-02-20T00:00:00.000Z'),
      reviewed_at_precision: 'day',
      response_count: 1,
      removed_at: null,
    });
    expect(reviews[1]).toMatchObject({
      category: 'social',
      type: 'LikesCount',
      rating: null,
      likes_count: 12,
      likes_change: 2,
      response_count: 0,
    });
    const responses = await wh.db.selectFrom('review_responses').selectAll().execute();
    expect(responses).toEqual([
      expect.objectContaining({
        response_id: reviewId(901),
        review_id: reviewId(1),
        business_id: BUSINESS_ID,
        content: 'Thank you!',
        responded_at: new Date('2025-02-21T10:00:00.000Z'),
      }),
    ]);

    const ranks = await wh.db
      .selectFrom('rank_observations')
      .select(['site', 'rank', 'observed_on', 'keyword'])
      .orderBy('site')
      .execute();
    expect(ranks).toEqual([
      { site: 'Bing', rank: null, observed_on: '2025-03-01', keyword: 'dentist portland' },
      { site: 'Google', rank: 3, observed_on: '2025-03-01', keyword: 'dentist portland' },
      { site: 'Google_new.local', rank: 1, observed_on: '2025-03-01', keyword: 'dentist portland' },
      {
        site: 'Google_new.organic',
        rank: 7,
        observed_on: '2025-03-01',
        keyword: 'dentist portland',
      },
    ]);
    const keywords = await wh.db.selectFrom('keywords').selectAll().orderBy('keyword_id').execute();
    expect(keywords.map((k) => [k.keyword_id, k.keyword, k.is_primary, k.deleted_at])).toEqual([
      [1, 'dentist portland', true, null],
      [2, 'teeth whitening', false, null],
    ]);
  });

  it('writes nothing when the same snapshot is written again', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const before = await countRows(wh);
    const listingsBefore = await wh.db.selectFrom('listings').selectAll().execute();
    const result = await write(wh, snapshot(), ctx(DAY1_LATER));
    for (const [table, counts] of Object.entries(result.stats)) {
      expect({
        table,
        inserted: counts.inserted,
        updated: counts.updated,
        deleted: counts.deleted,
      }).toEqual({
        table,
        inserted: 0,
        updated: 0,
        deleted: 0,
      });
    }
    expect(result.stats['businesses']?.unchanged).toBe(1);
    expect(result.stats['listings']?.unchanged).toBe(3);
    expect(result.stats['reviews']?.unchanged).toBe(2);
    expect(result.stats['review_responses']?.unchanged).toBe(1);
    expect(result.stats['rank_observations']?.unchanged).toBe(4);
    expect(result.stats['keywords']?.unchanged).toBe(2);
    expect(await countRows(wh)).toEqual(before);
    // Unchanged rows are not rewritten: not even their last_seen_at moves.
    expect(await wh.db.selectFrom('listings').selectAll().execute()).toEqual(listingsBefore);
    // Nor is the business row: a sync with no upstream change writes no row.
    const business = await wh.db.selectFrom('businesses').selectAll().executeTakeFirstOrThrow();
    expect(business.last_seen_at).toEqual(DAY1);
    expect(business.listings_first_synced_at).toEqual(DAY1);
    expect(business.profile_changed_at).toEqual(DAY1);
  });

  it('appends one history row and one alert when a listing turns Inaccurate', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const turned = snapshot({
      listings: [
        listing(1, { status: 'Inaccurate', phoneValid: false }),
        listing(2),
        listing(3, { status: 'Not Present', claimed: null }),
      ],
    });
    const result = await write(wh, turned, ctx(DAY2));
    expect(result.alerts).toBe(1);
    expect(result.stats['listings']).toEqual({ inserted: 0, updated: 1, unchanged: 2, deleted: 0 });
    expect(result.stats['listing_status_history']?.inserted).toBe(1);
    const history = await wh.db
      .selectFrom('listing_status_history')
      .selectAll()
      .where('listing_id', '=', 1)
      .orderBy('observed_at')
      .execute();
    expect(history.map((h) => [h.observed_at, h.previous_status, h.status, h.phone_valid])).toEqual(
      [
        [DAY1, null, 'Accurate', true],
        [DAY2, 'Accurate', 'Inaccurate', false],
      ],
    );
    const alerts = await wh.db.selectFrom('alerts').selectAll().execute();
    expect(alerts).toEqual([
      expect.objectContaining({
        kind: 'listing_inaccurate',
        account_name: ACCOUNT,
        business_id: BUSINESS_ID,
        listing_id: 1,
        site_name: 'Site1',
        previous_status: 'Accurate',
        status: 'Inaccurate',
        detected_at: DAY2,
        delivered_at: null,
        attempts: 0,
        last_error: null,
        run_id: RUN_ID,
        dedupe_key: `listing_inaccurate:${BUSINESS_ID}:1:${DAY1.toISOString()}`,
      }),
    ]);
    const row = await wh.db
      .selectFrom('listings')
      .select(['status_changed_at', 'last_seen_at', 'first_seen_at'])
      .where('listing_id', '=', 1)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status_changed_at: DAY2, last_seen_at: DAY2, first_seen_at: DAY1 });

    // The same change again: no second alert, no history.
    const again = await write(wh, turned, ctx(DAY3));
    expect(again.alerts).toBe(0);
    expect(again.stats['listing_status_history']?.inserted).toBe(0);
    expect(await wh.db.selectFrom('alerts').selectAll().execute()).toHaveLength(1);
  });

  it('alerts again on a later relapse, not on recovery or untracked changes', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const inaccurate = snapshot({ listings: [listing(1, { status: 'Inaccurate' })] });
    await write(wh, inaccurate, ctx(DAY2));
    const recovered = await write(wh, snapshot({ listings: [listing(1)] }), ctx(DAY3));
    expect(recovered.alerts).toBe(0);
    expect(recovered.stats['listing_status_history']?.inserted).toBe(1);
    const phoneOnly = await write(
      wh,
      snapshot({ listings: [listing(1, { phone: '207-555-0000' })] }),
      ctx(new Date('2025-03-04T03:00:00Z')),
    );
    expect(phoneOnly.stats['listings']?.updated).toBe(1);
    expect(phoneOnly.stats['listing_status_history']?.inserted).toBe(0);
    const relapse = await write(wh, inaccurate, ctx(new Date('2025-03-05T03:00:00Z')));
    expect(relapse.alerts).toBe(1);
    expect(await wh.db.selectFrom('alerts').select('dedupe_key').execute()).toHaveLength(2);
  });

  it("raises nothing on a business's first sync, even for Inaccurate listings", async () => {
    const first = snapshot({
      listings: [listing(1, { status: 'Inaccurate' }), listing(2, { status: 'Inaccurate' })],
    });
    const result = await write(wh, first, ctx(DAY1));
    expect(result.alerts).toBe(0);
    expect(await wh.db.selectFrom('alerts').selectAll().execute()).toEqual([]);
  });

  it('the first completed listings sync is the baseline even after earlier runs', async () => {
    await write(wh, snapshot({ listings: null }), ctx(DAY1));
    const result = await write(
      wh,
      snapshot({ listings: [listing(1, { status: 'Inaccurate' })] }),
      ctx(DAY2),
    );
    expect(result.alerts).toBe(0);
  });

  it('alerts for a listing first seen Inaccurate on an already-synced business', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const withNew = snapshot({
      listings: [
        listing(1),
        listing(2),
        listing(3, { status: 'Not Present', claimed: null }),
        listing(4, { status: 'Inaccurate' }),
        listing(5, { status: 'Accurate' }),
      ],
    });
    const result = await write(wh, withNew, ctx(DAY2));
    expect(result.alerts).toBe(1);
    expect(result.stats['listings']?.inserted).toBe(2);
    const alerts = await wh.db.selectFrom('alerts').selectAll().execute();
    expect(alerts).toEqual([
      expect.objectContaining({
        listing_id: 4,
        previous_status: null,
        status: 'Inaccurate',
        dedupe_key: `listing_inaccurate:${BUSINESS_ID}:4:first-seen`,
      }),
    ]);
  });

  it('null streams touch nothing of their stream', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const before = await countRows(wh);
    const listingsBefore = await wh.db.selectFrom('listings').selectAll().execute();
    const reviewsBefore = await wh.db.selectFrom('reviews').selectAll().execute();
    const keywordsBefore = await wh.db.selectFrom('keywords').selectAll().execute();
    const result = await write(
      wh,
      snapshot({
        summary: summary({ name: 'Harbor Dental & Ortho' }),
        full: null,
        listings: null,
        reviews: null,
        rankings: null,
        keywords: null,
      }),
      ctx(DAY2),
    );
    expect(Object.keys(result.stats).sort()).toEqual(['business_versions', 'businesses']);
    expect(result.stats['businesses']?.updated).toBe(1);
    expect(result.stats['business_versions']?.inserted).toBe(1);
    const after = await countRows(wh);
    expect(after).toEqual({ ...before, business_versions: before['business_versions']! + 1 });
    expect(await wh.db.selectFrom('listings').selectAll().execute()).toEqual(listingsBefore);
    expect(await wh.db.selectFrom('reviews').selectAll().execute()).toEqual(reviewsBefore);
    expect(await wh.db.selectFrom('keywords').selectAll().execute()).toEqual(keywordsBefore);
    const business = await wh.db.selectFrom('businesses').selectAll().executeTakeFirstOrThrow();
    // The summary refreshed; the stored full profile stayed.
    expect(business).toMatchObject({
      name: 'Harbor Dental & Ortho',
      latitude: 43.6591,
      tagline: 'Smile at sea level',
      additional_categories: ['dentist', 'orthodontist'],
      profile_first_read_at: DAY1,
      listings_first_synced_at: DAY1,
      reviews_first_synced_at: DAY1,
      rankings_first_synced_at: DAY1,
      keywords_first_synced_at: DAY1,
      last_seen_at: DAY2,
    });
  });

  it('an unchanged summary without a full read keeps the profile hash', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const result = await write(wh, snapshot({ full: null }), ctx(DAY2));
    expect(result.stats['businesses']).toEqual({
      inserted: 0,
      updated: 0,
      unchanged: 1,
      deleted: 0,
    });
    expect(result.stats['business_versions']?.inserted).toBe(0);
  });

  it('a changed full profile appends a business version', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const result = await write(wh, snapshot({ full: full({ tagline: 'New tagline' }) }), ctx(DAY2));
    expect(result.stats['businesses']?.updated).toBe(1);
    expect(result.stats['business_versions']?.inserted).toBe(1);
    const versions = await wh.db
      .selectFrom('business_versions')
      .select(['observed_at', 'profile'])
      .orderBy('observed_at')
      .execute();
    expect(versions.map((v) => (v.profile as { tagline: string }).tagline)).toEqual([
      'Smile at sea level',
      'New tagline',
    ]);
  });

  it('soft-deletes what a successful stream no longer lists, and restores it', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const shrunk = snapshot({
      listings: [listing(1)],
      reviews: [
        review(2, {
          category: 'social',
          type: 'LikesCount',
          rating: null,
          likesCount: 12,
          likesChange: 2,
        }),
      ],
      keywords: [keyword(1, 'dentist portland')],
    });
    const result = await write(wh, shrunk, ctx(DAY2));
    expect(result.stats['listings']).toEqual({ inserted: 0, updated: 0, unchanged: 1, deleted: 2 });
    expect(result.stats['reviews']).toEqual({ inserted: 0, updated: 0, unchanged: 1, deleted: 1 });
    expect(result.stats['review_responses']?.deleted).toBe(1);
    expect(result.stats['keywords']).toEqual({ inserted: 0, updated: 0, unchanged: 1, deleted: 1 });
    const removed = await wh.db
      .selectFrom('listings')
      .select(['listing_id', 'removed_at'])
      .orderBy('listing_id')
      .execute();
    expect(removed).toEqual([
      { listing_id: 1, removed_at: null },
      { listing_id: 2, removed_at: DAY2 },
      { listing_id: 3, removed_at: DAY2 },
    ]);
    const kw = await wh.db
      .selectFrom('keywords')
      .select(['keyword_id', 'deleted_at'])
      .orderBy('keyword_id')
      .execute();
    expect(kw).toEqual([
      { keyword_id: 1, deleted_at: null },
      { keyword_id: 2, deleted_at: DAY2 },
    ]);
    // Soft deletion is idempotent.
    const again = await write(wh, shrunk, ctx(DAY2));
    expect(again.stats['listings']?.deleted).toBe(0);

    // Everything comes back.
    const back = await write(wh, snapshot(), ctx(DAY3));
    expect(back.stats['listings']).toEqual({ inserted: 0, updated: 2, unchanged: 1, deleted: 0 });
    expect(back.stats['reviews']?.updated).toBe(1);
    expect(back.stats['keywords']?.updated).toBe(1);
    // Same status as before removal: no history row, no alert.
    expect(back.stats['listing_status_history']?.inserted).toBe(0);
    const stillRemoved = await wh.db
      .selectFrom('listings')
      .select('listing_id')
      .where('removed_at', 'is not', null)
      .execute();
    expect(stillRemoved).toEqual([]);
  });

  it('an empty successful listings read removes every listing', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const result = await write(wh, snapshot({ listings: [] }), ctx(DAY2));
    expect(result.stats['listings']?.deleted).toBe(3);
  });

  it('appends a review version when rating, text, likes or responses change', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const changed = snapshot({
      reviews: [
        review(1, { content: 'Edited review', responses: [] }),
        review(2, {
          category: 'social',
          type: 'LikesCount',
          rating: null,
          likesCount: 15,
          likesChange: 3,
        }),
      ],
    });
    const result = await write(wh, changed, ctx(DAY2));
    expect(result.stats['reviews']).toEqual({ inserted: 0, updated: 2, unchanged: 0, deleted: 0 });
    expect(result.stats['review_versions']?.inserted).toBe(2);
    expect(result.stats['review_responses']?.deleted).toBe(1);
    const versions = await wh.db
      .selectFrom('review_versions')
      .select(['review_id', 'content', 'likes_count', 'response_count'])
      .where('observed_at', '=', DAY2)
      .orderBy('review_id')
      .execute();
    expect(versions).toEqual([
      { review_id: reviewId(1), content: 'Edited review', likes_count: null, response_count: 0 },
      { review_id: reviewId(2), content: 'Review number 2', likes_count: 15, response_count: 0 },
    ]);
  });

  it('rolls the whole business back when one write fails', async () => {
    await write(wh, snapshot(), ctx(DAY1));
    const before = await countRows(wh);
    const broken = snapshot({
      listings: [listing(1, { status: 'Inaccurate' })],
      // Not a uuid: the reviews statement fails after listings and alerts were written.
      reviews: [review(1, { id: 'not-a-uuid' })],
    });
    await expect(write(wh, broken, ctx(DAY2))).rejects.toThrow();
    expect(await countRows(wh)).toEqual(before);
    const status = await wh.db
      .selectFrom('listings')
      .select('status')
      .where('listing_id', '=', 1)
      .executeTakeFirstOrThrow();
    expect(status.status).toBe('Accurate');
  });

  it('loads large batches in one statement per table', async () => {
    const many = snapshot({
      listings: Array.from({ length: 1500 }, (_, i) => listing(i + 1)),
      reviews: Array.from({ length: 400 }, (_, i) =>
        review(i + 1, {
          content: 'x'.repeat(500),
          responses: [
            {
              id: reviewId(100_000 + i),
              title: null,
              content: 'Thanks',
              authorName: null,
              authorAvatar: null,
              respondedAt: null,
              respondedAtPrecision: null,
            },
          ],
        }),
      ),
    });
    const result = await write(wh, many, ctx(DAY1));
    expect(result.stats['listings']?.inserted).toBe(1500);
    expect(result.stats['reviews']?.inserted).toBe(400);
    expect(result.stats['review_responses']?.inserted).toBe(400);
    const again = await write(wh, many, ctx(DAY1_LATER));
    expect(again.stats['listings']?.unchanged).toBe(1500);
    expect(again.stats['reviews']?.unchanged).toBe(400);
  });

  it('keeps the last of duplicate records in one read', async () => {
    const result = await write(
      wh,
      snapshot({ listings: [listing(1), listing(1, { status: 'Inaccurate' })] }),
      ctx(DAY1),
    );
    expect(result.stats['listings']?.inserted).toBe(1);
    const row = await wh.db.selectFrom('listings').select('status').executeTakeFirstOrThrow();
    expect(row.status).toBe('Inaccurate');
  });
});
