/**
 * The report's rank figures: visibility per site and day from `v_visibility_daily`, each
 * business's keywords and their ranks from `v_rank_latest` and `v_rank_daily`, and the
 * keywords that moved most (docs/warehouse.md, "v_visibility_daily", "v_rank_daily" and
 * "v_rank_latest"; docs/running.md, "The report"). Live businesses only, as the scorecard.
 */
import { sql } from 'kysely';
import type { Db } from '../../warehouse/database.ts';
import { type ReportWindow, reportScope, windowBounds } from './window.ts';

/** A business's visibility on one site and day, or every business's together. */
export interface VisibilityPoint {
  day: string;
  /** Keywords observed on that site that day. */
  keywords: number;
  /** 0 to 100, 2 decimals: `v_visibility_daily.visibility_pct`, weighted by keywords across businesses. */
  visibility: number;
}

/**
 * Visibility per site and day over the window, in site and day order (its `day` reaches
 * the read model's index): across businesses each row weighs by its keywords, as
 * docs/warehouse.md ("v_visibility_daily") aggregates it.
 */
export async function readVisibilityPoints(
  db: Db,
  window: ReportWindow,
): Promise<(VisibilityPoint & { site: string })[]> {
  const scope = reportScope(window.businessId);
  const { firstDay, lastDay } = window;
  const { rows } = await sql<VisibilityPoint & { site: string }>`
      select v.site, to_char(v.day, 'YYYY-MM-DD') as day, sum(v.keywords_tracked)::int as keywords,
        round(sum(v.visibility_pct * v.keywords_tracked) / sum(v.keywords_tracked), 2)::float8
          as visibility
      from v_visibility_daily v
      join businesses b on b.business_id = v.business_id and b.archived_at is null
      where v.day between ${firstDay}::date and ${lastDay}::date and ${scope('v.business_id')}
      group by v.site, v.day
      order by v.site, v.day`.execute(db);
  return rows;
}

/**
 * The business's keywords, the best latest rank on any site first, each with its largest
 * 7- or 30-day rank loss (1000 more when it left the top 3 or top 10; 0 without a loss).
 */
export async function readKeywordLosses(
  db: Db,
  businessId: number,
): Promise<{ keyword: string; loss: number }[]> {
  const { rows } = await sql<{ keyword: string; loss: number }>`
      select keyword,
        max(greatest(coalesce(rank_change_7d, 0), coalesce(rank_change_30d, 0))
          + case when left_top3 or left_top10 then 1000 else 0 end)::int as loss
      from v_rank_latest
      where business_id = ${businessId}
      group by keyword
      order by min(rank) asc nulls last, keyword`.execute(db);
  return rows;
}

/**
 * The ranks of these keywords of the business, per site and observed day in the window,
 * in keyword, site and day order (none read when no keyword is given).
 */
export async function readKeywordRankPoints(
  db: Db,
  businessId: number,
  keywords: readonly string[],
  firstDay: string,
  lastDay: string,
): Promise<{ keyword: string; site: string; day: string; rank: number | null }[]> {
  if (keywords.length === 0) return [];
  const { rows } = await sql<{ keyword: string; site: string; day: string; rank: number | null }>`
          select keyword, site, observed_on as day, rank
          from v_rank_daily
          where business_id = ${businessId}
            and keyword in (${sql.join(keywords)})
            and observed_on between ${firstDay}::date and ${lastDay}::date
          order by keyword, site, observed_on`.execute(db);
  return rows;
}

/** A keyword on a site whose rank moved: the report leads with these. */
export interface MoverRow {
  businessId: number;
  businessName: string;
  keyword: string;
  site: string;
  observedOn: string;
  rank: number | null;
  /** The observation before the latest (what "left the top 3" compares with). */
  previousRank: number | null;
  /** The rank 7 and 30 days before the latest observation (null: not ranked, or no observation that old). */
  rank7dAgo: number | null;
  rank30dAgo: number | null;
  rankChange7d: number | null;
  rankChange30d: number | null;
  leftTop3: boolean;
  leftTop10: boolean;
}

/**
 * The two lists of movers: which series each keeps, and its order before the tie-break.
 * A rank change is `rank - earlier rank`: positive is a loss (a larger rank number).
 */
const MOVERS = {
  /** Worst first: left the top 3/10, then the largest 7- and 30-day rank losses. */
  declines: {
    keep: sql`l.left_top3 or l.left_top10 or l.rank_change_7d > 0 or l.rank_change_30d > 0`,
    order: sql`coalesce(l.left_top3, false) desc, coalesce(l.left_top10, false) desc,
      greatest(coalesce(l.rank_change_7d, 0), coalesce(l.rank_change_30d, 0)) desc`,
  },
  /** Best first: the largest 7- and 30-day rank gains. */
  gains: {
    keep: sql`l.rank_change_7d < 0 or l.rank_change_30d < 0`,
    order: sql`least(coalesce(l.rank_change_7d, 0), coalesce(l.rank_change_30d, 0)) asc,
      l.rank asc nulls last`,
  },
};

/** Movers of one list, from the latest observation of each series in the window; `limit` rows at most. */
export async function readRankMovers(
  db: Db,
  window: ReportWindow,
  list: keyof typeof MOVERS,
  limit: number,
): Promise<MoverRow[]> {
  const scope = reportScope(window.businessId);
  const { windowStart, windowEnd } = windowBounds(window);
  const { keep, order } = MOVERS[list];
  const { rows } = await sql<MoverRow>`
    select l.business_id as "businessId", b.name as "businessName", l.keyword, l.site,
      to_char(l.observed_on, 'YYYY-MM-DD') as "observedOn", l.rank, l.previous_rank as "previousRank",
      l.rank_7d_ago as "rank7dAgo", l.rank_30d_ago as "rank30dAgo",
      l.rank_change_7d as "rankChange7d", l.rank_change_30d as "rankChange30d",
      coalesce(l.left_top3, false) as "leftTop3", coalesce(l.left_top10, false) as "leftTop10"
    from v_rank_latest l join businesses b on b.business_id = l.business_id and b.archived_at is null
    where l.observed_on between ${windowStart} and ${windowEnd} and ${scope('l.business_id')}
      and (${keep})
    order by ${order}, l.business_id, l.keyword, l.site
    limit ${limit}`.execute(db);
  return rows;
}
