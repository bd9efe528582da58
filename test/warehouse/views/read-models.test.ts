/**
 * The read models the sync writes (`rank_latest`, `listing_accuracy_days`, and the previous
 * observation kept in each `rank_history` row) against the definitions they replace: the
 * views of migration 0003, which computed everything from the history at query time,
 * run here as plain queries over the same history. Forty nights of two businesses go
 * through the writers: ranks on a random walk with days not collected, days not ranked,
 * second runs on the same day, a run dated before a stored day; listings that flip, go
 * and come back, and a business not synced for a week.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Listing, RankObservation } from '../../../src/api/index.ts';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends } from '../../helpers/database.ts';
import { ACCOUNT, ctx, listing, rank, snapshot, summary } from '../fixtures.ts';
import { addAccount, write } from '../helpers.ts';

/** 0003's v_rank_daily, over the history as `rank_observations` shows it. */
const REFERENCE_RANK_DAILY = sql`
  select o.business_id, o.keyword, o.site, o.observed_on, o.rank,
    o.rank is not null as ranked,
    lag(o.observed_on) over w as previous_observed_on,
    lag(o.rank) over w as previous_rank,
    o.rank - lag(o.rank) over w as rank_change,
    case
      when lag(o.observed_on) over w is null then 'first'
      when o.rank is null and lag(o.rank) over w is null then 'not ranked'
      when lag(o.rank) over w is null then 'entered'
      when o.rank is null then 'dropped'
      when o.rank < lag(o.rank) over w then 'up'
      when o.rank > lag(o.rank) over w then 'down'
      else 'same'
    end as movement
  from rank_observations o
  window w as (partition by o.business_id, o.keyword, o.site order by o.observed_on)`;

/** 0003's v_rank_latest without its derived top-N flags (they read the columns compared here). */
const REFERENCE_RANK_LATEST = sql`
  with daily as (${REFERENCE_RANK_DAILY}),
  latest as (
    select distinct on (business_id, keyword, site)
      business_id, keyword, site, observed_on, rank, previous_observed_on, previous_rank
    from daily
    order by business_id, keyword, site, observed_on desc
  )
  select l.business_id, l.keyword, l.site, l.observed_on, l.rank, l.previous_observed_on,
    l.previous_rank, w7.observed_on as compared_7d_on, w7.rank as rank_7d_ago,
    w30.observed_on as compared_30d_on, w30.rank as rank_30d_ago,
    m.best_rank_30d, m.worst_rank_30d, m.observations_30d, m.unranked_days_30d
  from latest l
  left join lateral (
    select o.observed_on, o.rank from rank_observations o
    where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
      and o.observed_on <= l.observed_on - 7
    order by o.observed_on desc limit 1
  ) w7 on true
  left join lateral (
    select o.observed_on, o.rank from rank_observations o
    where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
      and o.observed_on <= l.observed_on - 30
    order by o.observed_on desc limit 1
  ) w30 on true
  cross join lateral (
    select min(o.rank) as best_rank_30d, max(o.rank) as worst_rank_30d,
      count(*)::int as observations_30d,
      (count(*) filter (where o.rank is null))::int as unranked_days_30d
    from rank_observations o
    where o.business_id = l.business_id and o.keyword = l.keyword and o.site = l.site
      and o.observed_on >= l.observed_on - 30
  ) m`;

/** 0003's v_listing_accuracy_daily, from listing_status_history. */
const REFERENCE_ACCURACY_DAILY = sql`
  with bounds as (
    select h.business_id,
      min((h.observed_at at time zone 'UTC')::date) as first_day,
      least(
        greatest(max((h.observed_at at time zone 'UTC')::date),
          max((a.last_synced_at at time zone 'UTC')::date)),
        max((b.archived_at at time zone 'UTC')::date)
      ) as last_day
    from listing_status_history h
    join businesses b on b.business_id = h.business_id
    left join accounts a on a.name = b.account_name
    group by h.business_id
  ),
  days as (
    select business_id, generate_series(first_day, last_day, interval '1 day')::date as day
    from bounds
  ),
  states as (
    select d.business_id, d.day, s.status
    from days d
    join listings l on l.business_id = d.business_id
      and (l.removed_at is null or (l.removed_at at time zone 'UTC')::date > d.day)
    cross join lateral (
      select h.status from listing_status_history h
      where h.business_id = l.business_id and h.listing_id = l.listing_id
        and h.observed_at < ((d.day + 1)::timestamp at time zone 'UTC')
      order by h.observed_at desc limit 1
    ) s
  )
  select business_id, day, count(*)::int as listings,
    (count(*) filter (where status = 'Accurate'))::int as accurate,
    (count(*) filter (where status = 'Inaccurate'))::int as inaccurate,
    (count(*) filter (where status = 'Not Present'))::int as not_present,
    round((count(*) filter (where status = 'Accurate'))::numeric
      / nullif(count(*) filter (where status in ('Accurate', 'Inaccurate')), 0), 4)
      as accuracy_score
  from states group by business_id, day`;

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BUSINESSES = [501, 502];
const KEYWORDS = ['dentist', 'dentist near me'];
const SITES = ['Google', 'Bing', 'Google_new.local'];
const FIRST_NIGHT = Date.parse('2026-02-01T03:00:00Z');
const NIGHTS = 40;
const STATUSES = ['Accurate', 'Inaccurate', 'Not Present'] as const;

async function syncForty(wh: Warehouse): Promise<void> {
  const next = random(11);
  const walk = new Map<string, number>();
  const statuses = new Map<string, (typeof STATUSES)[number]>();
  const night = (n: number, hour = 3) =>
    new Date(FIRST_NIGHT + n * 86_400_000 + (hour - 3) * 3_600_000);

  const ranksFor = (businessId: number): RankObservation[] => {
    const out: RankObservation[] = [];
    for (const keyword of KEYWORDS) {
      for (const site of SITES) {
        if (next() < 1 / 7) continue; // not collected today
        const key = `${businessId}/${keyword}/${site}`;
        const value = Math.max(1, Math.min(60, (walk.get(key) ?? 20) + Math.round(next() * 6 - 3)));
        walk.set(key, value);
        out.push(rank(keyword, site, next() < 0.2 ? null : value));
      }
    }
    return out;
  };
  const listingsFor = (businessId: number, n: number): Listing[] => {
    const out: Listing[] = [];
    for (let id = 1; id <= 4; id++) {
      // Listing 4 of the first business is gone from night 30 on; listing 3 of the second
      // is gone on nights 5 to 9 and then comes back.
      if (businessId === 501 && id === 4 && n >= 30) continue;
      if (businessId === 502 && id === 3 && n >= 5 && n < 10) continue;
      const key = `${businessId}/${id}`;
      const before = statuses.get(key) ?? 'Accurate';
      const status = next() < 0.15 ? (STATUSES[Math.floor(next() * 3)] ?? before) : before;
      statuses.set(key, status);
      out.push(listing(id, { status }));
    }
    return out;
  };
  const sync = async (businessId: number, n: number, hour = 3) => {
    await write(
      wh,
      snapshot({
        businessId,
        summary: summary({ id: businessId }),
        listings: listingsFor(businessId, n),
        rankings: ranksFor(businessId),
        reviews: [],
        keywords: [],
      }),
      ctx(night(n, hour)),
    );
  };

  for (let n = 0; n < NIGHTS; n++) {
    for (const businessId of BUSINESSES) {
      // The second business is not synced for a week: its days carry forward.
      if (businessId === 502 && n >= 12 && n < 19) continue;
      // Night 25 of the first business is synced only after night 26 (a clock set back).
      if (businessId === 501 && n === 25) continue;
      await sync(businessId, n);
      // Every fifth night a second run the same day.
      if (n % 5 === 0) await sync(businessId, n, 15);
      if (businessId === 501 && n === 26) await sync(501, 25);
    }
  }
  await sql`update accounts set last_synced_at = ${night(NIGHTS - 1, 4)}
    where name = ${ACCOUNT}`.execute(wh.db);
}

describe.each(testBackends)('read models written by the sync (%s)', (backend) => {
  let wh: Warehouse;
  // biome-ignore lint/suspicious/noExplicitAny: rows are compared whole
  const rows = async (query: ReturnType<typeof sql>): Promise<any[]> =>
    (await query.execute(wh.db)).rows;

  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
    await addAccount(wh);
    await syncForty(wh);
  });
  afterAll(async () => {
    await wh.close();
  });

  it('v_rank_daily returns what the window-function definition returns', async () => {
    const expected = await rows(sql`select * from (${REFERENCE_RANK_DAILY}) r
      order by business_id, keyword, site, observed_on`);
    expect(expected.length).toBeGreaterThan(BUSINESSES.length * 6 * 30);
    expect(expected.some((r) => r.movement === 'dropped')).toBe(true);
    const actual = await rows(sql`select * from v_rank_daily
      order by business_id, keyword, site, observed_on`);
    expect(actual).toEqual(expected);
  });

  it('v_rank_latest (from rank_latest) returns what the history gives', async () => {
    const expected = await rows(sql`select * from (${REFERENCE_RANK_LATEST}) r
      order by business_id, keyword, site`);
    expect(expected).toHaveLength(BUSINESSES.length * KEYWORDS.length * SITES.length);
    const actual = await rows(sql`select business_id, keyword, site, observed_on, rank,
        previous_observed_on, previous_rank, compared_7d_on, rank_7d_ago, compared_30d_on,
        rank_30d_ago, best_rank_30d, worst_rank_30d, observations_30d, unranked_days_30d
      from v_rank_latest order by business_id, keyword, site`);
    expect(actual).toEqual(expected);
  });

  it('visibility_days sums each day of the history, second runs and a backdated night included', async () => {
    const curve = sql.raw(`'{300,150,100,70,50,40,30,25,20,18,15,13,11,10,9,8,7,6,5,4}'::int[]`);
    const expected = await rows(sql`select business_id, site, observed_on as day,
        count(*)::int as keywords_tracked, count(rank)::int as keywords_ranked,
        sum(coalesce(rank, 101))::int as position_sum,
        (count(*) filter (where rank <= 3))::int as top3,
        (count(*) filter (where rank <= 10))::int as top10,
        coalesce(sum((${curve})[rank]), 0)::int as clicks_per_1000
      from rank_observations group by 1, 2, 3 order by 1, 2, 3`);
    expect(expected.length).toBeGreaterThan(BUSINESSES.length * SITES.length * 30);
    const actual = await rows(sql`select business_id, site, day, keywords_tracked,
        keywords_ranked, position_sum, top3, top10, clicks_per_1000
      from visibility_days order by 1, 2, 3`);
    expect(actual).toEqual(expected);
  });

  // The former view knew only the current removed_at: a listing that came back counted on
  // the days it was gone. The read model stores what each sync saw.
  const CAME_BACK = sql`business_id = 502 and day between '2026-02-06' and '2026-02-10'`;

  it('v_listing_accuracy_daily (from listing_accuracy_days) returns what the history gives', async () => {
    const expected = await rows(sql`select * from (${REFERENCE_ACCURACY_DAILY}) r
      where not (${CAME_BACK}) order by business_id, day`);
    expect(expected).toHaveLength(BUSINESSES.length * NIGHTS - 5);
    const actual = await rows(sql`select * from v_listing_accuracy_daily
      where not (${CAME_BACK}) order by business_id, day`);
    expect(actual).toEqual(expected);
  });

  it('v_listing_accuracy_daily leaves out a listing on the days it was gone', async () => {
    const gone = await rows(sql`select day, listings from v_listing_accuracy_daily
      where ${CAME_BACK} order by day`);
    expect(gone.map((r) => r.listings)).toEqual([3, 3, 3, 3, 3]);
    const formerly = await rows(sql`select day, listings from (${REFERENCE_ACCURACY_DAILY}) r
      where ${CAME_BACK} order by day`);
    expect(formerly.map((r) => r.listings)).toEqual([4, 4, 4, 4, 4]);
  });
});
