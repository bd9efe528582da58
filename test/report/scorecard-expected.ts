/**
 * The report's scorecard and its visibility chart computed here from the base tables
 * (`businesses`, `listings`, `reviews`, `review_responses`, `rank_series`, `rank_history`)
 * with the definitions of docs/warehouse.md ("v_visibility_daily", "v_location_scorecard")
 * and docs/running.md ("The report"), never with the views' or the report's SQL: each
 * table is read whole and every figure is computed in TypeScript.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/warehouse/database.ts';

/** docs/warehouse.md, "v_visibility_daily": clicks per 1,000 searches at positions 1–20. */
const CLICKS = [300, 150, 100, 70, 50, 40, 30, 25, 20, 18, 15, 13, 11, 10, 9, 8, 7, 6, 5, 4];
const clicks = (rank: number | null) => (rank === null ? 0 : (CLICKS[rank - 1] ?? 0));
const DAY_MS = 86_400_000;

/**
 * numerator ÷ denominator rounded half away from zero to `decimals`, as PostgreSQL's
 * `round(numeric, n)`, exactly for non-negative integers (no binary fraction on the way).
 */
export function roundRatio(numerator: number, denominator: number, decimals: number): number {
  const scale = 10 ** decimals;
  const sign = numerator < 0 ? -1 : 1;
  return (
    (sign * Math.floor((2 * Math.abs(numerator) * scale + denominator) / (2 * denominator))) / scale
  );
}

export interface ExpectedScore {
  businessId: number;
  name: string;
  listings: number;
  accuracyPct: number | null;
  inaccurate: number;
  avgRating90d: number | null;
  waiting: number;
  medianHours90d: number | null;
  visibilityPct: number | null;
  visibilityChange30d: number | null;
  /** Unrounded: the documented weighted average of the rounded components. */
  health: number;
  /** The component points, null where there is no value (docs/warehouse.md). */
  parts: Record<'accuracy' | 'visibility' | 'rating' | 'waiting' | 'response', number | null>;
  keywordsUp: number;
  keywordsDown: number;
  need: number;
}

const WEIGHTS = { accuracy: 35, visibility: 25, rating: 20, waiting: 10, response: 10 } as const;

/** docs/warehouse.md, "v_location_scorecard": Σ weight × component ÷ Σ weight over those with a value. */
export function healthOf(parts: ExpectedScore['parts']): number {
  let sum = 0;
  let weights = 0;
  for (const [name, weight] of Object.entries(WEIGHTS)) {
    const value = parts[name as keyof typeof WEIGHTS];
    if (value === null) continue;
    sum += weight * value;
    weights += weight;
  }
  return sum / weights;
}

interface RankRow {
  id: number;
  keyword: string;
  site: string;
  day: string;
  rank: number | null;
}

async function rankRows(db: Kysely<Database>): Promise<RankRow[]> {
  return (
    await sql<RankRow>`
      select s.business_id::int as id, s.keyword, s.site, to_char(h.observed_on, 'YYYY-MM-DD') as day,
        h.rank::int as rank
      from rank_history h join rank_series s on s.series_id = h.series_id`.execute(db)
  ).rows;
}

/** Visibility of a set of ranks, ×100 as an integer ratio: 100 × Σ clicks ÷ (n × 300). */
function visibility(ranks: readonly RankRow[]): number {
  return roundRatio(100 * ranks.reduce((sum, r) => sum + clicks(r.rank), 0), ranks.length * 300, 2);
}

/**
 * One row per live business in the report's default order: the lowest health first, then
 * the higher need, then the lower id. `asOf` is the scorecard's `now()` (the 90 days end
 * there); keywords up and down compare the first and last day of `first`…`last`.
 */
export async function expectedScorecard(
  db: Kysely<Database>,
  asOf: Date,
  first: string,
  last: string,
  businessId?: number,
): Promise<ExpectedScore[]> {
  const businesses = (
    await sql<{ id: number; name: string }>`
      select business_id::int as id, name from businesses where archived_at is null`.execute(db)
  ).rows.filter((b) => businessId === undefined || b.id === businessId);
  const listings = (
    await sql<{ id: number; status: string }>`
      select business_id::int as id, status from listings where removed_at is null`.execute(db)
  ).rows;
  const reviews = (
    await sql<{
      id: number;
      reviewId: string;
      rating: number | null;
      reviewedAt: Date | null;
      canRespond: boolean;
      responseCount: number;
    }>`
      select business_id::int as id, review_id as "reviewId", rating::float8 as rating,
        reviewed_at as "reviewedAt", can_respond as "canRespond", response_count::int as "responseCount"
      from reviews where category = 'review' and removed_at is null`.execute(db)
  ).rows;
  const responses = (
    await sql<{ reviewId: string; respondedAt: Date | null }>`
      select review_id as "reviewId", responded_at as "respondedAt"
      from review_responses where removed_at is null`.execute(db)
  ).rows;
  const answered = new Set(responses.map((r) => r.reviewId));
  const firstResponse = new Map<string, number>();
  for (const r of responses) {
    if (!r.respondedAt) continue;
    const at = r.respondedAt.getTime();
    firstResponse.set(r.reviewId, Math.min(firstResponse.get(r.reviewId) ?? Infinity, at));
  }
  const ranks = await rankRows(db);

  const since = asOf.getTime() - 90 * DAY_MS;
  const rows = businesses.map((b): ExpectedScore => {
    const own = listings.filter((l) => l.id === b.id);
    const accurate = own.filter((l) => l.status === 'Accurate').length;
    const inaccurate = own.filter((l) => l.status === 'Inaccurate').length;
    const accuracyPct =
      accurate + inaccurate ? roundRatio(100 * accurate, accurate + inaccurate, 1) : null;

    const mine = reviews.filter((r) => r.id === b.id);
    const waiting = mine.filter(
      (r) => r.canRespond && r.responseCount === 0 && !answered.has(r.reviewId),
    ).length;
    const recent = mine.filter((r) => r.reviewedAt && r.reviewedAt.getTime() >= since);
    const rated = recent.filter((r) => r.rating !== null);
    // Ratings are whole stars: the sum and the count are integers.
    const avgRating90d = rated.length
      ? roundRatio(
          rated.reduce((sum, r) => sum + (r.rating as number), 0),
          rated.length,
          2,
        )
      : null;
    // Milliseconds from the review to its earliest live response, never below 0.
    const delays = recent
      .filter((r) => firstResponse.has(r.reviewId))
      .map((r) =>
        Math.max(0, (firstResponse.get(r.reviewId) as number) - (r.reviewedAt as Date).getTime()),
      )
      .sort((x, y) => x - y);
    let medianHours90d: number | null = null;
    if (delays.length) {
      const mid = Math.floor(delays.length / 2);
      medianHours90d =
        delays.length % 2
          ? roundRatio(delays[mid] as number, 3_600_000, 1)
          : roundRatio((delays[mid - 1] as number) + (delays[mid] as number), 7_200_000, 1);
    }

    // Visibility: the business's latest ranked day, every site together; 30 days before.
    const byDay = new Map<string, RankRow[]>();
    for (const r of ranks) {
      if (r.id !== b.id) continue;
      const list = byDay.get(r.day) ?? [];
      byDay.set(r.day, list);
      list.push(r);
    }
    const days = [...byDay.keys()].sort();
    const latest = days.at(-1);
    const visibilityPct = latest ? visibility(byDay.get(latest) as RankRow[]) : null;
    const monthBefore = latest
      ? days.filter((d) => Date.parse(d) <= Date.parse(latest) - 30 * DAY_MS).at(-1)
      : undefined;
    const visibilityChange30d =
      visibilityPct !== null && monthBefore
        ? Math.round((visibilityPct - visibility(byDay.get(monthBefore) as RankRow[])) * 100) / 100
        : null;

    const parts: ExpectedScore['parts'] = {
      accuracy: accuracyPct,
      visibility: visibilityPct,
      rating: avgRating90d === null ? null : (avgRating90d - 1) * 25,
      waiting: Math.max(0, 100 - 10 * waiting),
      response: medianHours90d === null ? null : Math.max(0, 100 - (medianHours90d * 100) / 168),
    };

    // Keywords up and down in the window: the best rank on any site, first against last
    // day observed; not ranked anywhere is worse than any rank.
    const best = new Map<string, Map<string, number>>();
    for (const r of ranks) {
      if (r.id !== b.id || r.day < first || r.day > last) continue;
      const perDay = best.get(r.keyword) ?? new Map<string, number>();
      best.set(r.keyword, perDay);
      perDay.set(r.day, Math.min(perDay.get(r.day) ?? Infinity, r.rank ?? Infinity));
    }
    let keywordsUp = 0;
    let keywordsDown = 0;
    for (const perDay of best.values()) {
      const sorted = [...perDay].sort(([x], [y]) => x.localeCompare(y));
      const from = sorted[0]?.[1] ?? 0;
      const to = sorted.at(-1)?.[1] ?? 0;
      if (to < from) keywordsUp++;
      if (to > from) keywordsDown++;
    }
    return {
      businessId: b.id,
      name: b.name,
      listings: own.length,
      accuracyPct,
      inaccurate,
      avgRating90d,
      waiting,
      medianHours90d,
      visibilityPct,
      visibilityChange30d,
      health: healthOf(parts),
      parts,
      keywordsUp,
      keywordsDown,
      need: inaccurate + waiting + keywordsDown,
    };
  });
  // The view rounds the score to one decimal; the order is by that rounded score.
  const rounded = (h: number) => Math.round(h * 10 + 1e-9) / 10;
  return rows.sort(
    (a, b) =>
      rounded(a.health) - rounded(b.health) || b.need - a.need || a.businessId - b.businessId,
  );
}

/**
 * Visibility per site and day over `first`…`last` from `rank_history`, every business in
 * scope together: 100 × Σ clicks ÷ (Σ keywords × 300). Unrounded: the view rounds each
 * business's row first (docs/warehouse.md, "Across sites or businesses").
 */
export async function expectedVisibility(
  db: Kysely<Database>,
  first: string,
  last: string,
  businessId?: number,
): Promise<Map<string, Map<string, { keywords: number; visibility: number }>>> {
  const ranks = (await rankRows(db)).filter(
    (r) => r.day >= first && r.day <= last && (businessId === undefined || r.id === businessId),
  );
  const live = new Set(
    (
      await sql<{
        id: number;
      }>`select business_id::int as id from businesses where archived_at is null`.execute(db)
    ).rows.map((r) => r.id),
  );
  const sites = new Map<string, Map<string, { keywords: number; clicks: number }>>();
  for (const r of ranks) {
    if (!live.has(r.id)) continue;
    const days = sites.get(r.site) ?? new Map<string, { keywords: number; clicks: number }>();
    sites.set(r.site, days);
    const day = days.get(r.day) ?? { keywords: 0, clicks: 0 };
    days.set(r.day, day);
    day.keywords++;
    day.clicks += clicks(r.rank);
  }
  return new Map(
    [...sites].map(([site, days]) => [
      site,
      new Map(
        [...days].map(([day, d]) => [
          day,
          { keywords: d.keywords, visibility: (100 * d.clicks) / (d.keywords * 300) },
        ]),
      ),
    ]),
  );
}
