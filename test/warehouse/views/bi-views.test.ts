/**
 * The BI views on a small hand-built history: rows go straight into the tables of the
 * previous release (migrations up to 0004, where `rank_observations` was a table and the
 * views computed everything from history), then the warehouse migrates to the latest
 * schema, so every expected value below can be worked out by hand and holds for a
 * converted warehouse. test/warehouse/views/local-seo-migration.test.ts compares the two on 30 synced days;
 * test/warehouse/rankings.test.ts checks that the writers keep the read models true.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  up as rankSeries,
  down as revertRankSeries,
} from '../../../migrations/0005_rank_series.ts';
import {
  up as localSeoViews,
  down as revertLocalSeoViews,
} from '../../../migrations/0019_local_seo_views.ts';
import {
  up as rankMonths,
  down as revertRankMonths,
} from '../../../migrations/0030_rank_months.ts';
import {
  up as readModelsWithoutKeys,
  down as revertReadModelsWithoutKeys,
} from '../../../migrations/0031_read_models_without_fk_checks.ts';
import {
  down as revertVisibilityMonths,
  up as visibilityMonths,
} from '../../../migrations/0033_visibility_months.ts';
import {
  down as revertVisibilityLookups,
  up as visibilityLookups,
} from '../../../migrations/0036_visibility_lookups.ts';
import {
  up as rankMonthsCurrent,
  down as revertRankMonthsCurrent,
} from '../../../migrations/0040_rank_months_current.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, testBackends } from '../../helpers/database.ts';
import { BI_VIEWS, LOCAL_SEO_VIEWS, viewOutputs } from './view-outputs.ts';

const T0 = '2026-01-01T00:00:00Z';

async function seed(wh: Warehouse): Promise<void> {
  const db = wh.db;
  await sql`insert into accounts (name, user_email, base_url, last_synced_at)
    values ('east', 'ops@example.com', 'https://upstream.example', '2026-01-04T12:00:00Z')`.execute(
    db,
  );
  await sql`insert into businesses (business_id, account_name, name, city, phone, content_hash,
      first_seen_at, last_seen_at, profile_changed_at, archived_at)
    values
      (1, 'east', 'Acme Dental', 'Portland', '503-555-0100', 'h', ${T0}, ${T0}, ${T0}, null),
      (2, 'east', 'Bright Bakery', 'Salem', null, 'h', ${T0}, ${T0}, ${T0}, null),
      (3, 'east', 'Gone Garage', 'Bend', null, 'h', ${T0}, ${T0}, ${T0}, '2026-01-02T00:00:00Z')`.execute(
    db,
  );

  // Ranks. Google: 12, 9, (01-03 not collected), not ranked, not ranked, 8.
  // Bing, towards its latest day 2026-01-31: 15 (12-31), 25, 5 (01-24), 4, 2.
  // Yelp: 9 then not ranked. Yahoo: a single observation.
  await sql`insert into rank_observations (business_id, keyword, site, observed_on, rank, observed_at)
    select 1, 'dentist', site, day::date, rank, ${T0}::timestamptz
    from (values
      ('Google', '2026-01-01', 12), ('Google', '2026-01-02', 9), ('Google', '2026-01-04', null),
      ('Google', '2026-01-05', null), ('Google', '2026-01-06', 8),
      ('Bing', '2025-12-31', 15), ('Bing', '2026-01-10', 25), ('Bing', '2026-01-24', 5),
      ('Bing', '2026-01-30', 4), ('Bing', '2026-01-31', 2),
      ('Yelp', '2026-01-30', 9), ('Yelp', '2026-01-31', null),
      ('Yahoo', '2026-01-31', 1)
    ) as v(site, day, rank)`.execute(db);

  // Listings of business 1: 1 Accurate; 2 Accurate then Inaccurate (name and phone wrong);
  // 3 Not Present; 4 Accurate, removed on 01-02. Business 2: Not Present only.
  await sql`insert into listings (business_id, listing_id, site_name, status, name, name_valid,
      phone, phone_valid, street, city, state, postal_code, address_valid, live_link,
      content_hash, first_seen_at, last_seen_at, status_changed_at, removed_at)
    values
      (1, 1, 'Yelp', 'Accurate', 'Acme Dental', true, '503-555-0100', true, '1 Main St', 'Portland', 'OR', '97201', true, 'https://yelp.example/acme', 'h', ${T0}, ${T0}, ${T0}, null),
      (1, 2, 'Bing', 'Inaccurate', 'Acme Dentistry', false, '503-555-0199', false, '1 Main St', 'Portland', 'OR', '97201', true, 'https://bing.example/acme', 'h', ${T0}, ${T0}, '2026-01-03T10:00:00Z', null),
      (1, 3, 'Foursquare', 'Not Present', null, null, null, null, null, null, null, null, null, null, 'h', ${T0}, ${T0}, ${T0}, null),
      (1, 4, 'Hotfrog', 'Accurate', 'Acme Dental', true, null, true, null, null, null, null, true, null, 'h', ${T0}, ${T0}, ${T0}, '2026-01-02T10:00:00Z'),
      (2, 1, 'Yelp', 'Not Present', null, null, null, null, null, null, null, null, null, null, 'h', ${T0}, ${T0}, ${T0}, null),
      (3, 1, 'Yelp', 'Inaccurate', null, null, null, null, null, null, null, null, null, null, 'h', ${T0}, ${T0}, ${T0}, null)`.execute(
    db,
  );
  await sql`insert into listing_status_history (business_id, listing_id, observed_at, site_name, status, previous_status)
    values
      (1, 1, '2026-01-01T10:00:00Z', 'Yelp', 'Accurate', null),
      (1, 2, '2026-01-01T10:00:00Z', 'Bing', 'Accurate', null),
      (1, 2, '2026-01-03T10:00:00Z', 'Bing', 'Inaccurate', 'Accurate'),
      (1, 3, '2026-01-01T10:00:00Z', 'Foursquare', 'Not Present', null),
      (1, 4, '2026-01-01T10:00:00Z', 'Hotfrog', 'Accurate', null)`.execute(db);
  await sql`insert into alerts (kind, dedupe_key, account_name, business_id, listing_id, site_name,
      previous_status, status, detected_at)
    values
      ('listing_inaccurate', 'a1', 'east', 1, 2, 'Bing', 'Accurate', 'Inaccurate', '2026-01-03T10:00:00Z'),
      ('something_else', 'a2', 'east', 1, 1, 'Yelp', null, 'Accurate', '2026-01-03T10:00:00Z')`.execute(
    db,
  );

  // Reviews of business 1 on Google, with fixed days; on Yelp, ages relative to now().
  const review = (
    id: string,
    site: string,
    category: string,
    reviewedAt: ReturnType<typeof sql>,
    rating: number | null,
    canRespond: boolean,
    responseCount: number,
    removed: boolean,
  ) => sql`(${id}::uuid, 1, ${site}, ${category}, 'review', 'text', ${rating}::numeric,
      ${reviewedAt}, ${canRespond}, ${responseCount}, 'h', ${T0}::timestamptz, ${T0}::timestamptz,
      ${removed ? sql`${T0}::timestamptz` : sql`null`})`;
  const at = (iso: string) => sql`${iso}::timestamptz`;
  const ago = (hours: number) => sql`now() - make_interval(hours => ${hours})`;
  await sql`insert into reviews (review_id, business_id, site_name, category, type, content, rating,
      reviewed_at, can_respond, response_count, content_hash, first_seen_at, last_seen_at, removed_at)
    values ${sql.join([
      review(
        '00000000-0000-4000-8000-000000000001',
        'Google',
        'review',
        at('2026-01-02T09:00:00Z'),
        5,
        true,
        1,
        false,
      ),
      review(
        '00000000-0000-4000-8000-000000000002',
        'Google',
        'review',
        at('2026-01-02T20:00:00Z'),
        2,
        true,
        0,
        false,
      ),
      review(
        '00000000-0000-4000-8000-000000000003',
        'Google',
        'review',
        at('2026-01-03T08:00:00Z'),
        null,
        false,
        0,
        false,
      ),
      review(
        '00000000-0000-4000-8000-000000000004',
        'Google',
        'social',
        at('2026-01-02T08:00:00Z'),
        null,
        true,
        0,
        false,
      ),
      review(
        '00000000-0000-4000-8000-000000000005',
        'Google',
        'review',
        at('2026-01-02T08:00:00Z'),
        1,
        true,
        0,
        true,
      ),
      review(
        '00000000-0000-4000-8000-000000000006',
        'Google',
        'review',
        at('2026-01-01T00:00:00Z'),
        4,
        true,
        1,
        false,
      ),
      review('00000000-0000-4000-8000-000000000007', 'Yelp', 'review', ago(50), 3, true, 0, false),
      review('00000000-0000-4000-8000-000000000008', 'Yelp', 'review', ago(10), 5, true, 0, false),
    ])}`.execute(db);
  await sql`insert into review_responses (response_id, review_id, business_id, content, responded_at,
      content_hash, first_seen_at, last_seen_at)
    values
      ('10000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000001', 1, 'thanks', '2026-01-02T15:00:00Z', 'h', ${T0}, ${T0}),
      ('10000000-0000-4000-8000-000000000006', '00000000-0000-4000-8000-000000000006', 1, 'thanks', '2026-01-03T00:00:00Z', 'h', ${T0}, ${T0})`.execute(
    db,
  );
}

describe.each(testBackends)('BI views (%s)', (backend) => {
  let wh: Warehouse;
  // biome-ignore lint/suspicious/noExplicitAny: view rows are read untyped and compared whole
  const select = async (query: ReturnType<typeof sql>): Promise<any[]> =>
    (await query.execute(wh.db)).rows;

  beforeAll(async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    await migrateTo(wh.db, '0004_review_response_requests');
    await seed(wh);
    await migrateToLatest(wh.db);
  });
  afterAll(async () => {
    await wh.close();
  });

  it('v_rank_daily: one row per observed day, the change since the previous observation', async () => {
    const rows = await select(sql`select observed_on, rank, ranked, previous_observed_on,
        previous_rank, rank_change, movement
      from v_rank_daily where business_id = 1 and site = 'Google' order by observed_on`);
    expect(rows).toEqual([
      {
        observed_on: '2026-01-01',
        rank: 12,
        ranked: true,
        previous_observed_on: null,
        previous_rank: null,
        rank_change: null,
        movement: 'first',
      },
      {
        observed_on: '2026-01-02',
        rank: 9,
        ranked: true,
        previous_observed_on: '2026-01-01',
        previous_rank: 12,
        rank_change: -3,
        movement: 'up',
      },
      // 2026-01-03 was not collected: no row, and 01-04 compares with 01-02.
      {
        observed_on: '2026-01-04',
        rank: null,
        ranked: false,
        previous_observed_on: '2026-01-02',
        previous_rank: 9,
        rank_change: null,
        movement: 'dropped',
      },
      {
        observed_on: '2026-01-05',
        rank: null,
        ranked: false,
        previous_observed_on: '2026-01-04',
        previous_rank: null,
        rank_change: null,
        movement: 'not ranked',
      },
      {
        observed_on: '2026-01-06',
        rank: 8,
        ranked: true,
        previous_observed_on: '2026-01-05',
        previous_rank: null,
        rank_change: null,
        movement: 'entered',
      },
    ]);
    const bing = await select(sql`select observed_on, rank_change, movement from v_rank_daily
      where site = 'Bing' and observed_on = '2026-01-10'`);
    expect(bing).toEqual([{ observed_on: '2026-01-10', rank_change: 10, movement: 'down' }]);
  });

  it('v_rank_latest: 7- and 30-day change, best and worst, entered and left the top N', async () => {
    const rows = await select(sql`select * from v_rank_latest where business_id = 1 order by site`);
    const bySite = Object.fromEntries(rows.map((r) => [r.site, r]));
    expect(Object.keys(bySite)).toEqual(['Bing', 'Google', 'Yahoo', 'Yelp']);
    expect(bySite['Bing']).toMatchObject({
      observed_on: '2026-01-31',
      rank: 2,
      ranked: true,
      previous_observed_on: '2026-01-30',
      previous_rank: 4,
      compared_7d_on: '2026-01-24',
      rank_7d_ago: 5,
      rank_change_7d: -3,
      // Nothing on 01-01 itself: the rank as it stood then, from 12-31.
      compared_30d_on: '2025-12-31',
      rank_30d_ago: 15,
      rank_change_30d: -13,
      best_rank_30d: 2,
      worst_rank_30d: 25,
      observations_30d: 4,
      unranked_days_30d: 0,
      entered_top3: true,
      left_top3: false,
      entered_top10: false,
      left_top10: false,
    });
    expect(bySite['Yelp']).toMatchObject({
      rank: null,
      ranked: false,
      previous_rank: 9,
      compared_7d_on: null,
      rank_change_7d: null,
      rank_change_30d: null,
      best_rank_30d: 9,
      worst_rank_30d: 9,
      observations_30d: 2,
      unranked_days_30d: 1,
      entered_top3: false,
      left_top3: false,
      entered_top10: false,
      left_top10: true,
    });
    // A first observation has nothing to have entered from.
    expect(bySite['Yahoo']).toMatchObject({
      rank: 1,
      previous_observed_on: null,
      entered_top3: null,
      left_top10: null,
    });
    expect(bySite['Google']).toMatchObject({
      observed_on: '2026-01-06',
      rank: 8,
      previous_rank: null,
      best_rank_30d: 8,
      worst_rank_30d: 12,
      observations_30d: 5,
      unranked_days_30d: 2,
      entered_top3: false,
      entered_top10: true,
    });
  });

  it('v_listing_accuracy: live listings by status, Accurate ÷ (Accurate + Inaccurate)', async () => {
    const rows = await select(sql`select business_id, business_name, listings, accurate,
        inaccurate, not_present, accuracy_score from v_listing_accuracy order by business_id`);
    expect(rows).toEqual([
      {
        business_id: 1,
        business_name: 'Acme Dental',
        listings: 3,
        accurate: 1,
        inaccurate: 1,
        not_present: 1,
        accuracy_score: 0.5,
      },
      // Nothing to rate: Not Present does not count against accuracy.
      {
        business_id: 2,
        business_name: 'Bright Bakery',
        listings: 1,
        accurate: 0,
        inaccurate: 0,
        not_present: 1,
        accuracy_score: null,
      },
    ]);
  });

  it('v_listing_accuracy_daily: each day carries the last status forward to the last sync', async () => {
    const rows = await select(sql`select day, listings, accurate, inaccurate, not_present,
        accuracy_score from v_listing_accuracy_daily where business_id = 1 order by day`);
    expect(rows).toEqual([
      {
        day: '2026-01-01',
        listings: 4,
        accurate: 3,
        inaccurate: 0,
        not_present: 1,
        accuracy_score: 1,
      },
      {
        day: '2026-01-02',
        listings: 3,
        accurate: 2,
        inaccurate: 0,
        not_present: 1,
        accuracy_score: 1,
      },
      {
        day: '2026-01-03',
        listings: 3,
        accurate: 1,
        inaccurate: 1,
        not_present: 1,
        accuracy_score: 0.5,
      },
      {
        day: '2026-01-04',
        listings: 3,
        accurate: 1,
        inaccurate: 1,
        not_present: 1,
        accuracy_score: 0.5,
      },
    ]);
  });

  it('v_newly_inaccurate: the alert with the business and what is wrong with the listing', async () => {
    const rows = await select(sql`select * from v_newly_inaccurate`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      business_id: 1,
      business_name: 'Acme Dental',
      business_city: 'Portland',
      listing_id: 2,
      site_name: 'Bing',
      previous_status: 'Accurate',
      alerted_status: 'Inaccurate',
      current_status: 'Inaccurate',
      still_inaccurate: true,
      name_valid: false,
      phone_valid: false,
      address_valid: true,
      wrong_fields: 'name, phone',
      listing_name: 'Acme Dentistry',
      listing_phone: '503-555-0199',
      listing_address: '1 Main St, Portland, OR, 97201',
      live_link: 'https://bing.example/acme',
    });
    expect(new Date(rows[0].detected_at).toISOString()).toBe('2026-01-03T10:00:00.000Z');
  });

  it('v_review_daily: new reviews, their average rating and responses per day', async () => {
    const rows = await select(sql`select day, new_reviews, rated_reviews, average_rating, responses
      from v_review_daily where business_id = 1 and site_name = 'Google' order by day`);
    // Social items and removed reviews do not count.
    expect(rows).toEqual([
      { day: '2026-01-01', new_reviews: 1, rated_reviews: 1, average_rating: 4, responses: 0 },
      { day: '2026-01-02', new_reviews: 2, rated_reviews: 2, average_rating: 3.5, responses: 1 },
      { day: '2026-01-03', new_reviews: 1, rated_reviews: 0, average_rating: null, responses: 1 },
    ]);
  });

  it('v_review_response_sla: unanswered answerable reviews, their age, time to first response', async () => {
    const rows = await select(sql`select * from v_review_response_sla order by site_name`);
    const google = rows.find((r) => r.site_name === 'Google');
    const yelp = rows.find((r) => r.site_name === 'Yelp');
    expect(google).toMatchObject({
      business_id: 1,
      reviews: 4,
      answered: 2,
      unanswered_answerable: 1,
      timed_responses: 2,
      average_hours_to_first_response: 27, // (6 h + 48 h) / 2
      median_hours_to_first_response: 27,
    });
    expect(new Date(google.oldest_unanswered_at).toISOString()).toBe('2026-01-02T20:00:00.000Z');
    expect(yelp).toMatchObject({
      reviews: 2,
      answered: 0,
      unanswered_answerable: 2,
      oldest_unanswered_age_hours: 50,
      average_unanswered_age_hours: 30,
      timed_responses: 0,
      average_hours_to_first_response: null,
      median_hours_to_first_response: null,
    });
  });

  it('0005 down restores the history table and the views read the same rows, up again too', async () => {
    const before = await viewOutputs(wh.db);
    // Migrations go down in reverse order: 0040 splits 0030's months, 0036 reads 0033's
    // months, 0033 packs 0019's visibility_days, 0031 drops 0019's keys, 0030 packs 0005's
    // table, 0019's views read 0005's read models.
    await revertRankMonthsCurrent(wh.db as never);
    await revertVisibilityLookups(wh.db as never);
    await revertVisibilityMonths(wh.db as never);
    await revertReadModelsWithoutKeys(wh.db as never);
    await revertRankMonths(wh.db as never);
    await revertLocalSeoViews(wh.db as never);
    await revertRankSeries(wh.db as never);
    const kinds = await select(sql`select table_name, table_type from information_schema.tables
      where table_schema = current_schema() and table_name in ('rank_observations', 'rank_history')`);
    expect(kinds).toEqual([{ table_name: 'rank_observations', table_type: 'BASE TABLE' }]);
    expect(await viewOutputs(wh.db)).toEqual(before);
    await rankSeries(wh.db as never);
    await localSeoViews(wh.db as never);
    await rankMonths(wh.db as never);
    await readModelsWithoutKeys(wh.db as never);
    await visibilityMonths(wh.db as never);
    await visibilityLookups(wh.db as never);
    await rankMonthsCurrent(wh.db as never);
    expect(await viewOutputs(wh.db)).toEqual(before);
    const views = await select(sql`select count(*)::int as n from information_schema.views
      where table_schema = current_schema() and table_name like 'v\\_%'`);
    expect(views).toEqual([{ n: BI_VIEWS.length + LOCAL_SEO_VIEWS.length }]);
  });
});
