/**
 * The report's scorecard rows: `v_location_scorecard` (docs/warehouse.md,
 * "v_location_scorecard") joined with `v_listing_accuracy` for the live listings, and the
 * keywords whose best rank moved in the window, from `v_rank_daily` (docs/warehouse.md,
 * "v_rank_daily"). The report adds each row's health parts (docs/running.md, "The report").
 */
import { sql } from 'kysely';
import type { Db } from '../../warehouse/database.ts';
import { type ReportWindow, reportScope } from './window.ts';

/** Not ranked sorts below every rank: a ranking that dropped out of the results is down. */
const NOT_RANKED = 2_147_483_647;

export interface ScorecardFigures {
  businessId: number;
  name: string;
  accountName: string | null;
  /** Live listings; `inaccurate` of them are Inaccurate now. */
  listings: number;
  inaccurate: number;
  /** 100 × Accurate ÷ (Accurate + Inaccurate) now, 1 decimal; null with nothing to rate. */
  accuracyPct: number | null;
  /** Reviews waiting for a response, as `ReportKpis.unansweredAnswerable` counts them. */
  waiting: number;
  /** Average rating and median hours to the first response of the reviews of the 90 days to `scoredAt`. */
  avgRating90d: number | null;
  medianHours90d: number | null;
  /** Visibility on the latest ranked day, every site together, and its change over 30 days. */
  visibilityPct: number | null;
  visibilityChange30d: number | null;
  /** 0 to 100, 1 decimal: the view's `health_score`. */
  health: number;
  /**
   * Keywords whose best rank on any search site, on the last day observed in the window,
   * is better (up) or worse (down) than on the first; not ranked counts below every rank.
   */
  keywordsUp: number;
  keywordsDown: number;
  /** Keywords with rank observations in the window: 0 means nothing to chart. */
  keywordsRanked: number;
  /** Inaccurate listings + reviews waiting for a response + keywords down in the window. */
  need: number;
}

/**
 * One row per live business in scope, the lowest health first, then the higher need, then
 * the business id; each with `scoredAt`, the statement's `now()`, where the view's 90 days
 * end.
 */
export async function readScorecardRows(
  db: Db,
  window: ReportWindow,
): Promise<(ScorecardFigures & { scoredAt: Date })[]> {
  const scope = reportScope(window.businessId);
  const { firstDay, lastDay } = window;
  const { rows } = await sql<ScorecardFigures & { scoredAt: Date }>`
      with best as (
        select business_id, keyword, observed_on, coalesce(min(rank), ${NOT_RANKED}) as rank
        from v_rank_daily d
        where d.observed_on between ${firstDay}::date and ${lastDay}::date
          and ${scope('d.business_id')}
        group by business_id, keyword, observed_on
      ), ends as (
        select business_id,
          (array_agg(rank order by observed_on))[1] as first_rank,
          (array_agg(rank order by observed_on desc))[1] as last_rank
        from best group by business_id, keyword
      ), movement as (
        select business_id,
          (count(*) filter (where last_rank < first_rank))::int as up,
          (count(*) filter (where last_rank > first_rank))::int as down,
          count(*)::int as keywords
        from ends group by business_id
      )
      select s.business_id::int as "businessId", s.name, s.account_name as "accountName",
        a.listings, s.inaccurate_listings as inaccurate,
        s.accuracy_pct::float8 as "accuracyPct", s.reviews_waiting as waiting,
        s.avg_rating_90d::float8 as "avgRating90d",
        s.median_hours_to_response_90d::float8 as "medianHours90d",
        s.visibility_pct::float8 as "visibilityPct",
        s.visibility_change_30d::float8 as "visibilityChange30d",
        s.health_score::float8 as health,
        coalesce(m.up, 0) as "keywordsUp", coalesce(m.down, 0) as "keywordsDown",
        coalesce(m.keywords, 0) as "keywordsRanked",
        (s.inaccurate_listings + s.reviews_waiting + coalesce(m.down, 0))::int as need,
        now() as "scoredAt"
      from v_location_scorecard s
      join v_listing_accuracy a on a.business_id = s.business_id
      left join movement m on m.business_id = s.business_id
      where ${scope('s.business_id')} and ${scope('a.business_id')}
      order by s.health_score asc nulls first, need desc, s.business_id`.execute(db);
  return rows;
}
