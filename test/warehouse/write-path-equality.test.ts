/**
 * The write path's old-vs-new equality (issue 21): several sandbox nights with changes
 * (listings flipping, ranks moving, reviews arriving and changing, a business archived
 * upstream) build a warehouse whose documented tables and BI views (history and read
 * models included; run ids, times of writing, identities and delivery state left out, as
 * `documentedContent` does) equal, row for row, what the write path built before its
 * rework (fewer statements, compiled once, foreign keys on derived rows dropped).
 *
 * The expected content is a snapshot computed by that earlier write path, on both
 * backends, and kept beside this file (`write-path-equality.expected.json`: per relation,
 * its row count and the SHA-256 of its rows, and the history of the answers stamps given
 * for each output; test/warehouse/write-path-snapshot.ts). The nights
 * are deterministic: a seeded sandbox and a fixed observation time per night. To record
 * the snapshot again (only when the warehouse contract changes on purpose, never to make
 * this test pass): `WRITE_PATH_SNAPSHOT=record npx vitest run <this file>`; it appends the
 * current `APPLIED_BY` and the new output's digest to the history, and refuses a new output
 * under a stamp already given another unless `WRITE_PATH_SNAPSHOT_KEPT="<why>"` says why the
 * same bodies still write the same rows. Recorded again
 * once when the sandbox's input changed, not the write path (issue 39: business names in
 * the English singular, "Bakery" for "Bakerie"): every row count stayed, and only the
 * relations that carry a business name (businesses and their versions, listings, reviews
 * and responses, v_listing_accuracy, v_newly_inaccurate) changed digest.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { archiveBusiness, listBusinesses } from '../../src/api/index.ts';
import { APPLIED_BY } from '../../src/warehouse/write/applied-answers.ts';
import { testBackends } from '../helpers/database.ts';
import { documentedContent } from '../raw/documented-content.ts';
import { nightOf, rowsWritten, sync, type WorldShape, worldPerTest } from '../sync/harness.ts';
import { type RelationDigest, readSnapshot, recordSnapshot } from './write-path-snapshot.ts';

/**
 * Per relation, its row count and the SHA-256 of its rows (already in a stable order):
 * the snapshot stays a few kilobytes where the rows themselves are megabytes. The sandbox's
 * address (a port of the moment, in `accounts.base_url`) is written as `http://sandbox`.
 */
function digestOf(
  content: Record<string, string[]>,
  sandboxBaseUrl: string,
): Record<string, RelationDigest> {
  const out: Record<string, RelationDigest> = {};
  for (const [relation, rows] of Object.entries(content)) {
    out[relation] = {
      rows: rows.length,
      sha256: createHash('sha256')
        .update(rows.join('\n').replaceAll(sandboxBaseUrl, 'http://sandbox'))
        .digest('hex'),
    };
  }
  return out;
}

const WORLD: WorldShape = {
  seed: 31,
  accounts: 2,
  businessesPerAccount: 3,
  startDate: '2026-04-01',
};

const RECORD = process.env['WRITE_PATH_SNAPSHOT'] === 'record';

describe.each(testBackends)('write path equality (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  it('builds, over five nights, the documented tables and views the earlier write path built', async () => {
    const night = async () => {
      const result = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        now: () => nightOf(world.sandbox),
      });
      expect(result.status).toBe('succeeded');
      return result;
    };
    await night();
    // The same night again: an unchanged sync writes nothing.
    const unchanged = await night();
    expect(rowsWritten(unchanged)).toBe(0);
    world.sandbox.advanceDays(1);
    await night();
    const credential = world.sandbox.credentials[1]!;
    const [gone] = (await listBusinesses(world.api, credential)).records;
    await archiveBusiness(world.api, credential, gone!.id);
    world.sandbox.advanceDays(1);
    await night();
    world.sandbox.advanceDays(3);
    await night();

    const content = await documentedContent(world.warehouse.db);
    // The nights did change things, or the comparison would prove little.
    expect(content['listing_status_history']!.length).toBeGreaterThan(content['listings']!.length);
    expect(content['review_versions']!.length).toBeGreaterThan(content['reviews']!.length);
    expect(content['business_versions']!.length).toBeGreaterThan(0);
    expect(content['businesses']!.some((row) => JSON.parse(row).archived_at !== null)).toBe(true);
    expect(
      new Set(content['rank_observations']!.map((row) => JSON.parse(row).observed_on)).size,
    ).toBe(4);
    expect(content['alerts']!.length).toBeGreaterThan(0);

    const digest = digestOf(content, world.sandbox.baseUrl);
    if (RECORD) recordSnapshot(digest, APPLIED_BY, process.env['WRITE_PATH_SNAPSHOT_KEPT']);
    const expected = readSnapshot().relations;
    expect(Object.keys(digest).sort()).toEqual(Object.keys(expected).sort());
    for (const relation of Object.keys(expected)) {
      expect(digest[relation], relation).toEqual(expected[relation]);
    }
  });
});
