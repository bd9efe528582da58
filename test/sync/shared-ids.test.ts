/**
 * One owner rule, the same live and in replay (docs/warehouse.md, "Ids under two
 * businesses"): an id the upstream shows under two businesses of an account belongs to the
 * lowest business id among the claimants of the night it first appeared, and an owner
 * once stored is kept; the other copies are quarantined. Reviews and keywords alike. It
 * does not depend on which business's reads end first, so `replay --in-place --dry-run`
 * plans the same twice, and its merge never moves a live row to another business.
 *
 * The sandbox never serves one id twice: a proxy in front of it (test/helpers/
 * sharing-proxy.ts) appends one business's reviews and keywords to the other's answers, on
 * the wire, both ways.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { listBusinesses, listKeywords } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { replayInPlace } from '../../src/replay/in-place.ts';
import { renderSyncSummary } from '../../src/sync/summary.ts';
import { testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { type SharingState, sharingState, startSharingProxy } from '../helpers/sharing-proxy.ts';
import { nightOf, sync, worldPerTest } from './harness.ts';

const WORLD = { seed: 7, accounts: 1, businessesPerAccount: 2, startDate: '2026-06-01' };

describe.each(testBackends)('ids under two businesses (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  let state: SharingState;
  let proxy: Awaited<ReturnType<typeof startSharingProxy>>;
  let credential: Credential;
  beforeEach(async () => {
    state = sharingState();
    proxy = await startSharingProxy(world.sandbox.baseUrl, state);
    credential = { ...(world.sandbox.credentials[0] as Credential), baseUrl: proxy.url };
  });
  afterEach(async () => {
    await proxy.close();
  });

  const db = () => world.warehouse.db;
  const night = (extra: Parameters<typeof sync>[3] = {}) =>
    sync(world.warehouse, world.api, [credential], { now: () => nightOf(world.sandbox), ...extra });
  const businesses = async () =>
    (await listBusinesses(world.api, credential)).records.map((b) => b.id).sort((x, y) => x - y);
  const bothWays = (a: number, b: number) => {
    state.shares = [
      { from: a, to: b, reviews: 1, keywords: 1 },
      { from: b, to: a, reviews: 1, keywords: 1 },
    ];
  };
  /** The business each carried review and keyword is stored under. */
  const owners = async () => {
    const { rows } = await sql<{ kind: string; id: string; business_id: string }>`
      select 'review' as kind, review_id::text as id, business_id::text from reviews
       where review_id = any(${[...state.carried.reviews]}::uuid[])
      union all
      select 'keyword', keyword_id::text, business_id::text from keywords
       where keyword_id = any(${[...state.carried.keywords]}::bigint[])
      order by 1, 2`.execute(db());
    return rows.map((row) => `${row.kind} ${row.id}: ${row.business_id}`);
  };
  const quarantined = async (runId: string) =>
    (
      await db()
        .selectFrom('quarantine')
        .select(['business_id', 'stream', 'location', 'reason'])
        .where('run_id', '=', runId)
        .orderBy('location')
        .execute()
    ).map((row) => ({ ...row, business_id: Number(row.business_id) }));

  it('gives an id two answers carry to the lower business, even when the higher one is ready to write first', async () => {
    const [a, b] = (await businesses()) as [number, number];
    bothWays(a, b);
    // A's reviews answer is held until B has read everything and could write: before the
    // rule, B committed first and kept every shared id.
    const { logger, lines } = memoryLogger('debug');
    let release = () => {};
    state.hold = { business: a, until: new Promise<void>((resolve) => (release = resolve)) };
    const running = night({ logger });
    await vi.waitFor(
      async () => {
        const waiting = lines().some(
          (line) => line.includes('waiting for its turn to write') && line.includes(`${b}`),
        );
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from reviews where business_id = ${b}`.execute(db());
        expect(waiting || (rows[0]?.n ?? 0) > 0).toBe(true);
      },
      { timeout: 60_000, interval: 20 },
    );
    release();
    const result = await running;

    expect(state.carried.reviews.size).toBe(2);
    expect(state.carried.keywords.size).toBe(2);
    const all = await owners();
    expect(all).toHaveLength(4);
    for (const row of all) expect(row.endsWith(`: ${a}`), row).toBe(true);
    // B's copies are quarantined, each naming both businesses; the rest of B loaded.
    expect(result.status).toBe('partial');
    expect(result.stats.businesses.failed).toBe(0);
    const rows = await quarantined(result.runId);
    expect(rows.map((row) => [row.business_id, row.stream])).toEqual([
      [b, 'keywords'],
      [b, 'keywords'],
      [b, 'reviews'],
      [b, 'reviews'],
    ]);
    for (const row of rows) {
      expect(row.reason).toMatch(
        new RegExp(
          `^(review|keyword) ${String(row.location).split(' ')[1]} is stored under business ${a}; business ${b}'s answer carries it too$`,
        ),
      );
    }
    expect(
      (
        await db()
          .selectFrom('keywords')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('business_id', '=', b)
          .executeTakeFirstOrThrow()
      ).n,
    ).toBeGreaterThan(0);

    // The next night, the stored owner is kept and B's copies are quarantined again.
    state.hold = null;
    const again = await night();
    expect(await owners()).toEqual(all);
    expect((await quarantined(again.runId)).map((row) => row.location)).toEqual(
      rows.map((row) => row.location),
    );
  });

  it('keeps the owner a keyword had while it lists it, and moves one its owner no longer lists the night after', async () => {
    const [a, b] = (await businesses()) as [number, number];
    expect((await night()).status).toBe('succeeded');
    const keywordsOf = async (id: number) =>
      (
        await db()
          .selectFrom('keywords')
          .select(['keyword_id', 'deleted_at'])
          .where('business_id', '=', id)
          .orderBy('keyword_id')
          .execute()
      ).map((row) => ({ id: Number(row.keyword_id), deleted: row.deleted_at !== null }));
    const firstOf = async (id: number) =>
      (await listKeywords(world.api, world.sandbox.credentials[0] as Credential, id)).records[0];
    const [firstOfA, firstOfB] = [await firstOf(a), await firstOf(b)];
    // A's first keyword moves to B; B's first is listed by A too, and still by B.
    state.drops = [{ business: a, keywords: 1 }];
    state.shares = [
      { from: a, to: b, reviews: 0, keywords: 1 },
      { from: b, to: a, reviews: 0, keywords: 1 },
    ];
    // The night it moves upstream, B's copy waits (A lets go of it this very run), and A's
    // copy of B's keyword is refused: both quarantined, whichever write came first.
    const letGo = await night();
    expect((await keywordsOf(a)).find((k) => k.id === firstOfA?.id)).toEqual({
      id: firstOfA?.id,
      deleted: true,
    });
    expect(
      (await quarantined(letGo.runId)).map((row) => [row.business_id, row.location]).sort(),
    ).toEqual(
      [
        [a, `keywords ${firstOfB?.id}`],
        [b, `keywords ${firstOfA?.id}`],
      ].sort(),
    );
    expect(letGo.stats.tables['keywords']).toMatchObject({ deleted: 1 });
    // The next night B takes it over: moved, counted so (not updated, nor deleted).
    const moved = await night();
    const ofA = await keywordsOf(a);
    const ofB = await keywordsOf(b);
    expect(ofA.map((k) => k.id)).not.toContain(firstOfA?.id);
    expect(ofB).toContainEqual({ id: firstOfA?.id, deleted: false });
    expect(ofB).toContainEqual({ id: firstOfB?.id, deleted: false });
    expect((await quarantined(moved.runId)).map((row) => [row.business_id, row.location])).toEqual([
      [a, `keywords ${firstOfB?.id}`],
    ]);
    expect(moved.stats.tables['keywords']).toMatchObject({ deleted: 0, updated: 0, moved: 1 });
    const summary = renderSyncSummary(moved, { warehouse: 'test' });
    expect(summary).toMatch(/^table +inserted +updated +unchanged +deleted +moved$/m);
    expect(summary).toMatch(/^keywords +0 +0 +\d+ +0 +1$/m);
  });

  it('swapped keywords on alternate nights: every night succeeds or quarantines, and replay plans the same twice and moves nothing', async () => {
    const [a, b] = (await businesses()) as [number, number];
    expect((await night()).status).toBe('succeeded');
    const owned = async () => {
      const { rows } = await sql<{ keyword_id: string; business_id: string; deleted: boolean }>`
        select keyword_id::text, business_id::text, deleted_at is not null as deleted
          from keywords order by keyword_id`.execute(db());
      return rows;
    };
    for (let n = 1; n <= 4; n++) {
      world.sandbox.advanceDays(1);
      // Odd nights: each business's first keyword is served under the other instead.
      const swapped = n % 2 === 1;
      state.drops = swapped
        ? [
            { business: a, keywords: 1 },
            { business: b, keywords: 1 },
          ]
        : [];
      state.shares = swapped
        ? [
            { from: a, to: b, reviews: 0, keywords: 1 },
            { from: b, to: a, reviews: 0, keywords: 1 },
          ]
        : [];
      const result = await night();
      expect(result.stats.businesses.failed).toBe(0);
    }
    const before = await owned();
    const inPlace = (dryRun: boolean) =>
      replayInPlace({
        warehouse: world.warehouse,
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
        logger: silentLogger(),
        dryRun,
      });
    const first = await inPlace(true);
    const second = await inPlace(true);
    expect(second.changes).toEqual(first.changes);
    expect(first.keptWhole).toEqual([]);
    expect(first.notRebuilt).toEqual([]);
    await inPlace(false);
    expect(await owned()).toEqual(before);
  });

  it('replays to the same plan twice, and never moves a live row to another business', async () => {
    const [a, b] = (await businesses()) as [number, number];
    bothWays(a, b);
    for (let n = 0; n < 3; n++) {
      if (n > 0) world.sandbox.advanceDays(1);
      expect((await night()).status).toBe('partial');
    }
    const perBusiness = async () => {
      const { rows } = await sql<{ business_id: string; reviews: number; keywords: number }>`
        select b.business_id::text,
          (select count(*)::int from reviews r where r.business_id = b.business_id) as reviews,
          (select count(*)::int from keywords k where k.business_id = b.business_id) as keywords
        from businesses b order by 1`.execute(db());
      return rows;
    };
    // A row the live warehouse holds under B, whatever the rule says: the merge keeps it there.
    const [shared] = [...state.carried.reviews].sort();
    await sql`update review_responses set business_id = ${b} where review_id = ${shared}`.execute(
      db(),
    );
    await sql`update reviews set business_id = ${b} where review_id = ${shared}`.execute(db());
    const ownersBefore = await owners();
    const countsBefore = await perBusiness();

    const inPlace = (dryRun: boolean) =>
      replayInPlace({
        warehouse: world.warehouse,
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
        logger: silentLogger(),
        dryRun,
      });
    const first = await inPlace(true);
    const second = await inPlace(true);
    expect(second.changes).toEqual(first.changes);
    expect(second.keptWhole).toEqual(first.keptWhole);
    expect(first.keptWhole).toEqual([]);

    await inPlace(false);
    expect(await owners()).toEqual(ownersBefore);
    expect(await perBusiness()).toEqual(countsBefore);
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from review_responses p join reviews r using (review_id)
       where p.business_id <> r.business_id`.execute(db());
    expect(rows[0]?.n).toBe(0);
  });
});
