/**
 * Migration 0022 turns `business_answers` from a column pair per read into a row per
 * business and read (docs/warehouse.md, "Answers applied"): what a warehouse recorded
 * before it is still taken as applied after it, and reverting it gives the old rows back.
 */
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateTo, migrateToLatest } from '../../src/warehouse/driver/migrate.ts';
import {
  ANSWER_READS,
  APPLIED_BY,
  readAppliedAnswers,
} from '../../src/warehouse/write/applied-answers.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';

const BEFORE = '0021_review_backlog';
const AT = '2026-05-04T03:00:00.000Z';

// biome-ignore lint/suspicious/noExplicitAny: the old schema has no Database type here
async function loadOldAnswers(db: Kysely<any>): Promise<void> {
  await sql`insert into accounts (name, user_email, base_url)
    values ('east', 'ops@example.com', 'https://upstream.example')`.execute(db);
  await sql`insert into businesses (business_id, account_name, name, content_hash,
      first_seen_at, last_seen_at, profile_changed_at)
    select b, 'east', 'Business ' || b, 'h', ${AT}::timestamptz, ${AT}::timestamptz,
      ${AT}::timestamptz
    from generate_series(1, 3) b`.execute(db);
  // 1: every read known; 2: reviews written short (null), no keywords yet; 3: another path.
  await sql`insert into business_answers (business_id, applied_by, business_hash,
      listings_hash, listings_on, reviews_hash, socials_hash, rankings_hash, rankings_on,
      keywords_hash, updated_at)
    values
      (1, ${APPLIED_BY}, 'b1', 'l1', '2026-05-04', 'r1', 's1', 'k1', '2026-05-04', 'w1', ${AT}),
      (2, ${APPLIED_BY}, 'b2', 'l2', '2026-05-03', null, null, 'k2', '2026-05-04', null, ${AT}),
      (3, 'write-path-1', 'b3', null, null, null, null, null, null, null, ${AT})`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: either schema's table will do
async function rows(db: Kysely<any>, columns: string): Promise<unknown[]> {
  const { rows } = await sql`select ${sql.raw(columns)} from business_answers
    order by 1, 2`.execute(db);
  return rows;
}

describe.each(testBackends)('migration 0022: business_answers by read (%s)', (backend) => {
  let wh: TestWarehouse | undefined;
  afterEach(async () => {
    await wh?.close();
    wh = undefined;
  });

  it('fills a row per known read, keeps what was applied, and reverts to the columns', async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    await migrateTo(wh.db, BEFORE);
    await loadOldAnswers(wh.db);
    const old = await rows(wh.db, '*');

    await migrateToLatest(wh.db);
    expect(await rows(wh.db, 'business_id, read, body_hash, applied_on, applied_by')).toEqual([
      {
        business_id: 1,
        read: 'business',
        body_hash: 'b1',
        applied_on: null,
        applied_by: APPLIED_BY,
      },
      {
        business_id: 1,
        read: 'keywords',
        body_hash: 'w1',
        applied_on: null,
        applied_by: APPLIED_BY,
      },
      {
        business_id: 1,
        read: 'listings',
        body_hash: 'l1',
        applied_on: '2026-05-04',
        applied_by: APPLIED_BY,
      },
      {
        business_id: 1,
        read: 'rankings',
        body_hash: 'k1',
        applied_on: '2026-05-04',
        applied_by: APPLIED_BY,
      },
      {
        business_id: 1,
        read: 'reviews',
        body_hash: 'r1',
        applied_on: null,
        applied_by: APPLIED_BY,
      },
      {
        business_id: 1,
        read: 'socials',
        body_hash: 's1',
        applied_on: null,
        applied_by: APPLIED_BY,
      },
      {
        business_id: 2,
        read: 'business',
        body_hash: 'b2',
        applied_on: null,
        applied_by: APPLIED_BY,
      },
      {
        business_id: 2,
        read: 'listings',
        body_hash: 'l2',
        applied_on: '2026-05-03',
        applied_by: APPLIED_BY,
      },
      {
        business_id: 2,
        read: 'rankings',
        body_hash: 'k2',
        applied_on: '2026-05-04',
        applied_by: APPLIED_BY,
      },
      {
        business_id: 3,
        read: 'business',
        body_hash: 'b3',
        applied_on: null,
        applied_by: 'write-path-1',
      },
    ]);
    // What the sync reads of them is what it read of the columns.
    const first = await readAppliedAnswers(wh.db, 1);
    // A read added since 0022 (none of these columns held it) has no body known.
    const since0022 = Object.fromEntries(ANSWER_READS.map((read) => [read, null]));
    expect(first.hashes).toEqual({
      ...since0022,
      business: 'b1',
      listings: 'l1',
      reviews: 'r1',
      socials: 's1',
      rankings: 'k1',
      keywords: 'w1',
    });
    expect(first.days).toEqual({ listings: '2026-05-04', rankings: '2026-05-04' });
    expect(first.stored?.business_id).toBe(1);
    const second = await readAppliedAnswers(wh.db, 2);
    expect(second.hashes).toEqual({
      ...since0022,
      business: 'b2',
      listings: 'l2',
      reviews: null,
      socials: null,
      rankings: 'k2',
      keywords: null,
    });
    expect(second.days).toEqual({ listings: '2026-05-03', rankings: '2026-05-04' });
    // Another write path's record is none.
    expect(await readAppliedAnswers(wh.db, 3)).toEqual({ hashes: {}, days: {} });

    await migrateTo(wh.db, BEFORE);
    expect(await rows(wh.db, '*')).toEqual(old);
  });
});
