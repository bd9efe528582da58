/**
 * `v_location_scorecard` reads its visibility off `visibility_months` by `(business_id,
 * month)` (migration 0033): its latest day and the day 30 or more before it must be the
 * ones `visibility_days` gives, where a business's days have gaps: a latest day only one
 * site reached, a day 30 before that falls in a month the business has no row for, a month
 * whose first collected day is after it, no visibility at all. The oracle is migration
 * 0021's definition, over the day view (`visibility_days`, whose rows the packing test
 * compares with day rows built independently).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../../src/warehouse/driver/connection.ts';
import { createTestWarehouse, testBackends } from '../../helpers/database.ts';

/** A business's month row of one site: its collected days (day of month → keywords tracked). */
interface MonthRow {
  businessId: number;
  month: string;
  site: string;
  days: Record<number, number>;
}

const ROWS: MonthRow[] = [
  // 901: latest day Feb 12 on Bing only; the day 30 before, Jan 13, in January.
  { businessId: 901, month: '2026-01-01', site: 'Google', days: range(1, 31, 3) },
  { businessId: 901, month: '2026-02-01', site: 'Google', days: range(1, 10, 3) },
  { businessId: 901, month: '2026-02-01', site: 'Bing', days: range(1, 12, 2) },
  // 902: latest Mar 20; 30 before is Feb 18, and February has no row: Jan 5.
  { businessId: 902, month: '2026-01-01', site: 'Google', days: range(1, 5, 3) },
  { businessId: 902, month: '2026-03-01', site: 'Google', days: range(1, 20, 3) },
  // 903: latest Mar 3; 30 before is Feb 1, before February's first collected day (20):
  // January's last, Jan 2 on Bing.
  { businessId: 903, month: '2026-01-01', site: 'Bing', days: range(1, 2, 4) },
  { businessId: 903, month: '2026-02-01', site: 'Google', days: range(20, 28, 3) },
  { businessId: 903, month: '2026-03-01', site: 'Google', days: range(1, 3, 3) },
  // 904: latest Apr 16; 30 before is Mar 17, after March's last collected day (9): Mar 9.
  { businessId: 904, month: '2026-03-01', site: 'Google', days: range(1, 9, 3) },
  { businessId: 904, month: '2026-04-01', site: 'Google', days: range(1, 16, 3) },
  // 905: no visibility at all.
];

function range(first: number, last: number, tracked: number): Record<number, number> {
  const out: Record<number, number> = {};
  for (let d = first; d <= last; d++) out[d] = tracked;
  return out;
}

/** The figures' arrays of a month row: tracked, ranked, position sum, top 3, top 10, clicks. */
function arrays(row: MonthRow): string[] {
  const last = Math.max(...Object.keys(row.days).map(Number));
  const figure = (f: (day: number, tracked: number) => number) => {
    const out: string[] = [];
    for (let d = 1; d <= last; d++) {
      const tracked = row.days[d];
      out.push(tracked === undefined ? 'NULL' : String(f(d, tracked)));
    }
    return `{${out.join(',')}}`;
  };
  return [
    figure((_, t) => t),
    figure((_, t) => t - 1),
    figure((d, t) => t * (d % 7) + 1),
    figure(() => 1),
    figure((_, t) => t - 1),
    figure((d, t) => (t * 37 * (1 + (d % 5)) + row.businessId) % 900),
  ];
}

describe.each(testBackends)('the scorecard visibility off the month rows (%s)', (backend) => {
  let wh: Warehouse;

  beforeAll(async () => {
    wh = await createTestWarehouse(backend);
    await sql`insert into accounts (name, user_email, base_url)
      values ('acme', 'ops@example.com', 'https://api.example.com')`.execute(wh.db);
    for (const id of [901, 902, 903, 904, 905]) {
      await sql`insert into businesses (business_id, account_name, name, content_hash,
          first_seen_at, last_seen_at, profile_changed_at)
        values (${id}, 'acme', ${`Business ${id}`}, 'h', now(), now(), now())`.execute(wh.db);
    }
    await sql`insert into rank_days (observed_on, month, day)
      select g::date, date_trunc('month', g)::date, extract(day from g)::smallint
      from generate_series(date '2026-01-01', date '2026-04-30', interval '1 day') g
      on conflict (observed_on) do nothing`.execute(wh.db);
    for (const row of ROWS) {
      const [tracked, ranked, positions, top3, top10, clicks] = arrays(row);
      await sql`insert into visibility_months (business_id, month, site, keywords_tracked,
          keywords_ranked, position_sum, top3, top10, clicks_per_1000)
        values (${row.businessId}, ${row.month}::date, ${row.site}, ${tracked}::int[],
          ${ranked}::int[], ${positions}::int[], ${top3}::int[], ${top10}::int[],
          ${clicks}::int[])`.execute(wh.db);
    }
  });
  afterAll(async () => {
    await wh.close();
  });

  it('gives the latest day and the day 30 before as visibility_days does', async () => {
    const { rows: card } = await sql<Record<string, unknown>>`
      select business_id::int as business_id, visibility_pct, visibility_change_30d
      from v_location_scorecard order by business_id`.execute(wh.db);
    // Migration 0021's visibility, over the day view.
    const { rows: oracle } = await sql<Record<string, unknown>>`
      select b.business_id::int as business_id, vn.visibility_pct,
        vn.visibility_pct - vp.visibility_pct as visibility_change_30d
      from businesses b
      left join lateral (
        select v.day from visibility_days v where v.business_id = b.business_id
        order by v.day desc limit 1
      ) latest on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * 300), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = latest.day
      ) vn on true
      left join lateral (
        select v.day from visibility_days v
        where v.business_id = b.business_id and v.day <= latest.day - 30
        order by v.day desc limit 1
      ) month_before on true
      left join lateral (
        select round(100 * sum(v.clicks_per_1000)::numeric
            / (sum(v.keywords_tracked) * 300), 2) as visibility_pct
        from visibility_days v where v.business_id = b.business_id and v.day = month_before.day
      ) vp on true
      order by b.business_id`.execute(wh.db);
    expect(card).toEqual(oracle);
    // Every case is one: a change for the four with visibility, none for the one without.
    expect(card.map((r) => r.visibility_change_30d !== null)).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
    // 902's latest day Mar 20 (day 20 of its clicks) against Jan 5, read back from the rows.
    const pct = (day: number, id: number) =>
      Math.round((100 * 100 * ((3 * 37 * (1 + (day % 5)) + id) % 900)) / (3 * 300)) / 100;
    expect(Number(card[1]?.visibility_pct)).toBe(pct(20, 902));
    expect(Number(card[1]?.visibility_change_30d)).toBeCloseTo(pct(20, 902) - pct(5, 902), 2);
  });
});
