/**
 * The demo's "alerts raised" line and the report's "listings turned Inaccurate" figure
 * count the same listings, and the line says what its alerts hold beyond them: a listing
 * that turned twice, and the alerts of archived businesses, which the report leaves out
 * (docs/running.md, "The demo"). A warehouse written as the sync writes it, with one
 * business then archived; the shared demo world's figures are test/report/report-figures.test.ts.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDemoSummary, renderDemoSummary } from '../../src/demo/demo.ts';
import { readTurnedInaccurateCounts } from '../../src/report/queries/listings.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends } from '../helpers/database.ts';
import { ctx, DAY1, DAY2, DAY3, listing, snapshot, summary } from '../warehouse/fixtures.ts';
import { addAccount, write } from '../warehouse/helpers.ts';

type Status = 'Accurate' | 'Inaccurate';
const DAY4 = new Date('2025-03-04T03:00:00.000Z');
const ARCHIVED = 1205;

describe.each(testBackends)("the demo's alerts line against the report (%s)", (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
    await addAccount(wh);
    const listings = (one: Status, two: Status) => ({
      listings: [listing(1, { status: one }), listing(2, { status: two })],
    });
    // Business 1204: listing 1 turns Inaccurate twice, listing 2 once.
    await write(wh, snapshot(listings('Accurate', 'Accurate')), ctx(DAY1));
    await write(wh, snapshot(listings('Inaccurate', 'Inaccurate')), ctx(DAY2));
    await write(wh, snapshot(listings('Accurate', 'Inaccurate')), ctx(DAY3));
    await write(wh, snapshot(listings('Inaccurate', 'Inaccurate')), ctx(DAY4));
    // Business 1205: both listings turn once, then it is archived upstream.
    const other = (one: Status, two: Status) =>
      snapshot({
        businessId: ARCHIVED,
        summary: summary({ id: ARCHIVED }),
        ...listings(one, two),
      });
    await write(wh, other('Accurate', 'Accurate'), ctx(DAY1));
    await write(wh, other('Inaccurate', 'Inaccurate'), ctx(DAY2));
    await sql`update businesses set archived_at = ${DAY3} where business_id = ${ARCHIVED}`.execute(
      wh.db,
    );
  });
  afterAll(async () => {
    await wh?.close();
  });

  it('names the listings the report counts, each turn, and the archived businesses left out', async () => {
    const turned = await readTurnedInaccurateCounts(wh.db, {
      firstDay: '2025-03-01',
      lastDay: '2025-03-04',
      businessId: undefined,
    });
    expect(turned?.listings).toBe(2);
    const line = renderDemoSummary(await readDemoSummary(wh.db)).find((l) =>
      l.trimStart().startsWith('alerts raised'),
    );
    expect(line).toBe(
      "  alerts raised      5, each a listing turned Inaccurate: 2 listings of live businesses (3 times), the report's figure; 2 of archived businesses, which the report leaves out",
    );
  });
});
