/**
 * A warehouse built by the previous release (migrations up to 0004: `rank_observations`
 * a table, views that read the whole history) with 30 days of data in the shape its
 * writers left: one rank row per business, keyword, site and collected day (gaps, unranked
 * days), listing history rows on change only, reviews and responses. Migrating it to the
 * latest schema must lose no row and change no view's columns or output.
 */
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateTo, migrateToLatest } from '../../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../../helpers/database.ts';
import { BI_VIEWS, viewOutputs } from './view-outputs.ts';

const PREVIOUS_RELEASE = '0004_review_response_requests';
const FIRST_DAY = '2026-03-01';
const DAYS = 30;

// biome-ignore lint/suspicious/noExplicitAny: the old schema has no Database type here
async function loadOldHistory(db: Kysely<any>): Promise<void> {
  await sql`insert into accounts (name, user_email, base_url, last_synced_at)
    values ('east', 'ops@example.com', 'https://upstream.example',
      (${FIRST_DAY}::date + ${sql.lit(DAYS - 1)} + time '03:30')::timestamp at time zone 'UTC')`.execute(
    db,
  );
  // Six businesses; the sixth left the list on day 20.
  await sql`insert into businesses (business_id, account_name, name, city, content_hash,
      first_seen_at, last_seen_at, profile_changed_at, archived_at)
    select b, 'east', 'Business ' || b, 'Portland', 'h', t0, t0, t0,
      case when b = 6 then t0 + interval '19 days' end
    from generate_series(1, 6) b,
      lateral (select (${FIRST_DAY}::date + time '03:00')::timestamp at time zone 'UTC' as t0) t`.execute(
    db,
  );
  // Ranks: 2 keywords × 3 sites, a day in seven not collected, a fifth of the rest unranked.
  await sql`insert into rank_observations (business_id, keyword, site, observed_on, rank,
      observed_at, run_id)
    select b, k, s, ${FIRST_DAY}::date + d,
      case when h % 5 = 0 then null else 1 + (h / 5) % 40 end,
      (${FIRST_DAY}::date + d + time '03:00')::timestamp at time zone 'UTC',
      gen_random_uuid()
    from generate_series(1, 6) b,
      unnest(array['dentist', 'dentist near me']) k,
      unnest(array['Google', 'Bing', 'Google_new.local']) s,
      generate_series(0, ${sql.lit(DAYS - 1)}) d,
      lateral (select abs(hashtext(b || k || s || d)) as h) x
    where abs(hashtext(k || s || d || b)) % 7 <> 0 and (b <> 6 or d < 20)`.execute(db);
  // Listings: 4 per business, a status per day, history only where the status changed.
  // Business 2's listing 3 was removed on day 25.
  await sql`create temporary table listing_days as
    select b, l, d, (array['Accurate', 'Inaccurate', 'Not Present'])[
        1 + case when abs(hashtext(b || '/' || l || '/' || (d / 6))) % 4 = 0 then 1
          when l = 4 then 2 else 0 end] as status,
      (${FIRST_DAY}::date + d + time '03:00')::timestamp at time zone 'UTC' as at
    from generate_series(1, 6) b, generate_series(1, 4) l, generate_series(0, ${sql.lit(DAYS - 1)}) d
    where (b <> 6 or d < 20) and (b <> 2 or l <> 3 or d < 24)`.execute(db);
  await sql`insert into listings (business_id, listing_id, site_name, status, content_hash,
      first_seen_at, last_seen_at, status_changed_at, removed_at)
    select distinct on (b, l) b, l, 'Site ' || l, status, 'h', at, at, at,
      case when b = 2 and l = 3 then at + interval '1 day' end
    from listing_days
    order by b, l, d desc`.execute(db);
  await sql`insert into listing_status_history (business_id, listing_id, observed_at, site_name,
      status, previous_status, run_id)
    select b, l, at, 'Site ' || l, status, previous, gen_random_uuid()
    from (
      select *, lag(status) over (partition by b, l order by d) as previous from listing_days
    ) changes
    where previous is distinct from status`.execute(db);
  await sql`drop table listing_days`.execute(db);
  // Reviews: two a day per business on two sites, every third answered the next day.
  await sql`insert into reviews (review_id, business_id, site_name, category, type, content,
      rating, reviewed_at, can_respond, response_count, content_hash, first_seen_at, last_seen_at)
    select md5(b || '/' || n)::uuid, b, case when n % 2 = 0 then 'Google' else 'Yelp' end,
      case when n % 9 = 0 then 'social' else 'review' end, 'review', 'text',
      case when n % 4 = 0 then null else 1 + n % 5 end,
      (${FIRST_DAY}::date + n / 2 + time '09:00')::timestamp at time zone 'UTC',
      true, (n % 3 = 0)::int, 'h', now(), now()
    from generate_series(1, 6) b, generate_series(0, ${sql.lit(2 * DAYS - 1)}) n`.execute(db);
  await sql`insert into review_responses (response_id, review_id, business_id, content,
      responded_at, content_hash, first_seen_at, last_seen_at)
    select md5('r' || r.review_id)::uuid, r.review_id, r.business_id, 'thanks',
      r.reviewed_at + interval '1 day', 'h', now(), now()
    from reviews r where r.response_count > 0`.execute(db);
  await sql`insert into alerts (kind, dedupe_key, account_name, business_id, listing_id,
      site_name, previous_status, status, detected_at)
    select 'listing_inaccurate', 'k' || business_id || '/' || listing_id || '/' || observed_at,
      'east', business_id, listing_id, site_name, previous_status, status, observed_at
    from listing_status_history where status = 'Inaccurate' and previous_status is not null`.execute(
    db,
  );
}

describe.each(testBackends)('migrating a previous release (%s)', (backend) => {
  let wh: TestWarehouse | undefined;
  afterEach(async () => {
    await wh?.close();
    wh = undefined;
  });

  it('keeps every rank observation and every view output, columns included', async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    await migrateTo(wh.db, PREVIOUS_RELEASE);
    await loadOldHistory(wh.db);
    const { rows: old } = await sql<{ n: number }>`
      select count(*)::int as n from rank_observations`.execute(wh.db);
    const before = await viewOutputs(wh.db);
    // Every view has rows: an empty comparison would prove nothing.
    for (const view of BI_VIEWS) expect(before[view]?.rows.length, view).toBeGreaterThan(0);

    await migrateToLatest(wh.db);

    const { rows: converted } = await sql<{ series: number; history: number; latest: number }>`
      select (select count(*)::int from rank_series) as series,
        (select count(*)::int from rank_history) as history,
        (select count(*)::int from rank_latest) as latest`.execute(wh.db);
    expect(converted[0]).toEqual({ series: 36, history: old[0]?.n, latest: 36 });
    const after = await viewOutputs(wh.db);
    for (const relation of Object.keys(before)) {
      expect(after[relation], relation).toEqual(before[relation]);
    }
  });

  it('refuses a rank smallint cannot hold, naming the column and the rule, and applies nothing', async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    await migrateTo(wh.db, PREVIOUS_RELEASE);
    await loadOldHistory(wh.db);
    await sql`update rank_observations set rank = 40000
      where business_id = 1 and observed_on = ${FIRST_DAY}`.execute(wh.db);
    await expect(migrateToLatest(wh.db)).rejects.toThrow(
      /rank_observations\.rank: \d+ rows hold a rank outside -32768\.\.32767/,
    );
    const { rows } = await sql<{ kind: string }>`
      select table_type as kind from information_schema.tables
      where table_schema = current_schema() and table_name = 'rank_observations'`.execute(wh.db);
    expect(rows).toEqual([{ kind: 'BASE TABLE' }]);
  });
});
