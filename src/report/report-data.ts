/**
 * What the HTML report shows, read from the BI views (docs/warehouse.md, "Views" and
 * "Local-SEO views"): the same numbers a BI tool would chart.
 *
 * The window ends on the latest day the warehouse holds data for (not the wall clock),
 * so a report of an old or simulated warehouse still shows its data.
 */

import { type Kysely, type RawBuilder, sql } from 'kysely';
import { addDays, daysBetween } from '../calendar-day.ts';
import { EXIT, ListingsSyncError } from '../errors.ts';
import type { Database } from '../warehouse/database.ts';

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

export interface ReportKpis {
  accounts: number;
  /** Live (not archived) businesses in scope: the rows of the scorecard. */
  businesses: number;
  listings: number;
  accurate: number;
  inaccurate: number;
  notPresent: number;
  /** Accurate ÷ (Accurate + Inaccurate), null with nothing to rate. */
  accuracyScore: number | null;
  keywordsTracked: number;
  reviewsInWindow: number;
  averageRatingInWindow: number | null;
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
export interface ScorecardRow {
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
  /** What the score is made of: each component's points. */
  parts: HealthParts;
  /**
   * Keywords whose best rank on any search site, on the last day observed in the window,
   * is better (up) or worse (down) than on the first; not ranked counts below every rank.
   */
  keywordsUp: number;
  keywordsDown: number;
  /** Keywords with rank observations in the window: 0 means nothing to chart. */
  keywordsRanked: number;
  need: number;
}

/** A business's visibility on one site and day, or every business's together. */
export interface VisibilityPoint {
  day: string;
  /** Keywords observed on that site that day. */
  keywords: number;
  /** 0 to 100, 2 decimals: `v_visibility_daily.visibility_pct`, weighted by keywords across businesses. */
  visibility: number;
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

export interface AccuracyDay {
  day: string;
  accurate: number;
  inaccurate: number;
  notPresent: number;
  accuracyScore: number | null;
}

export interface ReviewDay {
  day: string;
  newReviews: number;
  averageRating: number | null;
  responses: number;
}

export interface NewlyInaccurateRow {
  detectedAt: Date;
  businessId: number;
  businessName: string | null;
  siteName: string | null;
  previousStatus: string | null;
  currentStatus: string | null;
  wrongFields: string | null;
  liveLink: string | null;
}

export interface SlaRow {
  businessId: number;
  businessName: string | null;
  siteName: string;
  unansweredAnswerable: number;
  oldestUnansweredAgeHours: number | null;
  medianHoursToFirstResponse: number | null;
}

/**
 * A review nobody has answered (no response stored, none counted upstream), the same rows
 * as the query "Reviews waiting for an answer" in docs/warehouse.md.
 */
export interface AwaitingReviewRow {
  reviewId: string;
  businessId: number;
  businessName: string;
  siteName: string;
  rating: number | null;
  reviewedAt: Date | null;
  /** Hours from `reviewedAt` to the end of the report's window. */
  waitingHours: number | null;
  /** The first 80 characters of the text, whitespace collapsed. */
  excerpt: string;
  permalink: string | null;
  /** Whether operation 9 (`api reviews respond`) can answer it. */
  canRespond: boolean;
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
  constructor(message: string) {
    super(message);
    this.name = 'ReportInputError';
  }
}

async function rows<T>(db: Kysely<Database>, query: RawBuilder<T>): Promise<T[]> {
  return (await query.execute(db)).rows;
}

/**
 * The latest UTC day with any collected data (today when the warehouse is empty), and
 * the first day of collected history: a window is never wider than the history it shows.
 * Read from the read models (`rank_latest`, `listing_accuracy_days`, indexed by day), not
 * from a year of rank history.
 */
async function dataDays(db: Kysely<Database>): Promise<{ first: string | null; last: string }> {
  const [row] = await rows(
    db,
    sql<{ first: string | null; last: string | null }>`
      select
        to_char(least(
          (select min(day) from listing_accuracy_days),
          (select min((observed_at at time zone 'UTC')::date) from listing_status_history)
        ), 'YYYY-MM-DD') as first,
        to_char(greatest(
          (select max(observed_on) from rank_latest),
          (select max(day) from listing_accuracy_days),
          (select max((observed_at at time zone 'UTC')::date) from listing_status_history),
          (select max((last_synced_at at time zone 'UTC')::date) from accounts)
        ), 'YYYY-MM-DD') as last`,
  );
  return { first: row?.first ?? null, last: row?.last ?? new Date().toISOString().slice(0, 10) };
}

/**
 * Reads everything the report shows on one connection, with `jit` off: the report's
 * queries are many and short, and on PostgreSQL the JIT compiler costs each of them more
 * than it saves (PGlite has no JIT provider; the setting is harmless there).
 */
export async function readReportData(
  db: Kysely<Database>,
  options: ReportOptions,
): Promise<ReportData> {
  return db.connection().execute(async (connection) => {
    await sql`set jit = off`.execute(connection);
    try {
      return await readOnConnection(connection, options);
    } finally {
      await sql`reset jit`.execute(connection);
    }
  });
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
    const [found] = await rows(
      db,
      sql<{ name: string }>`select name from businesses where business_id = ${businessId}`,
    );
    if (!found) {
      throw new ReportInputError(
        `No business with id ${businessId} in the warehouse. Run a sync first, or pick an id from the businesses table.`,
      );
    }
    business = { businessId, name: found.name };
  }
  // `true` when no business is chosen: one template serves both scopes.
  const scope = (column: string) =>
    businessId === undefined ? sql`true` : sql`${sql.ref(column)} = ${businessId}`;
  const windowStart = sql`${firstDay}::date`;
  const windowEnd = sql`${lastDay}::date`;

  // Each view is read once: the listing figures in one pass over v_listing_accuracy, the
  // review figures in one pass over v_review_daily (a year of history makes a second
  // scan cost as much as the first).
  const [kpiRow] = await rows(
    db,
    sql<Omit<ReportKpis, 'unansweredAnswerable'>>`
      with acc as (
        select count(*)::int as businesses,
          coalesce(sum(listings), 0)::int as listings,
          coalesce(sum(accurate), 0)::int as accurate,
          coalesce(sum(inaccurate), 0)::int as inaccurate,
          coalesce(sum(not_present), 0)::int as not_present,
          round(sum(accurate)::numeric / nullif(sum(accurate) + sum(inaccurate), 0), 4) as score
        from v_listing_accuracy a where ${scope('a.business_id')}
      ), rev as (
        select coalesce(sum(new_reviews), 0)::int as reviews,
          round(sum(average_rating * rated_reviews) / nullif(sum(rated_reviews), 0), 2) as rating
        from v_review_daily r
        where r.day between ${windowStart} and ${windowEnd} and ${scope('r.business_id')}
      )
      select
        (select count(*)::int from accounts) as accounts,
        acc.businesses, acc.listings, acc.accurate, acc.inaccurate,
        acc.not_present as "notPresent", acc.score as "accuracyScore",
        (select count(distinct (k.business_id, k.keyword))::int from keywords k
           join businesses b on b.business_id = k.business_id and b.archived_at is null
           where k.deleted_at is null and ${scope('k.business_id')}) as "keywordsTracked",
        rev.reviews as "reviewsInWindow", rev.rating as "averageRatingInWindow"
      from acc, rev
    `,
  );
  const kpis = { ...kpiRow, unansweredAnswerable: 0 } as ReportKpis; // set below, with the reviews

  const { scoredAt, scorecard } = await readScorecard(db, scope, firstDay, lastDay);
  const visibility = await readVisibility(db, scope, firstDay, lastDay);

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

  const accuracy = await rows(
    db,
    sql<AccuracyDay>`
      select to_char(day, 'YYYY-MM-DD') as day,
        sum(accurate)::int as accurate, sum(inaccurate)::int as inaccurate,
        sum(not_present)::int as "notPresent",
        round(sum(accurate)::numeric / nullif(sum(accurate) + sum(inaccurate), 0), 4) as "accuracyScore"
      from v_listing_accuracy_daily d
      where d.day between ${windowStart} and ${windowEnd} and ${scope('d.business_id')}
      group by day order by day`,
  );

  const reviews = await rows(
    db,
    sql<ReviewDay>`
      select to_char(day, 'YYYY-MM-DD') as day,
        sum(new_reviews)::int as "newReviews",
        round(sum(average_rating * rated_reviews) / nullif(sum(rated_reviews), 0), 2) as "averageRating",
        sum(responses)::int as responses
      from v_review_daily r
      where r.day between ${windowStart} and ${windowEnd} and ${scope('r.business_id')}
      group by day order by day`,
  );

  // A listing that turned Inaccurate twice in the window is one listing: its latest turn.
  const turnedInWindow = sql`
    from v_newly_inaccurate n
    join businesses b on b.business_id = n.business_id and b.archived_at is null
    where (n.detected_at at time zone 'UTC')::date between ${windowStart} and ${windowEnd}
      and ${scope('n.business_id')}`;
  const newlyInaccurate = await rows(
    db,
    sql<NewlyInaccurateRow & { alert_id: string }>`
      select * from (
        select distinct on (n.business_id, n.listing_id)
          n.detected_at as "detectedAt", n.business_id as "businessId",
          n.business_name as "businessName", n.site_name as "siteName",
          n.previous_status as "previousStatus", n.current_status as "currentStatus",
          n.wrong_fields as "wrongFields", n.live_link as "liveLink", n.alert_id
        ${turnedInWindow}
        order by n.business_id, n.listing_id, n.detected_at desc, n.alert_id desc
      ) latest
      order by "detectedAt" desc, alert_id desc
      limit ${NEWLY_INACCURATE_ROWS}`,
  );
  // "Inaccurate now" as v_listing_accuracy counts it: a live listing of a live business.
  const [turned] = await rows(
    db,
    sql<{ listings: number; turns: number; stillInaccurate: number }>`
      select count(distinct (n.business_id, n.listing_id))::int as listings,
        count(*)::int as turns,
        count(distinct (n.business_id, n.listing_id))
          filter (where n.still_inaccurate and n.listing_removed_at is null)::int as "stillInaccurate"
      ${turnedInWindow}`,
  );

  const sla = await rows(
    db,
    sql<SlaRow>`
      select s.business_id as "businessId", b.name as "businessName", s.site_name as "siteName",
        s.unanswered_answerable as "unansweredAnswerable",
        -- Age at the end of the window, not at the wall clock: the window ends on the
        -- latest day with data, and a sandbox's (or an old warehouse's) reviews are dated
        -- by its own clock. The view's own column measures against now().
        round((extract(epoch from (${windowEnd} + 1)::timestamp at time zone 'UTC'
          - s.oldest_unanswered_at) / 3600)::numeric, 1) as "oldestUnansweredAgeHours",
        s.median_hours_to_first_response as "medianHoursToFirstResponse"
      from v_review_response_sla s join businesses b on b.business_id = s.business_id
      where s.unanswered_answerable > 0 and ${scope('s.business_id')}
      order by s.unanswered_answerable desc, s.oldest_unanswered_at asc nulls last,
        s.business_id, s.site_name
      limit ${SLA_ROWS}`,
  );

  const unanswered = unansweredReviews(scope);
  const awaiting = await rows(
    db,
    sql<AwaitingReviewRow>`
      select r.review_id as "reviewId", r.business_id as "businessId", b.name as "businessName",
        r.site_name as "siteName", r.rating::float8 as rating, r.reviewed_at as "reviewedAt",
        round((extract(epoch from (${windowEnd} + 1)::timestamp at time zone 'UTC'
          - r.reviewed_at) / 3600)::numeric, 1)::float8 as "waitingHours",
        left(regexp_replace(r.content, '\\s+', ' ', 'g'), 80) as excerpt,
        r.permalink, r.can_respond as "canRespond"
      ${unanswered}
      order by (r.reviewed_at at time zone 'UTC')::date asc nulls last, r.rating asc nulls last,
        r.reviewed_at, r.review_id
      limit ${AWAITING_ROWS}`,
  );
  const [awaitingCounts] = await rows(
    db,
    sql<{ total: number; answerable: number }>`
      select count(*)::int as total, (count(*) filter (where r.can_respond))::int as answerable
      ${unanswered}`,
  );
  kpis.unansweredAnswerable = awaitingCounts?.answerable ?? 0;

  // Movers, from the latest observation of each series in the window. A rank change is
  // `rank - earlier rank`: positive is a loss (a larger rank number).
  const moverColumns = sql`
    l.business_id as "businessId", b.name as "businessName", l.keyword, l.site,
    to_char(l.observed_on, 'YYYY-MM-DD') as "observedOn", l.rank, l.previous_rank as "previousRank",
    l.rank_7d_ago as "rank7dAgo", l.rank_30d_ago as "rank30dAgo",
    l.rank_change_7d as "rankChange7d", l.rank_change_30d as "rankChange30d",
    coalesce(l.left_top3, false) as "leftTop3", coalesce(l.left_top10, false) as "leftTop10"`;
  const moverScope = sql`
    from v_rank_latest l join businesses b on b.business_id = l.business_id and b.archived_at is null
    where l.observed_on between ${windowStart} and ${windowEnd} and ${scope('l.business_id')}`;
  const declines = await rows(
    db,
    sql<MoverRow>`
      select ${moverColumns} ${moverScope}
        and (l.left_top3 or l.left_top10 or l.rank_change_7d > 0 or l.rank_change_30d > 0)
      order by coalesce(l.left_top3, false) desc, coalesce(l.left_top10, false) desc,
        greatest(coalesce(l.rank_change_7d, 0), coalesce(l.rank_change_30d, 0)) desc,
        l.business_id, l.keyword, l.site
      limit ${MOVER_ROWS}`,
  );
  const gains = await rows(
    db,
    sql<MoverRow>`
      select ${moverColumns} ${moverScope}
        and (l.rank_change_7d < 0 or l.rank_change_30d < 0)
      order by least(coalesce(l.rank_change_7d, 0), coalesce(l.rank_change_30d, 0)) asc,
        l.rank asc nulls last, l.business_id, l.keyword, l.site
      limit ${MOVER_ROWS}`,
  );

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
 * Reviews without a response: none stored and none counted upstream. The same rows as
 * docs/warehouse.md's "Reviews waiting for an answer"; those with `can_respond` are the
 * reviews waiting for a response, counted in the key figures and per business.
 */
function unansweredReviews(scope: (column: string) => RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    from reviews r
    join businesses b on b.business_id = r.business_id and b.archived_at is null
    where r.category = 'review' and r.removed_at is null and r.response_count = 0
      and not exists (select 1 from review_responses p
                      where p.review_id = r.review_id and p.removed_at is null)
      and ${scope('r.business_id')}`;
}

/**
 * The scorecard: `v_location_scorecard` (docs/warehouse.md), one row per live business in
 * scope, with its listings and the keywords that moved in the window (`ScorecardRow`),
 * the lowest health first. `now()` is read in the same statement: the view's 90 days end
 * there.
 */
async function readScorecard(
  db: Kysely<Database>,
  scope: (column: string) => RawBuilder<unknown>,
  firstDay: string,
  lastDay: string,
): Promise<{ scoredAt: Date; scorecard: ScorecardRow[] }> {
  // Not ranked sorts below every rank: a ranking that dropped out of the results is down.
  const NOT_RANKED = 2_147_483_647;
  const found = await rows(
    db,
    sql<Omit<ScorecardRow, 'parts'> & { scoredAt: Date }>`
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
      order by s.health_score asc nulls first, need desc, s.business_id`,
  );
  const scoredAt = found[0]?.scoredAt ?? (await rows(db, sql<{ now: Date }>`select now()`))[0]?.now;
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
  scope: (column: string) => RawBuilder<unknown>,
  firstDay: string,
  lastDay: string,
): Promise<SiteVisibility[]> {
  const points = await rows(
    db,
    sql<VisibilityPoint & { site: string }>`
      select v.site, to_char(v.day, 'YYYY-MM-DD') as day, sum(v.keywords_tracked)::int as keywords,
        round(sum(v.visibility_pct * v.keywords_tracked) / sum(v.keywords_tracked), 2)::float8
          as visibility
      from v_visibility_daily v
      join businesses b on b.business_id = v.business_id and b.archived_at is null
      where v.day between ${firstDay}::date and ${lastDay}::date and ${scope('v.business_id')}
      group by v.site, v.day
      order by v.site, v.day`,
  );
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
  const keywords = await rows(
    db,
    sql<{ keyword: string; loss: number }>`
      select keyword,
        max(greatest(coalesce(rank_change_7d, 0), coalesce(rank_change_30d, 0))
          + case when left_top3 or left_top10 then 1000 else 0 end)::int as loss
      from v_rank_latest
      where business_id = ${business.businessId}
      group by keyword
      order by min(rank) asc nulls last, keyword`,
  );
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
  const points = chosen.length
    ? await rows(
        db,
        sql<{ keyword: string; site: string; day: string; rank: number | null }>`
          select keyword, site, observed_on as day, rank
          from v_rank_daily
          where business_id = ${business.businessId}
            and keyword in (${sql.join(chosen)})
            and observed_on between ${firstDay}::date and ${lastDay}::date
          order by keyword, site, observed_on`,
      )
    : [];
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
