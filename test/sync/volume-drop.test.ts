/**
 * Issue 19: a `success: true` answer with far fewer records than stored is held, not
 * believed (docs/warehouse.md, "How removals work"). Driven through the sandbox's scripted
 * answer faults over real HTTP: `empty` (`{success: true, result: []}`) and `oversized`
 * (`count` clones of the first record with fixed ids, so a business's rows can shrink by
 * an exact number).
 */
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { parseAlertRules } from '../../src/config/alert-rules.ts';
import { DEFAULT_FAULTS, type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { renderSyncSummary } from '../../src/sync/summary.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { count, rowsWritten, sync, testApiClient } from './harness.ts';

const WORLD = { seed: 19, accounts: 1, businessesPerAccount: 4, startDate: '2026-03-01' };

/** 03:00 UTC on day `n` of March 2026: one nightly run per day. */
function night(n: number): Date {
  return new Date(Date.UTC(2026, 2, n, 3));
}

describe.each(testBackends)('volume drops (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;
  /** The business with keywords and the most reviews: every fault below is about it alone. */
  let businessId: number;

  beforeAll(async () => {
    sandbox = await startSandbox({ ...WORLD, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
    await syncNight(1);
    const best = await sql<{ business_id: number }>`
      select business_id from reviews r
      where exists (select 1 from keywords k where k.business_id = r.business_id)
      group by business_id
      order by count(*) desc, business_id limit 1`.execute(warehouse.db);
    businessId = Number(best.rows[0]?.business_id);
  });
  beforeEach(async () => {
    await truncateAll(warehouse);
  });
  afterEach(() => {
    sandbox.setFaults(DEFAULT_FAULTS);
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  function syncNight(n: number, extra: Parameters<typeof sync>[3] = {}) {
    return sync(warehouse, api, sandbox.credentials, {
      now: () => night(n),
      ...(businessId ? { businessIds: [businessId] } : {}),
      ...extra,
    });
  }

  const live = (table: 'listings' | 'reviews' | 'review_responses', business = businessId) =>
    count(warehouse, table, sql`business_id = ${business} and removed_at is null`);
  const liveKeywords = () =>
    count(warehouse, 'keywords', sql`business_id = ${businessId} and deleted_at is null`);

  async function volumeDrops() {
    return warehouse.db
      .selectFrom('alerts')
      .select(['business_id', 'previous_status', 'status', 'details', 'dedupe_key', 'run_id'])
      .where('kind', '=', 'volume_drop')
      .orderBy('alert_id')
      .execute();
  }

  async function held() {
    const row = await warehouse.db
      .selectFrom('businesses')
      .select('removals_held')
      .where('business_id', '=', businessId)
      .executeTakeFirstOrThrow();
    return row.removals_held as Record<string, Record<string, unknown>> | null;
  }

  it('an empty listings answer removes nothing and raises volume_drop; the next run that sees it again removes them', async () => {
    await syncNight(1);
    const stored = await live('listings');
    expect(stored).toBeGreaterThanOrEqual(3);
    expect(await held()).toBeNull();

    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    const first = await syncNight(2);
    // Not a failure: the run succeeds, and says what it held.
    expect(first.status).toBe('succeeded');
    expect(first.stats.removalsHeld).toBe(1);
    expect(first.stats.tables['listings']?.deleted ?? 0).toBe(0);
    expect(await live('listings')).toBe(stored);
    expect(await volumeDrops()).toEqual([
      {
        business_id: businessId,
        previous_status: String(stored),
        status: '0',
        details: { stream: 'listings', stored, answered: 0, removing: stored },
        dedupe_key: `volume_drop:${businessId}:listings:2026-03-02`,
        run_id: first.runId,
      },
    ]);
    expect(await held()).toEqual({
      listings: {
        run_id: first.runId,
        held_at: night(2).toISOString(),
        stored,
        answered: 0,
        removing: stored,
      },
    });
    // BI's accuracy does not drop for the night: the held listings still count.
    const accuracy = await sql<{ listings: number }>`
      select listings from listing_accuracy_days
      where business_id = ${businessId} and day = '2026-03-02'`.execute(warehouse.db);
    expect(accuracy.rows).toEqual([{ listings: stored }]);
    expect(renderSyncSummary(first, { warehouse: 'test' })).toContain(
      '1 stream read(s) held on a volume drop',
    );

    // The next night answers empty again: the drop is confirmed and the removals apply.
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    const second = await syncNight(3);
    expect(second.status).toBe('succeeded');
    expect(second.stats.removalsHeld).toBe(0);
    expect(second.stats.tables['listings']?.deleted).toBe(stored);
    expect(await live('listings')).toBe(0);
    expect(await held()).toBeNull();
    expect(await volumeDrops()).toHaveLength(1);
  });

  it('a held drop that the next run does not repeat is cleared, and nothing was lost', async () => {
    await syncNight(1);
    const stored = await live('listings');
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    await syncNight(2);
    expect(await held()).not.toBeNull();

    const back = await syncNight(3);
    expect(back.stats.removalsHeld).toBe(0);
    expect(back.stats.tables['listings']).toMatchObject({ inserted: 0, updated: 0, deleted: 0 });
    expect(await live('listings')).toBe(stored);
    expect(await held()).toBeNull();
    // And a second run that night, with nothing changed, writes no row at all.
    const unchanged = await syncNight(3);
    expect(rowsWritten(unchanged)).toBe(0);

    // A drop held again later is a new hold, with its own alert.
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    await syncNight(5);
    expect((await volumeDrops()).map((a) => a.dedupe_key)).toEqual([
      `volume_drop:${businessId}:listings:2026-03-02`,
      `volume_drop:${businessId}:listings:2026-03-05`,
    ]);
    expect(await live('listings')).toBe(stored);
  });

  it('empty review answers hold the reviews and their responses', async () => {
    await syncNight(1);
    const reviews = await live('reviews');
    const responses = await live('review_responses');
    expect(reviews).toBeGreaterThanOrEqual(3);
    // Both categories are read (review and social): both answer empty.
    const bothEmpty = {
      script: [
        { kind: 'empty' as const, operation: 'list_reviews' },
        { kind: 'empty' as const, operation: 'list_reviews' },
      ],
    };
    sandbox.setFaults(bothEmpty);
    const first = await syncNight(2);
    expect(first.status).toBe('succeeded');
    expect(await live('reviews')).toBe(reviews);
    expect(await live('review_responses')).toBe(responses);
    expect((await volumeDrops()).map((a) => a.details)).toEqual([
      { stream: 'reviews', stored: reviews, answered: 0, removing: reviews },
    ]);
    // The listings read was normal: only the reviews are held.
    expect(Object.keys((await held()) ?? {})).toEqual(['reviews']);

    sandbox.setFaults(bothEmpty);
    await syncNight(3);
    expect(await live('reviews')).toBe(0);
    expect(await live('review_responses')).toBe(0);
    expect(await held()).toBeNull();
  });

  it('a business losing one or two rows loses them at once; losing more than half (3 or more) is held', async () => {
    // Four listings (clones of the first with fixed ids), as the first sync sees them.
    sandbox.setFaults({ script: [{ kind: 'oversized', operation: 'list_listings', count: 4 }] });
    await syncNight(1);
    expect(await live('listings')).toBe(4);
    const keywords = await liveKeywords();
    expect(keywords).toBeGreaterThanOrEqual(3);

    // Two of four listings go (half, not more than half): removed at once.
    sandbox.setFaults({ script: [{ kind: 'oversized', operation: 'list_listings', count: 2 }] });
    const half = await syncNight(2);
    expect(half.stats.removalsHeld).toBe(0);
    expect(half.stats.tables['listings']?.deleted).toBe(2);
    expect(await live('listings')).toBe(2);

    // The last two listings go (all of them, but only two): removed at once. Every keyword
    // goes (three or more): held.
    sandbox.setFaults({
      script: [
        { kind: 'empty', operation: 'list_listings' },
        { kind: 'empty', operation: 'list_keywords' },
      ],
    });
    const drop = await syncNight(3);
    expect(drop.stats.removalsHeld).toBe(1);
    expect(await live('listings')).toBe(0);
    expect(await liveKeywords()).toBe(keywords);
    expect((await volumeDrops()).map((a) => a.details)).toEqual([
      { stream: 'keywords', stored: keywords, answered: 0, removing: keywords },
    ]);
    expect(Object.keys((await held()) ?? {})).toEqual(['keywords']);
  });

  it('a first sync that reads nothing is a baseline: nothing held, nothing raised', async () => {
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    const first = await syncNight(1);
    expect(first.status).toBe('succeeded');
    expect(first.stats.removalsHeld).toBe(0);
    expect(await held()).toBeNull();
    expect(await volumeDrops()).toEqual([]);
  });

  it('the rules file sets the thresholds, and can turn the hold off', async () => {
    sandbox.setFaults({ script: [{ kind: 'oversized', operation: 'list_listings', count: 4 }] });
    await syncNight(1);

    // Two of four is held when the rule says more than 25 % and at least 2.
    const strict = parseAlertRules(
      { rules: { volume_drop: { removedPercent: 25, minRows: 2 } } },
      'strict rules',
    );
    sandbox.setFaults({ script: [{ kind: 'oversized', operation: 'list_listings', count: 2 }] });
    const held2 = await syncNight(2, { alertRules: strict });
    expect(held2.stats.removalsHeld).toBe(1);
    expect(await live('listings')).toBe(4);
    expect((await volumeDrops()).map((a) => a.details)).toEqual([
      { stream: 'listings', stored: 4, answered: 2, removing: 2 },
    ]);

    // Disabled: an empty answer removes everything at once, as before, and clears the hold.
    const off = parseAlertRules({ rules: { volume_drop: { enabled: false } } }, 'off');
    sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_listings' }] });
    const gone = await syncNight(3, { alertRules: off });
    expect(gone.stats.removalsHeld).toBe(0);
    expect(await live('listings')).toBe(0);
    expect(await held()).toBeNull();
    expect(await volumeDrops()).toHaveLength(1);
  });
});
