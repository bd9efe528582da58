/**
 * What the HTML report shows, read from the BI views (docs/warehouse.md, "Views" and
 * "Local-SEO views"): the same numbers a BI tool would chart. The queries are the
 * warehouse's (src/warehouse/report-*.ts); this module chooses the window, the businesses
 * and keywords charted, and shapes the rows for the page.
 *
 * The window ends on the latest day the warehouse holds data for (not the wall clock),
 * so a report of an old or simulated warehouse still shows its data.
 */

import type { Kysely } from 'kysely';
import { addDays, daysBetween } from '../calendar-day.ts';
import { EXIT, ListingsSyncError } from '../errors.ts';
import type { Database } from '../warehouse/database.ts';
import { type KpiFigures, readKpiFigures } from './queries/kpis.ts';
import {
  type AccuracyDay,
  type NewlyInaccurateRow,
  readAccuracyDays,
  readNewlyInaccurate,
  readTurnedInaccurateCounts,
} from './queries/listings.ts';
import {
  type MoverRow,
  readKeywordLosses,
  readKeywordRankPoints,
  readRankMovers,
  readVisibilityPoints,
  type VisibilityPoint,
} from './queries/ranks.ts';
import {
  type AwaitingReviewRow,
  type ReviewDay,
  readAwaitingCounts,
  readAwaitingReviews,
  readResponseSla,
  readReviewDays,
  type SlaRow,
} from './queries/reviews.ts';
import { readScorecardRows, type ScorecardFigures } from './queries/scorecard.ts';
import {
  businessNameOf,
  collectedDays,
  databaseNow,
  onReportConnection,
  type ReportWindow,
} from './queries/window.ts';

// The rows the page shows as the warehouse reads them (src/warehouse/report-*.ts).
export type {
  AccuracyDay,
  AwaitingReviewRow,
  MoverRow,
  NewlyInaccurateRow,
  ReviewDay,
  SlaRow,
  VisibilityPoint,
};

export interface ReportOptions {
  /** Only this business; otherwise the whole warehouse, with the top businesses charted. */
  businessId?: number;
  /** Days in the window, ending on the latest day with data. */
  days: number;
  /** Businesses charted when no business is chosen. */
  topBusinesses?: number;
  /** Keywords charted per business. */
  topKeywords?: number;
}

/** Readable at a glance: a few small charts per business rather than dozens of lines. */
export const DEFAULT_TOP_BUSINESSES = 4;
export const DEFAULT_TOP_KEYWORDS = 2;
/** Lines per rank chart: more than five sites on one chart cannot be told apart. */
export const TOP_SITES = 5;
/** With one business there is room for all of its keywords, up to this many. */
export const SINGLE_BUSINESS_TOP_KEYWORDS = 12;
const NEWLY_INACCURATE_ROWS = 25;
/** Businesses in each of the portfolio's top and bottom lists. */
export const PORTFOLIO_ROWS = 5;
/** Rows per movers table: the few an analyst acts on today. */
const MOVER_ROWS = 12;
const SLA_ROWS = 10;
/** Reviews listed under "Waiting for an answer": a day's work, oldest first. */
const AWAITING_ROWS = 25;

export interface ReportKpis extends KpiFigures {
  /**
   * Reviews waiting for a response: no response stored and none counted upstream, and the
   * API can answer them now (`can_respond`): `awaitingAnswerable`.
   */
  unansweredAnswerable: number;
}

/**
 * Listings that turned Inaccurate in the window (a `listing_inaccurate` alert), counted
 * once each however often they turned, against the listings Inaccurate now.
 */
export interface TurnedInaccurate {
  /** Distinct listings of live businesses with an alert in the window. */
  listings: number;
  /** Their alerts: more than `listings` when one turned, was corrected and turned again. */
  turns: number;
  /** Of `listings`, those Inaccurate now; the rest were corrected since, or removed. */
  stillInaccurate: number;
  /** All listings Inaccurate now (`kpis.inaccurate`): `stillInaccurate` + those Inaccurate since before the window. */
  inaccurateNow: number;
}

/** A health score's five components, 0 to 100 each; null without a value (docs/warehouse.md, "v_location_scorecard"). */
export interface HealthParts {
  accuracy: number | null;
  visibility: number | null;
  rating: number | null;
  waiting: number;
  response: number | null;
}

/** The components' weights in the health score (docs/warehouse.md, "v_location_scorecard"). */
export const HEALTH_WEIGHTS: Readonly<Record<keyof HealthParts, number>> = {
  accuracy: 35,
  visibility: 25,
  rating: 20,
  waiting: 10,
  response: 10,
};

/**
 * One business of the scorecard: its `v_location_scorecard` row (docs/warehouse.md), and
 * the keywords that moved in the report's window. Its "need" is the count of things to
 * act on: Inaccurate listings + reviews waiting for a response + keywords down in the
 * window (docs/running.md, "The report"). The table's default order is the health score,
 * lowest first, then the higher need, then the business id.
 */
export interface ScorecardRow extends ScorecardFigures {
  /** What the score is made of: each component's points. */
  parts: HealthParts;
}

export interface SiteVisibility {
  site: string;
  /** Days with ranks collected, in order; a day not collected has no point. */
  points: VisibilityPoint[];
}

export interface RankPoint {
  day: string;
  /** null: searched, not ranked. Days not collected have no point at all. */
  rank: number | null;
}

export interface KeywordRanks {
  keyword: string;
  /** Sites with observations in the window; only the best `TOP_SITES` are in `sites`. */
  sitesTracked: number;
  /** Site → points in day order. */
  sites: { site: string; points: RankPoint[] }[];
}

export interface BusinessRanks {
  businessId: number;
  name: string;
  keywordsTracked: number;
  keywords: KeywordRanks[];
}

export interface ReportData {
  generatedAt: Date;
  firstDay: string;
  lastDay: string;
  days: number;
  business: { businessId: number; name: string } | null;
  kpis: ReportKpis;
  /** When the scorecard was read (its `now()`): its 90 days end then. */
  scoredAt: Date;
  /** Every live business in scope, the lowest health first. */
  scorecard: ScorecardRow[];
  /**
   * The healthiest and the least healthy businesses, five each at most, never the same
   * one in both (fewer than ten businesses split in two); null with `--business`.
   */
  portfolio: { top: ScorecardRow[]; bottom: ScorecardRow[] } | null;
  /** Visibility per site and day over the window, the best site on the last day first. */
  visibility: SiteVisibility[];
  ranks: BusinessRanks[];
  /** Businesses with rank data in the window, charted or not. */
  businessesWithRanks: number;
  /** Businesses with rank data beyond those charted (0 with `--business`). */
  businessesNotCharted: number;
  accuracy: AccuracyDay[];
  reviews: ReviewDay[];
  /** One row per listing that turned Inaccurate in the window (its latest turn), latest first. */
  newlyInaccurate: NewlyInaccurateRow[];
  turnedInaccurate: TurnedInaccurate;
  sla: SlaRow[];
  /** Unanswered reviews, longest waiting and then lowest rated first (`AWAITING_ROWS`). */
  awaiting: AwaitingReviewRow[];
  /**
   * All reviews without a response, and those of them the API can answer (the reviews
   * waiting for a response: `kpis.unansweredAnswerable`).
   */
  awaitingTotal: number;
  awaitingAnswerable: number;
  /** Worst first: left the top 3/10, then the largest 7- and 30-day rank losses. */
  declines: MoverRow[];
  /** Best first: the largest 7- and 30-day rank gains. */
  gains: MoverRow[];
}

/** `--business` names no business: a usage error (exit 2), like any mistake in a command's call. */
export class ReportInputError extends ListingsSyncError {
  readonly code = 'REPORT_INPUT_INVALID';
  override readonly exitCode = EXIT.usage;
}

/**
 * The latest UTC day with any collected data (today when the warehouse is empty), and
 * the first day of collected history: a window is never wider than the history it shows.
 */
async function dataDays(db: Kysely<Database>): Promise<{ first: string | null; last: string }> {
  const days = await collectedDays(db);
  return { first: days.first, last: days.last ?? new Date().toISOString().slice(0, 10) };
}

/** Reads everything the report shows on one connection (`onReportConnection`: `jit` off). */
export async function readReportData(
  db: Kysely<Database>,
  options: ReportOptions,
): Promise<ReportData> {
  return onReportConnection(db, (connection) => readOnConnection(connection, options));
}

async function readOnConnection(db: Kysely<Database>, options: ReportOptions): Promise<ReportData> {
  const history = await dataDays(db);
  const lastDay = history.last;
  const requestedFirst = addDays(lastDay, -(options.days - 1));
  const firstDay =
    history.first && history.first > requestedFirst && history.first <= lastDay
      ? history.first
      : requestedFirst;
  const businessId = options.businessId;

  let business: ReportData['business'] = null;
  if (businessId !== undefined) {
    const name = await businessNameOf(db, businessId);
    if (name === undefined) {
      throw new ReportInputError(
        `No business with id ${businessId} in the warehouse. Run a sync first, or pick an id from the businesses table.`,
      );
    }
    business = { businessId, name };
  }
  const window: ReportWindow = { firstDay, lastDay, businessId };

  const kpiRow = await readKpiFigures(db, window);
  const kpis = { ...kpiRow, unansweredAnswerable: 0 } as ReportKpis; // set below, with the reviews

  const { scoredAt, scorecard } = await readScorecard(db, window);
  const visibility = await readVisibility(db, window);

  // Charted: the least healthy businesses (the scorecard's order) with rank data in the
  // window, or the chosen one.
  const ranked = scorecard.filter((b) => b.keywordsRanked > 0);
  const topBusinesses = options.topBusinesses ?? DEFAULT_TOP_BUSINESSES;
  const charted = businessId === undefined ? ranked.slice(0, topBusinesses) : ranked;
  const topKeywords =
    options.topKeywords ??
    (businessId === undefined ? DEFAULT_TOP_KEYWORDS : SINGLE_BUSINESS_TOP_KEYWORDS);
  const ranks: BusinessRanks[] = [];
  for (const b of charted)
    ranks.push(await readBusinessRanks(db, b, firstDay, lastDay, topKeywords));

  const accuracy = await readAccuracyDays(db, window);
  const reviews = await readReviewDays(db, window);

  const newlyInaccurate = await readNewlyInaccurate(db, window, NEWLY_INACCURATE_ROWS);
  const turned = await readTurnedInaccurateCounts(db, window);

  const sla = await readResponseSla(db, window, SLA_ROWS);

  const awaiting = await readAwaitingReviews(db, window, AWAITING_ROWS);
  const awaitingCounts = await readAwaitingCounts(db, window);
  kpis.unansweredAnswerable = awaitingCounts?.answerable ?? 0;

  const declines = await readRankMovers(db, window, 'declines', MOVER_ROWS);
  const gains = await readRankMovers(db, window, 'gains', MOVER_ROWS);

  return {
    generatedAt: new Date(),
    firstDay,
    lastDay,
    days: daysBetween(firstDay, lastDay) + 1,
    business,
    kpis,
    scoredAt,
    scorecard,
    portfolio: businessId === undefined ? portfolioOf(scorecard) : null,
    visibility,
    ranks,
    businessesWithRanks: ranked.length,
    businessesNotCharted: ranked.length - charted.length,
    accuracy,
    reviews,
    newlyInaccurate: newlyInaccurate.map(({ alert_id: _, ...row }) => row),
    turnedInaccurate: {
      listings: turned?.listings ?? 0,
      turns: turned?.turns ?? 0,
      stillInaccurate: turned?.stillInaccurate ?? 0,
      inaccurateNow: kpis.inaccurate,
    },
    sla,
    awaiting,
    awaitingTotal: awaitingCounts?.total ?? 0,
    awaitingAnswerable: awaitingCounts?.answerable ?? 0,
    declines,
    gains,
  };
}

/**
 * The scorecard: `v_location_scorecard` (docs/warehouse.md), one row per live business in
 * scope, with its listings and the keywords that moved in the window (`ScorecardRow`),
 * the lowest health first. `now()` is read in the same statement: the view's 90 days end
 * there.
 */
async function readScorecard(
  db: Kysely<Database>,
  window: ReportWindow,
): Promise<{ scoredAt: Date; scorecard: ScorecardRow[] }> {
  const found = await readScorecardRows(db, window);
  const scoredAt = found[0]?.scoredAt ?? (await databaseNow(db));
  return {
    scoredAt: scoredAt ?? new Date(),
    scorecard: found.map(({ scoredAt: _, ...row }) => ({ ...row, parts: healthParts(row) })),
  };
}

/** Each component's points, as docs/warehouse.md ("v_location_scorecard") defines them. */
export function healthParts(
  row: Pick<
    ScorecardRow,
    'accuracyPct' | 'visibilityPct' | 'avgRating90d' | 'waiting' | 'medianHours90d'
  >,
): HealthParts {
  return {
    accuracy: row.accuracyPct,
    visibility: row.visibilityPct,
    rating: row.avgRating90d === null ? null : (row.avgRating90d - 1) * 25,
    waiting: Math.max(0, 100 - 10 * row.waiting),
    response:
      row.medianHours90d === null ? null : Math.max(0, 100 - (row.medianHours90d * 100) / 168),
  };
}

/**
 * The five least healthy (the scorecard's first rows) and the five healthiest (the highest
 * score, then the lower need, then the id), never one business in both: with fewer than
 * ten, the worse half is the bottom and the better half the top.
 */
export function portfolioOf(scorecard: readonly ScorecardRow[]): {
  top: ScorecardRow[];
  bottom: ScorecardRow[];
} {
  const bottomCount = Math.min(PORTFOLIO_ROWS, Math.ceil(scorecard.length / 2));
  const topCount = Math.min(PORTFOLIO_ROWS, scorecard.length - bottomCount);
  const bottom = scorecard.slice(0, bottomCount);
  const top = scorecard
    .filter((row) => !bottom.includes(row))
    .sort((a, b) => b.health - a.health || a.need - b.need || a.businessId - b.businessId)
    .slice(0, topCount);
  return { top, bottom };
}

/**
 * Visibility per site and day over the window, from `v_visibility_daily` (its `day` reaches
 * the read model's index): across businesses each row weighs by its keywords, as
 * docs/warehouse.md ("v_visibility_daily") aggregates it. Live businesses, as the scorecard.
 */
async function readVisibility(
  db: Kysely<Database>,
  window: ReportWindow,
): Promise<SiteVisibility[]> {
  const points = await readVisibilityPoints(db, window);
  const sites = new Map<string, VisibilityPoint[]>();
  for (const { site, ...point } of points) {
    const list = sites.get(site) ?? [];
    sites.set(site, list);
    list.push(point);
  }
  const latest = (s: SiteVisibility) => s.points.at(-1)?.visibility ?? 0;
  return [...sites]
    .map(([site, sitePoints]) => ({ site, points: sitePoints }))
    .sort((a, b) => latest(b) - latest(a) || a.site.localeCompare(b.site));
}

/**
 * The sites a chart shows: those that lost most rank over the window first (a falling
 * line is what an analyst must see), then the rest by their latest rank, best first.
 */
function chartSites(sites: KeywordRanks['sites']): KeywordRanks['sites'] {
  const WORST = 1000; // "not ranked" counts as a rank below any real one
  const latest = (s: KeywordRanks['sites'][number]) => s.points.at(-1)?.rank ?? WORST;
  const loss = (s: KeywordRanks['sites'][number]) => {
    const first = s.points[0]?.rank ?? WORST;
    return Math.max(0, latest(s) - first);
  };
  const falling = [...sites].filter((s) => loss(s) > 0).sort((a, b) => loss(b) - loss(a));
  const rest = sites
    .filter((s) => loss(s) === 0)
    .sort((a, b) => latest(a) - latest(b) || a.site.localeCompare(b.site));
  // At most half the lines for losses, so the best sites stay in view too.
  const half = Math.ceil(TOP_SITES / 2);
  const lead = falling.slice(0, half);
  const others = [...falling.slice(half), ...rest].sort(
    (a, b) => latest(a) - latest(b) || a.site.localeCompare(b.site),
  );
  return [...lead, ...others];
}

/** The business's best-ranking keywords (by their best latest rank on any site), day by day. */
async function readBusinessRanks(
  db: Kysely<Database>,
  business: { businessId: number; name: string },
  firstDay: string,
  lastDay: string,
  topKeywords: number,
): Promise<BusinessRanks> {
  const keywords = await readKeywordLosses(db, business.businessId);
  // The biggest losers first (up to half the charts), then the best-ranking keywords.
  const losers = keywords
    .filter((k) => k.loss > 0)
    .sort((a, b) => b.loss - a.loss || a.keyword.localeCompare(b.keyword))
    .slice(0, Math.ceil(topKeywords / 2))
    .map((k) => k.keyword);
  const chosen = [
    ...losers,
    ...keywords.map((k) => k.keyword).filter((k) => !losers.includes(k)),
  ].slice(0, topKeywords);
  const points = await readKeywordRankPoints(db, business.businessId, chosen, firstDay, lastDay);
  const byKeyword = new Map<string, Map<string, RankPoint[]>>(chosen.map((k) => [k, new Map()]));
  for (const p of points) {
    const sites = byKeyword.get(p.keyword);
    if (!sites) continue;
    const list = sites.get(p.site) ?? [];
    sites.set(p.site, list);
    list.push({ day: p.day, rank: p.rank });
  }
  return {
    businessId: business.businessId,
    name: business.name,
    keywordsTracked: keywords.length,
    keywords: [...byKeyword].map(([keyword, sites]) => {
      const all = [...sites].map(([site, sitePoints]) => ({ site, points: sitePoints }));
      return { keyword, sitesTracked: all.length, sites: chartSites(all).slice(0, TOP_SITES) };
    }),
  };
}
