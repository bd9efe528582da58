/**
 * `replay --in-place` over ids the upstream shows under a business of each of two
 * credentials (docs/replay.md, "Replay in place"): between credentials the first commit
 * wins, so the live warehouse may hold a review or a keyword under the business whose
 * write came first, while the replay, which runs the credentials one after the other,
 * meets it under the other. The merge leaves such a row, its versions, its responses, the
 * rank series that name it and the quarantine rows about it as the live warehouse has
 * them, and reports nothing recovered that was not. And replay is a fixed point: on a
 * warehouse synced by this code (shared ids, an archived business, quarantined records),
 * the first dry run already says no table would change, and so does one after the merge.
 *
 * The sandbox never serves one id twice: a proxy in front of it (test/helpers/
 * sharing-proxy.ts) adds the first business's first review and keyword to the second
 * credential's first business's answers, asked with the first credential. This file
 * builds its own world because each test writes (syncs through the proxy, then replays).
 */
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Credential, listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { replayInPlace } from '../../src/replay/in-place.ts';
import type { TableChange } from '../../src/replay/merge.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { testBackends } from '../helpers/database.ts';
import { type SharingState, sharingState, startSharingProxy } from '../helpers/sharing-proxy.ts';
import { sync, worldPerTest } from '../sync/harness.ts';

const WORLD = { seed: 11, accounts: 2, businessesPerAccount: 2, startDate: '2026-07-01' };

/** Every row of `query`, as JSON text, in a stable order. */
async function rowsOf(db: Kysely<Database>, query: string): Promise<string[]> {
  const { rows } = await sql<{ row: string }>`
    select row_to_json(t)::text as row from (${sql.raw(query)}) t order by 1`.execute(db);
  return rows.map((r) => r.row);
}

/** What BI and the owner rule read of the tables a shared id touches, ids and times included. */
async function held(db: Kysely<Database>) {
  return {
    reviews: await rowsOf(db, 'select review_id, business_id, content_hash from reviews'),
    versions: await rowsOf(db, 'select review_id, observed_at, content_hash from review_versions'),
    responses: await rowsOf(db, 'select response_id, review_id, business_id from review_responses'),
    keywords: await rowsOf(db, 'select keyword_id, business_id, deleted_at from keywords'),
    series: await rowsOf(
      db,
      'select series_id, business_id, keyword, site, keyword_id from rank_series',
    ),
    quarantine: await rowsOf(db, 'select * from quarantine'),
    businesses: await rowsOf(db, 'select business_id, archived_at, last_seen_at from businesses'),
    answers: await rowsOf(db, 'select * from business_answers'),
  };
}

const changed = (changes: readonly TableChange[]) =>
  changes.filter((c) => c.deleted + c.inserted + c.updated > 0);

describe.each(testBackends)('replay --in-place over ids under two credentials (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  let state: SharingState;
  let proxy: Awaited<ReturnType<typeof startSharingProxy>>;
  let credentials: Credential[];
  beforeEach(async () => {
    state = sharingState();
    proxy = await startSharingProxy(world.sandbox.baseUrl, state);
    credentials = world.sandbox.credentials.map((c) => ({ ...c, baseUrl: proxy.url }));
  });
  afterEach(async () => {
    await proxy.close();
  });
  const db = () => world.warehouse.db;
  const inPlace = (dryRun: boolean) =>
    replayInPlace({
      warehouse: world.warehouse,
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      logger: silentLogger(),
      dryRun,
    });
  const businessesOf = async (credential: Credential) =>
    (await listBusinesses(world.api, credential)).records.map((b) => b.id).sort((x, y) => x - y);

  /**
   * The first night: `a` (the first credential's) answers its reviews and keywords only
   * once `b` (the second's) has stored the review and keyword it carries of `a`'s, so they
   * are stored under `b` and `a`'s own copies are quarantined.
   */
  async function shareThenSync(): Promise<{ a: number; b: number; other: number }> {
    const [first, second] = credentials as [Credential, Credential];
    const [a] = (await businessesOf(world.sandbox.credentials[0] as Credential)) as [number];
    const [b, other] = (await businessesOf(world.sandbox.credentials[1] as Credential)) as [
      number,
      number,
    ];
    expect(a).toBeLessThan(b);
    state.shares = [{ from: a, to: b, reviews: 1, keywords: 1, fromCredential: { ...first } }];
    let release = () => {};
    state.hold = {
      business: a,
      keywords: true,
      until: new Promise<void>((resolve) => (release = resolve)),
    };
    const running = sync(world.warehouse, world.api, [first, second]);
    await vi.waitFor(
      async () => {
        const { rows } = await sql<{ n: number }>`
          select (select count(*) from reviews where business_id = ${b}
                    and review_id::text = any(${[...state.carried.reviews]}::text[]))
               + (select count(*) from keywords where business_id = ${b}
                    and keyword_id = any(${[...state.carried.keywords]}::bigint[])) as n`.execute(
          db(),
        );
        expect(Number(rows[0]?.n)).toBe(2);
      },
      { timeout: 60_000, interval: 20 },
    );
    release();
    const result = await running;
    expect(result.status).toBe('partial');
    state.hold = null;
    return { a, b, other };
  }

  it('keeps the row the live warehouse holds under the other credential’s business, with its versions, series and quarantine rows, and is a fixed point', async () => {
    const { a, b, other } = await shareThenSync();
    // A second night: the same shares, a business the list no longer shows (archived), and
    // records the schema refuses (quarantined).
    world.sandbox.advanceDays(1);
    state.unlisted.add(other);
    world.sandbox.setFaults({ malformedRate: 0.2 });
    const second = await sync(world.warehouse, world.api, credentials);
    expect(second.status).toBe('partial');
    expect(second.stats.businesses.archived).toBe(1);
    world.sandbox.setFaults({ malformedRate: 0 });

    const [review] = [...state.carried.reviews];
    const [keyword] = [...state.carried.keywords];
    const live = await held(db());
    expect(live.reviews.filter((r) => r.includes(`"review_id":"${review}"`))).toEqual([
      expect.stringContaining(`"business_id":${b}`),
    ]);
    expect(live.versions.filter((r) => r.includes(`"review_id":"${review}"`)).length).toBe(1);
    expect(live.keywords.filter((r) => r.includes(`"keyword_id":${keyword},`))).toEqual([
      expect.stringContaining(`"business_id":${b}`),
    ]);
    // `a`'s copies, quarantined each night, naming `b` as the holder.
    const { rows: aboutShared } = await sql<{ business_id: string; reason: string }>`
      select business_id::text, reason from quarantine
       where reason like '% is stored under business %' order by quarantine_id`.execute(db());
    // (Night 2's first review of `a` may be a newer one, which `a` stored first: then `b`'s
    // copy is the one quarantined.)
    const ofA = aboutShared.filter((row) => Number(row.business_id) === a);
    expect(ofA.length).toBe(4);
    for (const row of ofA) {
      expect(row.reason).toContain(`stored under business ${b}; business ${a}'s answer`);
    }
    for (const row of aboutShared.filter((r) => Number(r.business_id) !== a)) {
      expect(row.reason).toContain(`stored under business ${a}; business ${b}'s answer`);
    }
    expect(live.businesses.filter((r) => r.includes('"archived_at":"'))).toHaveLength(1);

    // The first dry run on a warehouse this code synced: nothing would change.
    const dry = await inPlace(true);
    expect(dry.keptWhole).toEqual([]);
    expect(dry.notRebuilt).toEqual([]);
    expect(changed(dry.changes)).toEqual([]);
    expect(dry.recovered).toBe(0);

    const merged = await inPlace(false);
    expect(changed(merged.changes)).toEqual([]);
    expect(merged.recovered).toBe(0);
    expect(await held(db())).toEqual(live);
    // No series names a keyword that `keywords` holds under another business.
    const { rows: crossed } = await sql<{ n: number }>`
      select count(*)::int as n from rank_series s join keywords k using (keyword_id)
       where k.business_id <> s.business_id`.execute(db());
    expect(crossed[0]?.n).toBe(0);

    const again = await inPlace(true);
    expect(changed(again.changes)).toEqual([]);
  });

  it('after a user moved the row, keeps it where the user put it though the rebuild, running the credentials the other way, has it under the other', async () => {
    // Named so that the replay runs the second credential first: it meets the review
    // under `b` before `a`'s answer carries it.
    credentials = credentials.map((c, i) => ({ ...c, name: i === 0 ? 'zulu' : 'alpha' }));
    const { a } = await shareThenSync();
    const [review] = [...state.carried.reviews] as [string];
    // docs/running.md, "A review under the wrong business": the user gives it to `a`, in
    // one transaction with its responses. The next night writes on top of it.
    await db()
      .transaction()
      .execute(async (trx) => {
        await sql`update review_responses set business_id = ${a} where review_id = ${review}`.execute(
          trx,
        );
        await sql`update reviews set business_id = ${a} where review_id = ${review}`.execute(trx);
      });
    world.sandbox.advanceDays(1);
    await sync(world.warehouse, world.api, credentials);
    const live = await held(db());
    expect(live.reviews.filter((r) => r.includes(`"review_id":"${review}"`))).toEqual([
      expect.stringContaining(`"business_id":${a}`),
    ]);
    expect(live.versions.filter((r) => r.includes(`"review_id":"${review}"`)).length).toBe(1);
    const merged = await inPlace(false);
    expect(merged.recovered).toBe(0);
    expect(await held(db())).toEqual(live);
    expect(changed((await inPlace(true)).changes)).toEqual([]);
  });
});
