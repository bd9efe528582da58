import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/warehouse/connection.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { ctx, DAY1, DAY1_LATER, DAY2, rank, snapshot } from './fixtures.ts';
import { addAccount, write } from './helpers.ts';

describe.each(testBackends)('rank observations (%s)', (backend) => {
  let wh: Warehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(wh);
    await addAccount(wh);
  });
  afterAll(async () => {
    await wh.close();
  });

  const ranks = (google: number | null, bing: number | null) =>
    snapshot({
      rankings: [
        rank('dentist portland', 'Google', google),
        rank('dentist portland', 'Bing', bing),
      ],
    });

  const stored = () =>
    wh.db
      .selectFrom('rank_observations')
      .select(['observed_on', 'site', 'rank', 'observed_at'])
      .orderBy('observed_on')
      .orderBy('site')
      .execute();

  it('a second run the same day overwrites only what changed', async () => {
    await write(wh, ranks(3, null), ctx(DAY1));
    const result = await write(wh, ranks(2, null), ctx(DAY1_LATER));
    expect(result.stats['rank_observations']).toEqual({
      inserted: 0,
      updated: 1,
      unchanged: 1,
      deleted: 0,
    });
    expect(await stored()).toEqual([
      { observed_on: '2025-03-01', site: 'Bing', rank: null, observed_at: DAY1 },
      { observed_on: '2025-03-01', site: 'Google', rank: 2, observed_at: DAY1_LATER },
    ]);
  });

  it('the next day adds new rows and keeps the history', async () => {
    await write(wh, ranks(3, null), ctx(DAY1));
    const result = await write(wh, ranks(3, 9), ctx(DAY2));
    expect(result.stats['rank_observations']?.inserted).toBe(2);
    expect((await stored()).map((r) => [r.observed_on, r.site, r.rank])).toEqual([
      ['2025-03-01', 'Bing', null],
      ['2025-03-01', 'Google', 3],
      ['2025-03-02', 'Bing', 9],
      ['2025-03-02', 'Google', 3],
    ]);
  });

  it('stores `-` (null) as NULL and a rank turning unranked as an update', async () => {
    await write(wh, ranks(3, 4), ctx(DAY1));
    await write(wh, ranks(null, 4), ctx(DAY1_LATER));
    const google = (await stored()).find((r) => r.site === 'Google');
    expect(google?.rank).toBeNull();
  });

  it('uses the UTC day of the observation', async () => {
    // 23:30 in New York on 28 Feb is 1 March in UTC.
    await write(wh, ranks(1, 1), ctx(new Date('2025-02-28T23:30:00-05:00')));
    expect((await stored())[0]?.observed_on).toBe('2025-03-01');
  });
});
