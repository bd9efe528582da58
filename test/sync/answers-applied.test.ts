/**
 * Issue 21: a read whose body is the one its rows were last built from is neither parsed
 * nor written (docs/warehouse.md, "Answers applied"). The oracle is the raw zone's own
 * record of each read (`raw_reads.body_hash`) and the rows in the tables, over the sandbox.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { addKeyword } from '../../src/api/index.ts';
import { ANSWER_READS, BUSINESS_READS, DAILY_READS } from '../../src/streams/index.ts';
import { renderSyncSummary } from '../../src/sync/summary.ts';
import { APPLIED_BY } from '../../src/warehouse/write/applied-answers.ts';
import { testBackends } from '../helpers/database.ts';
import { count, nightOf, rowsWritten, sync, worldPerTest } from './harness.ts';

const WORLD = { seed: 2121, accounts: 1, businessesPerAccount: 3, startDate: '2026-05-04' };

/**
 * `business_answers` (a row per business and read) as a row per business, its reads side
 * by side, as these assertions read it.
 */
const BY_BUSINESS = sql`(select business_id, min(applied_by) as applied_by,
    ${sql.join(
      ['business', 'listings', 'reviews', 'socials', 'rankings', 'keywords'].map(
        (read) =>
          sql`max(body_hash) filter (where read = ${sql.lit(read)}) as ${sql.id(`${read}_hash`)}`,
      ),
    )},
    max(applied_on::text) filter (where read = 'listings') as listings_on,
    max(applied_on::text) filter (where read = 'rankings') as rankings_on
  from business_answers group by business_id)`;
/** Reads of one business: its profile, listings, reviews, social items, ranks, keywords, … */
const READS = ANSWER_READS.length;
/**
 * The read a raw read was, by its operation (the descriptors' reads); the one operation two
 * reads share, reviews and social items, by its request below.
 */
const READ_OF_OPERATION = sql.join(
  BUSINESS_READS.filter((r) => r.operation !== 'list_reviews').map(
    (r) => sql`when ${sql.lit(r.operation)} then ${sql.lit(r.read)}`,
  ),
  sql` `,
);

describe.each(testBackends)('answers applied (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  const night = (extra: Parameters<typeof sync>[3] = {}) =>
    sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => nightOf(world.sandbox),
      ...extra,
    });
  const db = () => world.warehouse.db;
  const storedAnswers = () =>
    db()
      .selectFrom('business_answers')
      .selectAll()
      .orderBy('business_id')
      .orderBy('read')
      .execute();
  const answersByBusiness = async () =>
    (
      await sql<{
        business_id: number;
        applied_by: string;
        listings_on: string | null;
        rankings_on: string | null;
      }>`select * from ${BY_BUSINESS} a order by business_id`.execute(db())
    ).rows;
  const firstBusiness = async () =>
    Number(
      (
        await db()
          .selectFrom('businesses')
          .select('business_id')
          .orderBy('business_id')
          .executeTakeFirstOrThrow()
      ).business_id,
    );

  it('reads the same night again without parsing or writing, and records which raw body built each stream', async () => {
    const first = await night();
    expect(first.status).toBe('succeeded');
    const businesses = first.stats.businesses.synced;
    expect(businesses).toBe(3);
    expect(first.stats.answersUnchanged ?? 0).toBe(0);

    // Each stream's recorded body is the one the raw zone kept for that read of the run.
    const { rows } = await sql<{
      operation: string;
      request: string;
      recorded: string | null;
      kept: string;
    }>`
      select r.operation, r.request, r.body_hash as kept, a.body_hash as recorded
      from raw_reads r join business_answers a on a.business_id = r.business_id
        and a.read = case r.operation
          ${READ_OF_OPERATION}
          when 'list_reviews' then case when r.request like '%social%' then 'socials'
            else 'reviews' end
        end
      where r.run_id = ${first.runId} and r.business_id is not null
        and r.operation <> 'get_response_status'`.execute(db());
    expect(rows).toHaveLength(businesses * READS);
    for (const row of rows) expect(row.recorded, `${row.operation} ${row.request}`).toBe(row.kept);
    const day = nightOf(world.sandbox).toISOString().slice(0, 10);
    const answers = await storedAnswers();
    const byBusiness = await answersByBusiness();
    expect(byBusiness.map((a) => [a.applied_by, a.listings_on, a.rankings_on])).toEqual(
      Array.from({ length: businesses }, () => [APPLIED_BY, day, day]),
    );

    const again = await night();
    expect(again.status).toBe('succeeded');
    expect(again.stats.answersUnchanged).toBe(businesses * READS);
    expect(rowsWritten(again)).toBe(0);
    // Only the business rows (from the list) and reference data were compared; no stream's
    // writer ran.
    for (const table of ['listings', 'reviews', 'rank_observations', 'keywords']) {
      expect(again.stats.tables).not.toHaveProperty(table);
    }
    for (const table of ['listings', 'reviews', 'rank_observations', 'keywords']) {
      expect(first.stats.tables).toHaveProperty(table);
    }
    expect(renderSyncSummary(again, { warehouse: 'test' })).toContain(
      `${businesses * READS} answer(s) as their rows already were (not parsed again)`,
    );
    // No transaction was needed, but every read of the run is kept in the raw zone.
    expect(
      await count(
        world.warehouse,
        'raw_reads',
        sql`run_id = ${again.runId} and business_id is not null and operation <> 'get_response_status'`,
      ),
    ).toBe(businesses * READS);
    // Nothing of the record moved either.
    expect(await storedAnswers()).toEqual(answers);
  });

  it('writes the one answer that changed and leaves the others unparsed', async () => {
    await night();
    const credential = world.sandbox.credentials[0];
    if (!credential) throw new Error('the sandbox has a credential');
    const businessId = await firstBusiness();
    await addKeyword(world.api, credential, businessId, 'answers applied test');

    const again = await night();
    expect(again.status).toBe('succeeded');
    expect(
      await count(
        world.warehouse,
        'keywords',
        sql`business_id = ${businessId} and keyword = 'answers applied test'`,
      ),
    ).toBe(1);
    // The keywords read changed (and the ranks read may list the new keyword); every
    // other read of every business was its recorded body.
    expect(again.stats.answersUnchanged).toBeGreaterThanOrEqual(3 * READS - 2);
    expect(again.stats.answersUnchanged).toBeLessThan(3 * READS);
    const keptKeywords = await sql<{ kept: string }>`
      select body_hash as kept from raw_reads
      where run_id = ${again.runId} and business_id = ${businessId} and operation = 'list_keywords'`.execute(
      db(),
    );
    const recorded = await db()
      .selectFrom('business_answers')
      .select('body_hash')
      .where('business_id', '=', businessId)
      .where('read', '=', 'keywords')
      .executeTakeFirstOrThrow();
    expect(recorded.body_hash).toBe(keptKeywords.rows[0]?.kept);
  });

  it('on the next day writes the daily rows of listings and ranks, and parses nothing else', async () => {
    const first = await night();
    const businesses = first.stats.businesses.synced;
    const nextDay = new Date(nightOf(world.sandbox).getTime() + 86_400_000);
    const day = nextDay.toISOString().slice(0, 10);
    const series = await count(world.warehouse, 'rank_series');
    expect(series).toBeGreaterThan(0);

    // The sandbox's day stands still: the same bodies, read on a later day.
    const next = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => nextDay,
    });
    expect(next.status).toBe('succeeded');
    // Profile, reviews, social items and keywords: as recorded. Listings and ranks: parsed.
    expect(next.stats.answersUnchanged).toBe(businesses * (READS - DAILY_READS.length));
    expect(await count(world.warehouse, 'rank_history', sql`observed_on = ${day}::date`)).toBe(
      series,
    );
    const withListings = await count(
      world.warehouse,
      'businesses',
      sql`exists (select 1 from listings l where l.business_id = businesses.business_id)`,
    );
    expect(await count(world.warehouse, 'listing_accuracy_days', sql`day = ${day}::date`)).toBe(
      withListings,
    );
    const answers = (await answersByBusiness()).map(({ listings_on, rankings_on }) => ({
      listings_on,
      rankings_on,
    }));
    expect(answers).toEqual(
      Array.from({ length: businesses }, () => ({ listings_on: day, rankings_on: day })),
    );
  });

  it('leaves rows changed by hand until a run asked to reapply', async () => {
    await night();
    const gone = await db()
      .deleteFrom('keywords')
      .where('business_id', 'in', sql<number>`(select business_id from keywords limit 1)`)
      .executeTakeFirst();
    const deleted = Number(gone.numDeletedRows);
    expect(deleted).toBeGreaterThan(0);
    const before = await count(world.warehouse, 'keywords');

    const again = await night();
    expect(await count(world.warehouse, 'keywords')).toBe(before);
    expect(rowsWritten(again)).toBe(0);

    const reapplied = await night({ reapply: true });
    expect(reapplied.stats.answersUnchanged ?? 0).toBe(0);
    expect(await count(world.warehouse, 'keywords')).toBe(before + deleted);
  });

  it('takes nothing as applied for an archived business, or from another write path', async () => {
    const first = await night();
    const businesses = first.stats.businesses.synced;
    const archived = await firstBusiness();
    await db()
      .updateTable('businesses')
      .set({ archived_at: new Date() })
      .where('business_id', '=', archived)
      .execute();

    const second = await night();
    expect(second.stats.answersUnchanged).toBe((businesses - 1) * READS);
    expect(await count(world.warehouse, 'businesses', sql`archived_at is not null`)).toBe(0);

    await db()
      .updateTable('business_answers')
      .set({ applied_by: 'an earlier write path' })
      .execute();
    const third = await night();
    expect(third.stats.answersUnchanged ?? 0).toBe(0);
    expect(rowsWritten(third)).toBe(0);
    const recorded = await db()
      .selectFrom('business_answers')
      .select('applied_by')
      .distinct()
      .execute();
    expect(recorded).toEqual([{ applied_by: APPLIED_BY }]);
  });

  it('records no body for a stream written with a record quarantined, so its next read is parsed', async () => {
    world.sandbox.setFaults({ malformedRate: 0.3 });
    const first = await night();
    expect(first.stats.quarantined).toBeGreaterThan(0);
    const { rows } = await sql<{ business_id: number; stream: string; recorded: string | null }>`
      select q.business_id, q.stream,
        case q.stream
          when 'listings' then a.listings_hash
          when 'keywords' then a.keywords_hash
          when 'rankings' then a.rankings_hash
          when 'businesses' then a.business_hash
          else coalesce(a.reviews_hash, a.socials_hash)
        end as recorded
      from quarantine q join ${BY_BUSINESS} a on a.business_id = q.business_id
      where q.run_id = ${first.runId}`.execute(db());
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.recorded, `${row.business_id} ${row.stream}`).toBeNull();

    const again = await night();
    // Every stream with a quarantined record was read and parsed again.
    const short = new Set(rows.map((row) => `${row.business_id}:${row.stream}`));
    expect(again.stats.answersUnchanged).toBeLessThanOrEqual(3 * READS - short.size);
  });
});
