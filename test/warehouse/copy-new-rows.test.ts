/**
 * Rows new to their business go by one COPY per table (src/warehouse/write/bulk-write.ts,
 * `copyRows`): the values arrive exactly as the upsert's typed arrays bring them, a first
 * sync sends COPY for its reviews, and a review id stored under another business (the
 * COPY's unique violation) costs a second write of the business, not the business (that
 * second write quarantines the review and leaves the row where it is).
 *
 * PostgreSQL only: PGlite has no standard input for COPY, and the sync never asks it to.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { copyRows, insertRows } from '../../src/warehouse/write/bulk-write.ts';
import { skipOnPglite, testBackends } from '../helpers/database.ts';
import { sync, worldPerTest } from '../sync/harness.ts';

const AWKWARD = [
  'tab\there',
  'line\nbreak and \r\n both',
  'back\\slash \\N and \\t as text',
  'quotes " and \' and {braces}, commas',
  '',
  'NULL',
  'ünïcödé ✓ 𝄞',
];

const VERSION_COLUMNS = {
  business_id: 'bigint',
  observed_at: 'timestamptz',
  content_hash: 'text',
  profile: 'jsonb',
  run_id: 'uuid',
} as const;

describe.each(testBackends)('COPY for new rows (%s)', (backend) => {
  const world = worldPerTest(backend, { seed: 7, accounts: 1, businessesPerAccount: 2 });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('stores text, jsonb, nulls and timestamps as the typed-array insert does', async (context) => {
    skipOnPglite(context, backend, 'no standard input for COPY');
    const { db } = world.warehouse;
    const at = new Date('2026-11-24T04:00:00.123Z');
    const rows = (businessId: number) =>
      AWKWARD.map((text, i) => ({
        business_id: businessId,
        observed_at: new Date(at.getTime() + i * 1000),
        content_hash: text,
        profile: { text, list: [text, null, 1.5], nested: { quote: '"\\' } },
        run_id: i % 2 === 0 ? null : '00000000-0000-4000-8000-00000000000a',
      }));
    expect(await insertRows(db, 'business_versions', VERSION_COLUMNS, rows(1))).toBe(
      AWKWARD.length,
    );
    expect(await copyRows(db, 'business_versions', VERSION_COLUMNS, rows(2))).toBe(AWKWARD.length);

    const { rows: stored } = await sql<{
      business_id: number;
      observed_at: Date;
      content_hash: string;
      profile: unknown;
      run_id: string | null;
    }>`select business_id, observed_at, content_hash, profile, run_id
         from business_versions order by business_id, observed_at`.execute(db);
    const of = (businessId: number) =>
      stored
        .filter((row) => row.business_id === businessId)
        .map(({ business_id: _, ...row }) => row);
    // The oracle is the JS values themselves, not either write path.
    expect(of(2).map((row) => row.content_hash)).toEqual(AWKWARD);
    expect(of(2).map((row) => row.profile)).toEqual(rows(2).map((row) => row.profile));
    expect(of(2).map((row) => row.observed_at.toISOString())).toEqual(
      rows(2).map((row) => row.observed_at.toISOString()),
    );
    expect(of(2).map((row) => row.run_id)).toEqual(rows(2).map((row) => row.run_id));
    expect(of(2)).toEqual(of(1));
  });

  it('sends a first sync’s reviews by COPY, reads back no stored rows, and writes the rows the sandbox serves', async (context) => {
    skipOnPglite(context, backend, 'no standard input for COPY');
    const { sandbox, api, warehouse } = world;
    const sent = spyOnStatements();
    const result = await sync(warehouse, api, sandbox.credentials);
    expect(result.status).toBe('succeeded');
    expect(sent().filter((text) => text.startsWith('copy "reviews"'))).toHaveLength(2);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from reviews`.execute(
      warehouse.db,
    );
    expect(rows[0]?.n).toBe(result.stats.tables['reviews']?.inserted);
    expect(rows[0]?.n).toBeGreaterThan(32);
    // A business stored for the first time has no rows to read back: none is read.
    const readsStored = (texts: string[]) =>
      texts.filter((text) => /^select "listing_id"|^select "keyword_id"/.test(text)).length;
    expect(readsStored(sent())).toBe(0);
    const before = sent().length;
    expect((await sync(warehouse, api, sandbox.credentials, { reapply: true })).status).toBe(
      'succeeded',
    );
    expect(readsStored(sent().slice(before))).toBe(4);
  });

  it('writes a business again without COPY when a new review’s id is stored under another business, and quarantines it there', async (context) => {
    skipOnPglite(context, backend, 'no standard input for COPY');
    const { sandbox, api, warehouse } = world;
    const { db } = warehouse;
    expect((await sync(warehouse, api, sandbox.credentials)).status).toBe('succeeded');
    const { rows: owners } = await sql<{ business_id: number; n: number }>`
        select business_id, count(*)::int as n from reviews group by business_id
        order by business_id`.execute(db);
    const [a, b] = owners as [{ business_id: number; n: number }, { business_id: number }];
    const moved = (
      await sql<{ review_id: string }>`
          select review_id from reviews where business_id = ${a.business_id}`.execute(db)
    ).rows.map((row) => row.review_id);
    // Every review of A now stands under B (as an id served under two businesses once
    // moved it): A's next read finds none of its own stored.
    await sql`update reviews set business_id = ${b.business_id}
                 where business_id = ${a.business_id}`.execute(db);
    await sql`update review_responses set business_id = ${b.business_id}
                 where business_id = ${a.business_id}`.execute(db);

    const sent = spyOnStatements();
    const result = await sync(warehouse, api, sandbox.credentials, { reapply: true });
    expect(result.status).toBe('partial');
    expect(result.stats.businesses.failed).toBe(0);
    // The COPY was tried and refused; the upsert left the rows with B and A's copies went
    // to quarantine, each naming both businesses.
    expect(sent().some((text) => text.startsWith('copy "reviews"'))).toBe(true);
    expect(result.stats.quarantined).toBe(a.n);
    const { rows: quarantined } = await sql<{ n: number }>`
        select count(*)::int as n from quarantine
         where run_id = ${result.runId} and business_id = ${a.business_id}
           and stream = 'reviews'
           and reason like ${`% is stored under business ${b.business_id}; business ${a.business_id}'s answer carries it too`}`.execute(
      db,
    );
    expect(quarantined[0]?.n).toBe(a.n);
    const { rows: stayed } = await sql<{ n: number }>`
        select count(*)::int as n from reviews
         where business_id = ${b.business_id} and review_id = any(${moved}::uuid[])`.execute(db);
    expect(stayed[0]?.n).toBe(a.n);
  });
});

/** The texts of the statements pg is given from here on (every client: the pool's too). */
function spyOnStatements(): () => string[] {
  const texts: string[] = [];
  const query = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    const [first] = args as [unknown];
    const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
    if (typeof text === 'string') texts.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as never);
  return () => [...texts];
}
