/**
 * `visibility_days`, the read model behind `v_visibility_daily` and the scorecard's
 * visibility (docs/warehouse.md, "v_visibility_daily"): per business, site and UTC day, the
 * day's ranks summed (one per series observed that day). Written by the rankings writer in
 * the business's transaction whenever it writes a rank of the day, so a second run on the
 * same day, or a run dated before a stored day, leaves the day's rows what the history
 * says. The writer knows the day's ranks without reading history (what it sent, and each
 * series' `rank_latest` window of 31 days: `writeVisibilitySites`); only a day more than
 * 31 days before a series' latest is summed from its month rows (`writeVisibilityDay`).
 */
import { sql } from 'kysely';
import type { Db } from './database.ts';

/**
 * The click-through curve of `visibility_pct`: of 1,000 searches for a keyword, how many
 * click the result at positions 1 to 20 (none past 20). Shaped like the published organic
 * click-through studies (about 30 % on the first result, halving by the second, a long
 * flat tail on page two), in whole clicks so the sums stay integers. Migration 0019 filled
 * the days before it with the same curve.
 */
export const CLICKS_PER_1000: readonly number[] = [
  300, 150, 100, 70, 50, 40, 30, 25, 20, 18, 15, 13, 11, 10, 9, 8, 7, 6, 5, 4,
];

/** The position an unranked keyword counts as in `avg_position`: one past the last page. */
export const UNRANKED_POSITION = 101;

/** Clicks per 1,000 searches at `rank` (null: not ranked). */
export function clicksAt(rank: number | null): number {
  if (rank === null || rank < 1) return 0;
  return CLICKS_PER_1000[rank - 1] ?? 0;
}

const CURVE = sql.raw(`'{${CLICKS_PER_1000.join(',')}}'::int[]`);

/**
 * Stores the business's `visibility_days` rows of `day` from that day's element of each
 * series' month row (`rank_months`), in
 * one statement; rewrites only rows that differ. Returns the number of rows written.
 */
export async function writeVisibilityDay(db: Db, businessId: number, day: string): Promise<number> {
  const result = await sql`
    insert into visibility_days (business_id, day, site, keywords_tracked, keywords_ranked,
      position_sum, top3, top10, clicks_per_1000)
    select s.business_id, ${day}::date, s.site, count(*), count(h.rank),
      sum(coalesce(h.rank, ${UNRANKED_POSITION})), count(*) filter (where h.rank <= 3),
      count(*) filter (where h.rank <= 10), coalesce(sum((${CURVE})[h.rank]), 0)
    from rank_series s
    join rank_months m on m.series_id = s.series_id
      and m.month = date_trunc('month', ${day}::date)::date
    cross join lateral (select nullif(m.ranks[extract(day from ${day}::date)::int], -1::smallint)
      as rank, m.ranks[extract(day from ${day}::date)::int] is not null as collected) h
    where s.business_id = ${businessId} and h.collected
    group by s.business_id, s.site
    ${CONFLICT}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** A stored day's row is rewritten only when a figure differs. */
const CONFLICT = sql`
    on conflict (business_id, day, site) do update set
      keywords_tracked = excluded.keywords_tracked, keywords_ranked = excluded.keywords_ranked,
      position_sum = excluded.position_sum, top3 = excluded.top3, top10 = excluded.top10,
      clicks_per_1000 = excluded.clicks_per_1000
    where (visibility_days.keywords_tracked, visibility_days.keywords_ranked,
        visibility_days.position_sum, visibility_days.top3, visibility_days.top10,
        visibility_days.clicks_per_1000)
      is distinct from (excluded.keywords_tracked, excluded.keywords_ranked,
        excluded.position_sum, excluded.top3, excluded.top10, excluded.clicks_per_1000)`;

/** One site's ranks of a day, summed as `visibility_days` stores them. */
export interface SiteDay {
  site: string;
  keywordsTracked: number;
  keywordsRanked: number;
  positionSum: number;
  top3: number;
  top10: number;
  clicksPer1000: number;
}

/** Sums a day's ranks (one per series observed; null: not ranked) per site. */
export function sumBySite(ranks: Iterable<{ site: string; rank: number | null }>): SiteDay[] {
  const sites = new Map<string, SiteDay>();
  for (const { site, rank } of ranks) {
    const sum = sites.get(site) ?? {
      site,
      keywordsTracked: 0,
      keywordsRanked: 0,
      positionSum: 0,
      top3: 0,
      top10: 0,
      clicksPer1000: 0,
    };
    sum.keywordsTracked += 1;
    sum.positionSum += rank ?? UNRANKED_POSITION;
    if (rank !== null) {
      sum.keywordsRanked += 1;
      if (rank <= 3) sum.top3 += 1;
      if (rank <= 10) sum.top10 += 1;
      sum.clicksPer1000 += clicksAt(rank);
    }
    sites.set(site, sum);
  }
  return [...sites.values()];
}

/** Stores the business's `visibility_days` rows of `day`, in one statement; rewrites only rows that differ. */
export async function writeVisibilitySites(
  db: Db,
  businessId: number,
  day: string,
  sites: readonly SiteDay[],
): Promise<number> {
  if (sites.length === 0) return 0;
  const column = <K extends keyof SiteDay>(key: K) => sites.map((s) => s[key]);
  const result = await sql`
    insert into visibility_days (business_id, day, site, keywords_tracked, keywords_ranked,
      position_sum, top3, top10, clicks_per_1000)
    select ${businessId}::bigint, ${day}::date, t.*
    from unnest(${column('site')}::text[], ${column('keywordsTracked')}::int[],
      ${column('keywordsRanked')}::int[], ${column('positionSum')}::int[], ${column('top3')}::int[],
      ${column('top10')}::int[], ${column('clicksPer1000')}::int[])
      as t(site, keywords_tracked, keywords_ranked, position_sum, top3, top10, clicks_per_1000)
    ${CONFLICT}`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
