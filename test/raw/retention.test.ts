/**
 * RAW_RETENTION_DAYS (src/raw/retention.ts; docs/replay.md):
 * age is measured on the clock the reads were recorded with, each business's latest
 * reads outlive the window, the runs inside it are kept whole, and `raw stats` names the
 * oldest night replay can rebuild. Sandbox nights over real HTTP for what a run does;
 * reads inserted with set times for the rules' edges.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listBusinesses } from '../../src/api/index.ts';
import { readRawStats, renderRawStats } from '../../src/cli/commands/raw-show.ts';
import { silentLogger } from '../../src/log.ts';
import { BODY_ENCODING, compressBody } from '../../src/raw/body.ts';
import { insertRawBodies, insertRawReads } from '../../src/raw/reads.ts';
import { pruneRawZone } from '../../src/raw/retention.ts';
import { replay } from '../../src/replay/replay.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { nightOf, sync, type WorldShape, worldPerTest } from '../sync/harness.ts';
import { documentedContent, inSchema } from './documented-content.ts';

const DAY_MS = 86_400_000;

const WORLD: WorldShape = {
  seed: 31,
  accounts: 2,
  businessesPerAccount: 3,
  startDate: '2026-03-01',
};

/** An upstream whose clock is 100 days behind ours: its `Date` is believed (only one ahead is not). */
const LAGGING_WORLD: WorldShape = {
  ...WORLD,
  startDate: new Date(Date.now() - 100 * DAY_MS).toISOString().slice(0, 10),
};

interface ReadRow {
  read_id: number;
  run_id: string;
  account_name: string;
  business_id: number | null;
  operation: string;
  aged_out: boolean;
}

async function readsOf(db: Kysely<Database>): Promise<ReadRow[]> {
  const { rows } = await sql<ReadRow>`
    select read_id::int as read_id, run_id::text as run_id, account_name,
           business_id::int as business_id, operation, aged_out
      from raw_reads order by read_id`.execute(db);
  return rows;
}

/** Bodies no read refers to, and reads whose body is not kept. */
async function dangling(db: Kysely<Database>): Promise<{ orphans: number; missing: number }> {
  const { rows } = await sql<{ orphans: number; missing: number }>`
    select (select count(*) from raw_bodies b
             where not exists (select 1 from raw_reads r where decode(r.body_hash, 'hex') = b.body_hash))::int
             as orphans,
           (select count(*) from raw_reads r
             where not exists (select 1 from raw_bodies b where b.body_hash = decode(r.body_hash, 'hex')))::int
             as missing`.execute(db);
  return rows[0] ?? { orphans: -1, missing: -1 };
}

async function bodyCount(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from raw_bodies`.execute(db);
  return rows[0]?.n ?? 0;
}

const ids = (rows: readonly { read_id: number }[]): number[] => rows.map((r) => r.read_id);

describe.each(testBackends)('raw zone retention (%s)', (backend) => {
  describe('against an upstream whose clock lags ours', () => {
    const world = worldPerTest(backend, LAGGING_WORLD);

    it('keeps the reads of its own run and of the night before, 100 of our days old', async () => {
      // The run's own clock: the upstream's Date, as a real sync has it.
      const first = await sync(world.warehouse, world.api, world.sandbox.credentials);
      expect(first.status).toBe('succeeded');
      world.sandbox.advanceDays(1);
      const second = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        rawRetentionDays: 30,
      });
      expect(second.status).toBe('succeeded');

      const reads = await readsOf(world.warehouse.db);
      const runs = new Set(reads.map((r) => r.run_id));
      expect(runs).toEqual(new Set([first.runId, second.runId]));
      // Recorded on the upstream's days, far behind ours.
      const { rows } = await sql<{ day: string }>`
        select distinct to_char(observed_at at time zone 'UTC', 'YYYY-MM-DD') as day
          from raw_reads order by 1`.execute(world.warehouse.db);
      expect(rows.map((r) => r.day)).toEqual([LAGGING_WORLD.startDate, world.sandbox.today()]);
      expect(reads.some((r) => r.aged_out)).toBe(false);
      expect(renderRawStats(await readRawStats(world.warehouse.db))).toContain(
        `\n  oldest night replay can rebuild: ${LAGGING_WORLD.startDate} (account-1: ${LAGGING_WORLD.startDate}, account-2: ${LAGGING_WORLD.startDate})\n`,
      );
    });
  });

  describe('over sandbox nights', () => {
    const world = worldPerTest(backend, WORLD);

    it("keeps a business's latest reads however old, prunes the nights read again since, and the bodies nothing refers to", async () => {
      const night = () => ({ now: () => nightOf(world.sandbox) });
      const [credential] = world.sandbox.credentials;
      const listed = (await listBusinesses(world.api, credential!)).records.map((b) => b.id);
      const idle = listed[0]!;
      // Night 0 reads every business; nights 10, 35 and 45 every one but `idle`.
      const night0 = await sync(world.warehouse, world.api, world.sandbox.credentials, night());
      expect(night0.status).toBe('succeeded');
      const others = (await readsOf(world.warehouse.db))
        .map((r) => r.business_id)
        .filter((id): id is number => id !== null && id !== idle);
      const but = { businessIds: [...new Set(others)] };
      world.sandbox.advanceDays(10);
      const night10 = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        ...night(),
        ...but,
      });
      world.sandbox.advanceDays(25);
      const night35 = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        ...night(),
        ...but,
      });
      world.sandbox.advanceDays(10);
      const before = await readsOf(world.warehouse.db);
      const bodiesBefore = await bodyCount(world.warehouse.db);
      const night45 = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        ...night(),
        ...but,
        rawRetentionDays: 30,
      });
      for (const run of [night10, night35, night45]) expect(run.status).toBe('succeeded');

      const after = await readsOf(world.warehouse.db);
      const ofRun = (reads: ReadRow[], runId: string) => reads.filter((r) => r.run_id === runId);
      // Night 0 (45 days back on the run's clock): only `idle`'s reads and its account's
      // list, marked; every other business's and the other account's list are gone.
      const idleReads = ofRun(before, night0.runId).filter((r) => r.business_id === idle);
      expect(idleReads.length).toBeGreaterThan(3);
      const idleAccount = idleReads[0]!.account_name;
      const keptOfNight0 = ofRun(before, night0.runId).filter(
        (r) => r.business_id === idle || (r.business_id === null && r.account_name === idleAccount),
      );
      expect(keptOfNight0.some((r) => r.operation === 'list_businesses')).toBe(true);
      expect(ids(ofRun(after, night0.runId))).toEqual(ids(keptOfNight0));
      expect(ofRun(after, night0.runId).every((r) => r.aged_out)).toBe(true);
      // Night 10: every business it read was read again since: gone whole.
      expect(ofRun(before, night10.runId).length).toBeGreaterThan(0);
      expect(ofRun(after, night10.runId)).toEqual([]);
      // Nights 35 and 45, inside the window: whole.
      expect(ids(ofRun(after, night35.runId))).toEqual(ids(ofRun(before, night35.runId)));
      expect(ofRun(after, night45.runId).length).toBeGreaterThan(0);
      expect(after.filter((r) => r.aged_out)).toEqual(ofRun(after, night0.runId));

      expect(await dangling(world.warehouse.db)).toEqual({ orphans: 0, missing: 0 });
      expect(await bodyCount(world.warehouse.db)).toBeLessThan(bodiesBefore);

      const stats = renderRawStats(await readRawStats(world.warehouse.db));
      expect(stats).toContain(
        '\n  oldest night replay can rebuild: 2026-04-05 (account-1: 2026-04-05, account-2: 2026-04-05)\n',
      );
      expect(stats).toMatch(/\n2026-03-01 .*past retention: latest reads only\n/);
      expect(stats).not.toContain('\n2026-03-11 ');
      expect(stats).toMatch(/\n2026-04-05 +\d+ +[^\n]*B\n/);

      // What retention kept still rebuilds `idle` as the live warehouse holds it.
      await replay({
        warehouse: world.warehouse,
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
        into: 'after_retention',
        logger: silentLogger(),
      });
      const ofIdle = (content: Record<string, string[]>) =>
        Object.fromEntries(
          ['businesses', 'listings', 'reviews'].map((table) => [
            table,
            (content[table] ?? []).filter((row) => JSON.parse(row).business_id === idle),
          ]),
        );
      const live = ofIdle(await documentedContent(world.warehouse.db));
      expect(live['businesses']).toHaveLength(1);
      expect(live['listings']!.length).toBeGreaterThan(0);
      expect(
        ofIdle(await inSchema(world.warehouse, 'after_retention', (db) => documentedContent(db))),
      ).toEqual(live);
    });
  });

  describe('rules, on reads with set times', () => {
    let warehouse: TestWarehouse;
    beforeEach(async () => {
      warehouse = await createTestWarehouse(backend);
    });
    afterEach(async () => {
      await warehouse.close();
    });

    /** Keeps reads as a sync would, each with its body (the text `body`). */
    async function keep(
      reads: {
        run: string;
        account: string;
        business: number | null;
        at: Date;
        body: string;
        uncommitted?: boolean;
      }[],
    ): Promise<void> {
      const hash = (text: string) => createHash('sha256').update(text).digest('hex');
      const texts = [...new Set(reads.map((r) => r.body))];
      await insertRawBodies(
        warehouse.db,
        texts.map((text) => ({
          body_hash: hash(text),
          encoding: BODY_ENCODING,
          size: text.length,
          bytes: compressBody(text),
          base_hash: null,
        })),
      );
      await insertRawReads(
        warehouse.db,
        reads.map((r) => ({
          run_id: r.run,
          account_name: r.account,
          business_id: r.business,
          operation: r.business === null ? 'list_businesses' : 'list_listings',
          request:
            r.business === null ? '/businesses.json' : `/businesses/${r.business}/listings.json`,
          attempt: 1,
          status: 200,
          observed_at: r.at,
          body_hash: hash(r.body),
          uncommitted: r.uncommitted ?? false,
        })),
      );
    }

    /** One account's run at `at`: its list, then each business. */
    function run(
      account: string,
      at: Date,
      businesses: number[],
      extra: { body?: string; uncommitted?: number[] } = {},
    ) {
      const id = randomUUID();
      return {
        id,
        reads: [
          { run: id, account, business: null, at, body: `list of ${account}` },
          ...businesses.map((business) => ({
            run: id,
            account,
            business,
            at: new Date(at.getTime() + 60_000),
            body: extra.body ?? `${business} at ${at.toISOString()}`,
            uncommitted: extra.uncommitted?.includes(business) ?? false,
          })),
        ],
      };
    }

    const runsLeft = async () => new Set((await readsOf(warehouse.db)).map((r) => r.run_id));

    it("measures each account's age on its own clock", async () => {
      const now = new Date('2026-11-20T02:00:00Z');
      const lagging = new Date(now.getTime() - 100 * DAY_MS);
      const runs = [
        run('ours', new Date(now.getTime() - 40 * DAY_MS), [1]),
        run('ours', new Date(now.getTime() - 20 * DAY_MS), [1]),
        run('ours', now, [1]),
        run('behind', new Date(lagging.getTime() - 40 * DAY_MS), [2]),
        run('behind', new Date(lagging.getTime() - 20 * DAY_MS), [2]),
        run('behind', lagging, [2]),
      ];
      await keep(runs.flatMap((r) => r.reads));
      expect(await pruneRawZone(warehouse.db, 30)).toEqual({ reads: 4, agedOut: 0, bodies: 2 });
      expect(await runsLeft()).toEqual(
        new Set([runs[1]!.id, runs[2]!.id, runs[4]!.id, runs[5]!.id]),
      );
      expect(await dangling(warehouse.db)).toEqual({ orphans: 0, missing: 0 });
      expect((await readRawStats(warehouse.db)).rebuildableFromByAccount).toEqual([
        { account: 'behind', night: '2026-07-23' },
        { account: 'ours', night: '2026-10-31' },
      ]);
    });

    it("keeps the reads a business's rows were built from when its later reads never committed", async () => {
      const now = new Date('2026-11-20T02:00:00Z');
      const old = run('a', new Date(now.getTime() - 40 * DAY_MS), [1, 2]);
      const latest = run('a', now, [1, 2], { uncommitted: [1] });
      await keep([...old.reads, ...latest.reads]);
      expect(await pruneRawZone(warehouse.db, 30)).toMatchObject({ reads: 1, agedOut: 2 });
      const left = await readsOf(warehouse.db);
      // Business 1's committed read and the list that goes with it stay, marked; business
      // 2's, read and committed since, goes.
      expect(
        left.filter((r) => r.run_id === old.id).map((r) => [r.business_id, r.aged_out]),
      ).toEqual([
        [null, true],
        [1, true],
      ]);
      expect(left.filter((r) => r.run_id === latest.id)).toHaveLength(3);
      // The night kept in part is not rebuildable; the latest one is.
      const stats = await readRawStats(warehouse.db);
      expect(stats.rebuildableFrom).toBe('2026-11-20');
      expect(stats.nights.map((n) => [n.day, n.agedOutReads])).toEqual([
        ['2026-10-11', 2],
        ['2026-11-20', 0],
      ]);
    });

    it('keeps a run with any read inside the window whole, and a body still referred to', async () => {
      const now = new Date('2026-11-20T02:00:00Z');
      const cutoff = new Date(now.getTime() - 30 * DAY_MS);
      const id = randomUUID();
      // A run that read business 1 before the cutoff and business 2 after it.
      const straddling = [
        {
          run: id,
          account: 'a',
          business: null,
          at: new Date(cutoff.getTime() - 3_600_000),
          body: 'list',
        },
        {
          run: id,
          account: 'a',
          business: 1,
          at: new Date(cutoff.getTime() - 3_600_000),
          body: 'same',
        },
        {
          run: id,
          account: 'a',
          business: 2,
          at: new Date(cutoff.getTime() + 3_600_000),
          body: 'b2',
        },
      ];
      const older = run('a', new Date(now.getTime() - 45 * DAY_MS), [1, 2], { body: 'same' });
      const latest = run('a', now, [1, 2]);
      await keep([...older.reads, ...straddling, ...latest.reads]);
      expect(await pruneRawZone(warehouse.db, 30)).toEqual({ reads: 3, agedOut: 0, bodies: 0 });
      expect(await runsLeft()).toEqual(new Set([id, latest.id]));
      expect(await dangling(warehouse.db)).toEqual({ orphans: 0, missing: 0 });
      // Nothing kept in part: every night left is whole.
      expect((await readRawStats(warehouse.db)).rebuildableFrom).toBe('2026-10-21');
      // Pruning again deletes nothing more.
      expect(await pruneRawZone(warehouse.db, 30)).toEqual({ reads: 0, agedOut: 0, bodies: 0 });
    });
  });
});
