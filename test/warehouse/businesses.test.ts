import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  archiveMissingBusinesses,
  markBusinessMissing,
} from '../../src/warehouse/tables/businesses.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { ACCOUNT, ctx, DAY1, DAY2, DAY3, snapshot, summary } from './fixtures.ts';
import { addAccount, write } from './helpers.ts';

describe.each(testBackends)('business archiving (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
    await addAccount(wh);
    await addAccount(wh, 'agency-west');
    for (const id of [1, 2, 3, 4]) {
      await write(
        wh,
        snapshot({
          businessId: id,
          summary: summary({ id }),
          listings: null,
          reviews: null,
          rankings: null,
          keywords: null,
        }),
        ctx(DAY1),
      );
    }
    await write(
      wh,
      snapshot({
        accountName: 'agency-west',
        businessId: 9,
        summary: summary({ id: 9 }),
        listings: null,
        reviews: null,
        rankings: null,
        keywords: null,
      }),
      ctx(DAY1),
    );
  });
  afterAll(async () => {
    await wh.close();
  });

  const archived = async () =>
    (
      await wh.db
        .selectFrom('businesses')
        .select(['business_id', 'archived_at'])
        .orderBy('business_id')
        .execute()
    ).map((r) => [r.business_id, r.archived_at]);

  it('archives the businesses the list no longer returns, in scope only', async () => {
    const even = (id: number) => id % 2 === 0;
    expect(await archiveMissingBusinesses(wh.db, ACCOUNT, [1], DAY2, even)).toBe(2);
    expect(await archived()).toEqual([
      [1, null],
      [2, DAY2],
      [3, null],
      [4, DAY2],
      [9, null],
    ]);
    // Without a scope, the rest goes; archived_at is not moved for those already archived.
    expect(await archiveMissingBusinesses(wh.db, ACCOUNT, [1], DAY3)).toBe(1);
    expect(await archived()).toEqual([
      [1, null],
      [2, DAY2],
      [3, DAY3],
      [4, DAY2],
      [9, null],
    ]);
  });

  it('an empty list archives every business of the account and no other', async () => {
    expect(await archiveMissingBusinesses(wh.db, ACCOUNT, [], DAY2)).toBe(4);
    expect((await archived()).at(-1)).toEqual([9, null]);
  });

  it('marks a business missing once, and a later write brings it back', async () => {
    expect(await markBusinessMissing(wh.db, ACCOUNT, 3, DAY2)).toBe(true);
    expect(await markBusinessMissing(wh.db, ACCOUNT, 3, DAY3)).toBe(false);
    expect(await markBusinessMissing(wh.db, ACCOUNT, 12345, DAY3)).toBe(false);
    expect((await archived())[2]).toEqual([3, DAY2]);
    const result = await write(
      wh,
      snapshot({
        businessId: 3,
        summary: summary({ id: 3 }),
        listings: null,
        reviews: null,
        rankings: null,
        keywords: null,
      }),
      ctx(DAY3),
    );
    expect(result.stats['businesses']).toEqual({
      inserted: 0,
      updated: 1,
      unchanged: 0,
      deleted: 0,
    });
    expect((await archived())[2]).toEqual([3, null]);
  });
});
