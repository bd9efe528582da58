/**
 * The visibility read model behind `v_visibility_daily` and the scorecard's visibility
 * (docs/warehouse.md, "visibility_days"): per business, site and UTC day, the day's ranks
 * summed (one per series observed that day), stored in `visibility_months`, one row per
 * business, month and site whose arrays hold a figure per day of the month (NULL: not
 * collected); `visibility_days` is the view that shows them a row per day. Written by the
 * rankings writer in the business's transaction whenever it writes a rank of the day, so a
 * second run on the same day, or a run dated before a stored day, leaves the day what the
 * history says; a night sets only today's element of the current month's rows. The writer
 * knows the day's ranks without reading history (what it sent, and each series'
 * `rank_latest` window of 31 days: `writeVisibilitySites`); only a day more than 31 days
 * before a series' latest is summed from its month rows (`writeVisibilityDay`).
 */
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../database.ts';

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

/** The figures of a day, in `visibility_months`' (and `visibility_days`') column order. */
export const VISIBILITY_FIGURES = [
  'keywords_tracked',
  'keywords_ranked',
  'position_sum',
  'top3',
  'top10',
  'clicks_per_1000',
] as const;

const figures = (f: (column: string) => string) => sql.raw(VISIBILITY_FIGURES.map(f).join(', '));

/** Day d of a `YYYY-MM-DD` day's month: its element in the month rows. */
const dayOfMonth = (day: string) => Number(day.slice(8, 10));
/** The first day of a `YYYY-MM-DD` day's month: its month rows' `month`. */
const monthOf = (day: string) => `${day.slice(0, 8)}01`;

/**
 * Sets element d (the day of the month) of each figure of the business's month row per
 * site, from `sums` (rows of the site and the six figures, in `VISIBILITY_FIGURES` order). A new month
 * row starts with NULLs (not collected) before d; a stored one has its element d set
 * (PostgreSQL extends an array with NULLs past its end), and only when a figure of that
 * day differs, so a second run that finds the same ranks rewrites nothing. Returns the
 * number of rows written.
 */
async function upsertDay(
  db: Db,
  businessId: number,
  day: string,
  sums: RawBuilder<unknown>,
): Promise<number> {
  const d = dayOfMonth(day);
  const result = await sql`
    insert into visibility_months (business_id, month, site, ${figures((c) => c)})
    select ${businessId}::bigint, ${monthOf(day)}::date, t.site,
      ${figures((c) => `array_fill(null::int, array[${d - 1}]) || t.${c}`)}
    from (${sums}) as t(site, ${figures((c) => c)})
    on conflict (business_id, month, site) do update set
      ${figures((c) => `${c}[${d}] = excluded.${c}[${d}]`)}
    where (${figures((c) => `visibility_months.${c}[${d}]`)})
      is distinct from (${figures((c) => `excluded.${c}[${d}]`)})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Stores the business's visibility of `day` from that day's element of each series' month
 * row (`rank_months`), in one statement; rewrites only sites whose day differs. Returns
 * the number of rows written.
 */
export async function writeVisibilityDay(db: Db, businessId: number, day: string): Promise<number> {
  const d = dayOfMonth(day);
  return upsertDay(
    db,
    businessId,
    day,
    sql`
    select s.site, count(*)::int, count(h.rank)::int,
      sum(coalesce(h.rank, ${sql.lit(UNRANKED_POSITION)}))::int,
      (count(*) filter (where h.rank <= 3))::int, (count(*) filter (where h.rank <= 10))::int,
      coalesce(sum((${CURVE})[h.rank]), 0)::int
    from rank_series s
    join rank_months m on m.series_id = s.series_id and m.month = ${monthOf(day)}::date
    cross join lateral (select nullif(m.ranks[${sql.lit(d)}], -1::smallint) as rank) h
    where s.business_id = ${businessId} and m.ranks[${sql.lit(d)}] is not null
    group by s.site`,
  );
}

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

/**
 * Stores the business's visibility of `day`, per site, in one statement; rewrites only
 * sites whose day differs. Returns the number of rows written.
 */
export async function writeVisibilitySites(
  db: Db,
  businessId: number,
  day: string,
  sites: readonly SiteDay[],
): Promise<number> {
  if (sites.length === 0) return 0;
  const column = <K extends keyof SiteDay>(key: K) => sites.map((s) => s[key]);
  return upsertDay(
    db,
    businessId,
    day,
    sql`select * from unnest(${column('site')}::text[], ${column('keywordsTracked')}::int[],
      ${column('keywordsRanked')}::int[], ${column('positionSum')}::int[], ${column('top3')}::int[],
      ${column('top10')}::int[], ${column('clicksPer1000')}::int[])`,
  );
}
