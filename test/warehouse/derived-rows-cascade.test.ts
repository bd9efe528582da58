/**
 * Migrations 0013, 0031 and 0034 dropped the foreign keys of the rows the sync derives
 * (business, listing and review versions, rank history and latest, the read models, rank
 * series, accuracy days, answers applied); deleting a parent still deletes them,
 * through the parents' delete triggers, also when the parent goes by cascade.
 */
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from '../sync/harness.ts';

const DERIVED = [
  'business_versions',
  'listing_status_history',
  'review_versions',
  'rank_history',
  'rank_latest',
  'visibility_days',
  'listing_fixes',
  'review_backlog',
  'rank_series',
  'listing_accuracy_days',
  'business_answers',
] as const;

/** Rows of each derived table that belong to `businessId`, and to the others. */
async function derivedCounts(db: Kysely<Database>, businessId: number) {
  const { rows } = await sql<{ relation: string; mine: number; others: number }>`
    select 'business_versions' as relation,
           count(*) filter (where business_id = ${businessId})::int as mine,
           count(*) filter (where business_id <> ${businessId})::int as others
      from business_versions
    union all
    select 'listing_status_history', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from listing_status_history
    union all
    select 'review_versions', count(*) filter (where r.business_id = ${businessId})::int,
           count(*) filter (where r.business_id is distinct from ${businessId})::int
      from review_versions v left join reviews r using (review_id)
    union all
    select 'rank_history', count(*) filter (where s.business_id = ${businessId})::int,
           count(*) filter (where s.business_id is distinct from ${businessId})::int
      from rank_history h left join rank_series s using (series_id)
    union all
    select 'rank_latest', count(*) filter (where s.business_id = ${businessId})::int,
           count(*) filter (where s.business_id is distinct from ${businessId})::int
      from rank_latest l left join rank_series s using (series_id)
    union all
    select 'visibility_days', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from visibility_days
    union all
    select 'listing_fixes', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from listing_fixes
    union all
    select 'review_backlog', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from review_backlog
    union all
    select 'rank_series', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from rank_series
    union all
    select 'listing_accuracy_days', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from listing_accuracy_days
    union all
    select 'business_answers', count(*) filter (where business_id = ${businessId})::int,
           count(*) filter (where business_id <> ${businessId})::int
      from business_answers`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.relation, { mine: r.mine, others: r.others }]));
}

describe.each(testBackends)('derived rows without foreign keys (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeEach(async () => {
    sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 2, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
    expect((await sync(warehouse, api, sandbox.credentials)).status).toBe('succeeded');
  });
  afterEach(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('have no foreign key left, and go with their business when it is deleted', async () => {
    const { rows: keys } = await sql<{ table: string }>`
      select conrelid::regclass::text as table from pg_constraint
      where contype = 'f' and connamespace = current_schema()::regnamespace`.execute(warehouse.db);
    for (const table of DERIVED) expect(keys.map((k) => k.table)).not.toContain(table);

    const [victim, other] = await warehouse.db
      .selectFrom('businesses')
      .select('business_id')
      .orderBy('business_id')
      .execute();
    const before = await derivedCounts(warehouse.db, victim!.business_id);
    for (const table of DERIVED) {
      expect(before[table]?.mine, table).toBeGreaterThan(0);
      expect(before[table]?.others, table).toBeGreaterThan(0);
    }
    await warehouse.db
      .deleteFrom('businesses')
      .where('business_id', '=', victim!.business_id)
      .execute();
    const after = await derivedCounts(warehouse.db, victim!.business_id);
    for (const table of DERIVED) {
      // No orphan: a row whose parent is gone would count under `others` (a null join).
      expect(after[table], table).toEqual({ mine: 0, others: before[table]?.others });
    }
    expect(other).toBeDefined();
  });

  it('go with a listing, a review or a rank series deleted alone', async () => {
    const listing = await warehouse.db
      .selectFrom('listings')
      .select(['business_id', 'listing_id'])
      .limit(1)
      .executeTakeFirstOrThrow();
    const review = await warehouse.db
      .selectFrom('reviews')
      .select('review_id')
      .limit(1)
      .executeTakeFirstOrThrow();
    const series = await warehouse.db
      .selectFrom('rank_series')
      .select('series_id')
      .limit(1)
      .executeTakeFirstOrThrow();
    const count = async (query: ReturnType<typeof sql<{ n: number }>>) =>
      (await query.execute(warehouse.db)).rows[0]?.n;
    const history = () =>
      count(sql<{ n: number }>`select count(*)::int as n from listing_status_history
        where business_id = ${listing.business_id} and listing_id = ${listing.listing_id}`);
    const versions = () =>
      count(
        sql<{
          n: number;
        }>`select count(*)::int as n from review_versions where review_id = ${review.review_id}`,
      );
    const ranks = () =>
      count(sql<{
        n: number;
      }>`select (select count(*) from rank_history where series_id = ${series.series_id})::int
        + (select count(*) from rank_latest where series_id = ${series.series_id})::int as n`);
    expect(await history()).toBeGreaterThan(0);
    expect(await versions()).toBeGreaterThan(0);
    expect(await ranks()).toBeGreaterThan(0);
    await warehouse.db
      .deleteFrom('listings')
      .where('business_id', '=', listing.business_id)
      .where('listing_id', '=', listing.listing_id)
      .execute();
    await warehouse.db
      .deleteFrom('review_responses')
      .where('review_id', '=', review.review_id)
      .execute();
    await warehouse.db.deleteFrom('reviews').where('review_id', '=', review.review_id).execute();
    await warehouse.db
      .deleteFrom('rank_series')
      .where('series_id', '=', series.series_id)
      .execute();
    expect(await history()).toBe(0);
    expect(await versions()).toBe(0);
    expect(await ranks()).toBe(0);
  });
});
