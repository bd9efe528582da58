/**
 * Quarantine recovers on replay (docs/replay.md): a record that
 * failed its schema on a night loads when that night is replayed with a schema that has
 * since been loosened, and its quarantine row in the rebuilt schema says it was recovered.
 *
 * The schema of a listing is made strict for the first night (it refuses `Not Present`
 * listings) and loosened back to the real one before the second.
 */
import type { Kysely } from 'kysely';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { replay } from '../../src/replay/replay.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { testBackends } from '../helpers/database.ts';
import { nightOf, sync, worldPerTest } from '../sync/harness.ts';
import { inSchema } from './documented-content.ts';

const strict = vi.hoisted(() => ({ on: true }));

vi.mock('../../src/api/listings.ts', async (importOriginal) => {
  const listings = await importOriginal<typeof import('../../src/api/listings.ts')>();
  // The listings module reads its own listingSchema, not an import that a mock could
  // replace: the strict rule goes on that schema itself.
  const strictSchema = listings.listingSchema.refine(
    (listing) => !(strict.on && listing.status === 'Not Present'),
    { message: 'a strict schema refuses Not Present listings' },
  );
  listings.listingSchema.safeParse = strictSchema.safeParse;
  return listings;
});

const WORLD = { seed: 31, accounts: 1, businessesPerAccount: 4, startDate: '2026-04-01' };

describe.each(testBackends)('quarantine recovery on replay (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  beforeEach(() => {
    strict.on = true;
  });

  it('a record refused on a night loads on replay once its schema accepts it, and says so', async () => {
    const first = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => nightOf(world.sandbox),
    });
    expect(first.status).toBe('partial');
    const quarantined = await world.warehouse.db
      .selectFrom('quarantine')
      .select(['business_id', 'stream', 'payload'])
      .where('stream', '=', 'listings')
      .execute();
    expect(quarantined.length).toBeGreaterThan(0);
    const refusedIds = quarantined.map((q) => (q.payload as { id: number }).id).sort();

    strict.on = false;
    world.sandbox.advanceDays(1);
    const second = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => nightOf(world.sandbox),
    });
    expect(second.status).toBe('succeeded');
    // Live, the refused listings were first seen on the second night.
    const liveFirstSeen = await firstSeen(world.warehouse.db, refusedIds);
    expect(new Set(liveFirstSeen.map((r) => r.first_seen_at.toISOString()))).toEqual(
      new Set(['2026-04-02T04:00:00.000Z']),
    );

    const result = await replay({
      warehouse: world.warehouse,
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      into: 'recovered',
      logger: silentLogger(),
    });
    expect(result.recovered).toBe(quarantined.length);

    const rebuilt = await inSchema(world.warehouse, 'recovered', async (db) => ({
      firstSeen: await firstSeen(db, refusedIds),
      quarantine: await db
        .selectFrom('quarantine')
        .select(['stream', 'recovered_at', 'run_id'])
        .execute(),
    }));
    // Replayed, they load on the night they were first served.
    expect(rebuilt.firstSeen.map((r) => r.listing_id)).toEqual(
      liveFirstSeen.map((r) => r.listing_id),
    );
    expect(new Set(rebuilt.firstSeen.map((r) => r.first_seen_at.toISOString()))).toEqual(
      new Set(['2026-04-01T04:00:00.000Z']),
    );
    expect(rebuilt.quarantine).toHaveLength(quarantined.length);
    expect(
      rebuilt.quarantine.every((q) => q.recovered_at !== null && q.stream === 'listings'),
    ).toBe(true);
    expect(new Set(rebuilt.quarantine.map((q) => q.run_id))).toEqual(new Set([first.runId]));
  });
});

async function firstSeen(db: Kysely<Database>, listingIds: readonly number[]) {
  const rows = await db
    .selectFrom('listings')
    .select(['listing_id', 'first_seen_at'])
    .where('listing_id', 'in', listingIds)
    .orderBy('listing_id')
    .execute();
  return rows.map((r) => ({
    listing_id: Number(r.listing_id),
    first_seen_at: new Date(r.first_seen_at),
  }));
}
