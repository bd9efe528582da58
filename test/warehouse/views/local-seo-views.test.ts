/**
 * The local-SEO views (docs/warehouse.md, "Local-SEO views") over a sandbox's nights,
 * against figures computed here from the sandbox's own world (its ranks, listings and
 * reviews as the upstream serves them on each day, never through src/api nor the views'
 * SQL), with the formulas as docs/warehouse.md states them.
 *
 * Twenty nights in a row, then a gap of ten days and a last night (so the 30-day change
 * of visibility has a day to compare with, and days between syncs carry forward). The
 * world holds the edge cases the formulas must get right: a business with no keywords
 * (its keywords are deleted upstream before each night), keywords never ranked on a site,
 * a listing fixed and broken again twice, reviews answered before the sync first saw them.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { deleteKeyword } from '../../../src/api/index.ts';
import { parseAlertRules } from '../../../src/config/alert-rules.ts';
import { buildRankings, listKeywords } from '../../../src/sandbox/keywords.ts';
import { buildListings } from '../../../src/sandbox/listings.ts';
import { STATE_BY_ID } from '../../../src/sandbox/reference-data.ts';
import { respondRefusal } from '../../../src/sandbox/responses.ts';
import { buildReviews } from '../../../src/sandbox/reviews.ts';
import {
  type BusinessView,
  createWorld,
  dayToDate,
  listBusinesses,
  mutationsFor,
  type World,
} from '../../../src/sandbox/world.ts';
import { testBackends } from '../../helpers/database.ts';
import { nightOf, sync, type WorldShape, worldPerTest } from '../../sync/harness.ts';

/** docs/warehouse.md, "v_visibility_daily": clicks per 1,000 searches at positions 1–20. */
const CURVE = [300, 150, 100, 70, 50, 40, 30, 25, 20, 18, 15, 13, 11, 10, 9, 8, 7, 6, 5, 4];
const UNRANKED = 101;
const DAY_MS = 86_400_000;

const NIGHTS = 20;
const GAP = 10;
/** The nights synced: 0–19, then day 30. */
const SYNCED = [...Array.from({ length: NIGHTS }, (_, d) => d), NIGHTS + GAP];
const LAST = NIGHTS + GAP;

/** The last night is today, so the scorecard's 90 days (to now()) cover the world's recent reviews. */
const START = new Date(Date.now() - LAST * DAY_MS).toISOString().slice(0, 10);
// Seed 1's first two businesses hold a listing fixed and broken again twice in 20 nights.
const WORLD: WorldShape = { seed: 1, accounts: 1, businessesPerAccount: 3, startDate: START };
/** The business whose keywords are deleted upstream before every night. */
const NO_KEYWORDS = 10_000_003;
/** Shorter than the view's 30 days: the rules file's window is the alert's own. */
const ALERT_WINDOW_DAYS = 5;

/** PostgreSQL's round(x, k) for x ≥ 0 given as a fraction of integers. */
function round(numerator: number, denominator: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round((numerator * scale) / denominator) / scale;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** A date as the upstream gives it: a day (midnight UTC) or an instant. */
function instant(date: string): number {
  return Date.parse(date.length === 10 ? `${date}T00:00:00Z` : date);
}

/** Monday of the UTC week of `ms`, `YYYY-MM-DD`. */
function weekOf(ms: number): string {
  const day = new Date(ms);
  const monday =
    Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate()) -
    ((day.getUTCDay() + 6) % 7) * DAY_MS;
  return new Date(monday).toISOString().slice(0, 10);
}

function businessesOn(world: World, day: number): BusinessView[] {
  return listBusinesses(world, world.accounts[0] as World['accounts'][number], day);
}

interface RankRow {
  site: string;
  rank: number | null;
}

function ranksOf(world: World, business: BusinessView, day: number): RankRow[] {
  const rows: RankRow[] = [];
  for (const sites of Object.values(buildRankings(world, business, day))) {
    for (const [site, value] of Object.entries(sites)) {
      if (site === 'Google_new') {
        const { local, organic } = value as { local: number; organic: number };
        rows.push(
          { site: 'Google_new.local', rank: local },
          { site: 'Google_new.organic', rank: organic },
        );
      } else rows.push({ site, rank: value === '-' ? null : (value as number) });
    }
  }
  return rows;
}

/** The figures of one site's (or a business's) ranks on a day, by the documented formulas. */
function visibility(ranks: readonly RankRow[]) {
  const tracked = ranks.length;
  const ranked = ranks.filter((r) => r.rank !== null);
  const clicks = ranked.reduce((sum, r) => sum + (CURVE[(r.rank as number) - 1] ?? 0), 0);
  return {
    keywords_tracked: tracked,
    keywords_ranked: ranked.length,
    avg_position: round(
      ranks.reduce((sum, r) => sum + (r.rank ?? UNRANKED), 0),
      tracked,
      2,
    ),
    top3_share: round(ranked.filter((r) => (r.rank as number) <= 3).length, tracked, 4),
    top10_share: round(ranked.filter((r) => (r.rank as number) <= 10).length, tracked, 4),
    visibility_pct: round(100 * clicks, tracked * CURVE[0]!, 2),
  };
}

function listingsOf(world: World, business: BusinessView, day: number) {
  const iso = STATE_BY_ID.get(business.profile.stateId)?.iso ?? '';
  return buildListings(world, business, day, iso);
}

interface ReviewTruth {
  siteName: string;
  reviewedAt: number;
  rating: number | null;
  canRespond: boolean;
  answered: boolean;
  firstResponseAt: number | null;
}

function reviewsOf(world: World, business: BusinessView, day: number): ReviewTruth[] {
  const out: ReviewTruth[] = [];
  const canRespond = (item: Parameters<typeof respondRefusal>[2], responses: unknown[]) =>
    respondRefusal(world, business, item, day, responses.length) === null;
  for (const [siteName, items] of Object.entries(
    buildReviews(world, business, day, 'review', canRespond),
  )) {
    for (const item of items) {
      const responses = item['responses'] as { date: string }[];
      const times = responses.map((r) => instant(r.date));
      out.push({
        siteName,
        reviewedAt: instant(String(item['date'])),
        rating: typeof item['rating'] === 'number' ? item['rating'] : null,
        canRespond: item['can_respond'] === true,
        answered: responses.length > 0,
        firstResponseAt: times.length ? Math.min(...times) : null,
      });
    }
  }
  return out;
}

/** Hours from a review to its first response; a response dated earlier counts as 0. */
function hoursToResponse(review: ReviewTruth): number | null {
  if (review.firstResponseAt === null) return null;
  return Math.max(0, (review.firstResponseAt - review.reviewedAt) / 1000);
}

interface Episode {
  business_id: number;
  listing_id: number;
  site_name: string;
  turned_inaccurate_on: string;
  fixed_on: string | null;
  days_to_fix: number | null;
  broken_again: boolean;
  /** Days from the previous fix, when there is one. */
  sinceFix: number | null;
}

/** Each listing's Inaccurate episodes over the synced nights. */
function episodesOf(world: World): Episode[] {
  const episodes: Episode[] = [];
  const byListing = new Map<string, { status: string; day: number }[]>();
  for (const day of SYNCED) {
    for (const business of businessesOn(world, day)) {
      for (const listing of listingsOf(world, business, day)) {
        const key = `${business.id}:${listing['id']}:${listing['site_name']}`;
        const seen = byListing.get(key) ?? [];
        seen.push({ status: String(listing['status']), day });
        byListing.set(key, seen);
      }
    }
  }
  for (const [key, seen] of byListing) {
    const [businessId, listingId, siteName] = key.split(':');
    let open: Episode | null = null;
    let lastFix: number | null = null;
    seen.forEach(({ status, day }, i) => {
      const before = i > 0 ? seen[i - 1]?.status : undefined;
      if (status === 'Inaccurate' && before !== 'Inaccurate') {
        const sinceFix = lastFix === null ? null : day - lastFix;
        open = {
          business_id: Number(businessId),
          listing_id: Number(listingId),
          site_name: siteName ?? '',
          turned_inaccurate_on: dayToDate(world, day),
          fixed_on: null,
          days_to_fix: null,
          broken_again: sinceFix !== null && sinceFix <= 30,
          sinceFix,
        };
        episodes.push(open);
      } else if (status !== 'Inaccurate' && before === 'Inaccurate' && open) {
        const turned: number = Date.parse(open.turned_inaccurate_on);
        open.fixed_on = dayToDate(world, day);
        open.days_to_fix = (Date.parse(open.fixed_on) - turned) / DAY_MS;
        lastFix = day;
        open = null;
      }
    });
  }
  return episodes;
}

const rulesWithBrokenAgain = parseAlertRules(
  { rules: { listing_broken_again: { enabled: true, windowDays: ALERT_WINDOW_DAYS } } },
  'test rules',
);

describe.each(testBackends)('local-SEO views over sandbox nights (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);
  // The world as the sandbox holds it, with the same keyword deletions.
  const truth = createWorld(WORLD);

  // biome-ignore lint/suspicious/noExplicitAny: view rows are read untyped and compared whole
  const select = async (query: ReturnType<typeof sql>): Promise<any[]> =>
    (await query.execute(world.warehouse.db)).rows;

  it('computes every figure as the sandbox answers give it, night after night', async () => {
    const credential = world.sandbox.credentials[0]!;
    for (const day of SYNCED) {
      if (day > 0) world.sandbox.advanceDays(day === LAST ? GAP + 1 : 1);
      expect(world.sandbox.today()).toBe(dayToDate(truth, day));
      // The business with no keywords: whatever it has today is deleted upstream first.
      const stripped = businessesOn(truth, day).find((b) => b.id === NO_KEYWORDS);
      for (const keyword of stripped ? listKeywords(truth, stripped, day) : []) {
        await deleteKeyword(world.api, credential, keyword.id);
        mutationsFor(truth, NO_KEYWORDS).deletedKeywords.add(keyword.id);
      }
      const result = await sync(world.warehouse, world.api, world.sandbox.credentials, {
        now: () => nightOf(world.sandbox),
        alertRules: rulesWithBrokenAgain,
      });
      expect(result.status).toBe('succeeded');
    }
    const live = businessesOn(truth, LAST);
    expect(live.map((b) => b.id).sort()).toEqual([10_000_001, 10_000_002, NO_KEYWORDS]);

    // v_visibility_daily: every business, site and synced day.
    const expectedVisibility: Record<string, unknown>[] = [];
    for (const day of SYNCED) {
      for (const business of businessesOn(truth, day)) {
        const bySite = new Map<string, RankRow[]>();
        for (const row of ranksOf(truth, business, day)) {
          bySite.set(row.site, [...(bySite.get(row.site) ?? []), row]);
        }
        for (const [site, ranks] of bySite) {
          expectedVisibility.push({
            business_id: business.id,
            site,
            day: dayToDate(truth, day),
            ...visibility(ranks),
          });
        }
      }
    }
    const visibilityRows = (await select(sql`select * from v_visibility_daily`)).map((r) => ({
      business_id: Number(r.business_id),
      site: r.site,
      day: String(r.day),
      keywords_tracked: r.keywords_tracked,
      keywords_ranked: r.keywords_ranked,
      avg_position: Number(r.avg_position),
      top3_share: Number(r.top3_share),
      top10_share: Number(r.top10_share),
      visibility_pct: Number(r.visibility_pct),
    }));
    const byKey = (r: Record<string, unknown>) => `${r['business_id']}|${r['site']}|${r['day']}`;
    const sortRows = <T extends Record<string, unknown>>(rows: T[]) =>
      [...rows].sort((a, b) => byKey(a).localeCompare(byKey(b)));
    expect(sortRows(visibilityRows)).toEqual(sortRows(expectedVisibility));
    // Edge cases present: no keywords at all, and a keyword never ranked on a site.
    expect(visibilityRows.some((r) => r.business_id === NO_KEYWORDS)).toBe(false);
    const { rows: neverRanked } = await sql<{ n: number }>`
      select count(*)::int as n from (
        select s.series_id from rank_series s join rank_history h using (series_id)
        group by s.series_id having count(h.rank) = 0) never`.execute(world.warehouse.db);
    expect(neverRanked[0]?.n).toBeGreaterThan(0);

    // v_listing_fixes: each episode, its fix, and whether it broke within 30 days of one.
    const episodes = episodesOf(truth);
    const fixes = (
      await select(sql`select business_id, listing_id, site_name, turned_inaccurate_on,
        fixed_on, days_to_fix, broken_again from v_listing_fixes`)
    ).map((r) => ({
      business_id: Number(r.business_id),
      listing_id: Number(r.listing_id),
      site_name: r.site_name,
      turned_inaccurate_on: String(r.turned_inaccurate_on),
      fixed_on: r.fixed_on === null ? null : String(r.fixed_on),
      days_to_fix: r.days_to_fix,
      broken_again: r.broken_again,
    }));
    const episodeKey = (e: {
      business_id: number;
      listing_id: number;
      turned_inaccurate_on: string;
    }) => `${e.business_id}|${e.listing_id}|${e.turned_inaccurate_on}`;
    const sortEpisodes = <
      T extends { business_id: number; listing_id: number; turned_inaccurate_on: string },
    >(
      rows: T[],
    ) => [...rows].sort((a, b) => episodeKey(a).localeCompare(episodeKey(b)));
    expect(sortEpisodes(fixes)).toEqual(
      sortEpisodes(episodes.map(({ sinceFix: _, ...episode }) => episode)),
    );
    // A listing fixed and broken again twice.
    const againPerListing = new Map<string, number>();
    for (const e of episodes.filter((x) => x.broken_again)) {
      const key = `${e.business_id}:${e.listing_id}`;
      againPerListing.set(key, (againPerListing.get(key) ?? 0) + 1);
    }
    expect(Math.max(...againPerListing.values())).toBeGreaterThanOrEqual(2);

    // listing_broken_again: raised for the episodes within the rules file's window.
    const alerted = await select(sql`select business_id, listing_id, detected_at, details
      from alerts where kind = 'listing_broken_again'`);
    const expectedAlerts = episodes.filter(
      (e) => e.sinceFix !== null && e.sinceFix <= ALERT_WINDOW_DAYS,
    );
    expect(expectedAlerts.length).toBeGreaterThan(0);
    expect(expectedAlerts.length).toBeLessThan(episodes.filter((e) => e.broken_again).length);
    expect(
      alerted
        .map(
          (a) =>
            `${a.business_id}|${a.listing_id}|${new Date(a.detected_at).toISOString().slice(0, 10)}`,
        )
        .sort(),
    ).toEqual(expectedAlerts.map(episodeKey).sort());
    for (const a of alerted) expect(a.details.windowDays).toBe(ALERT_WINDOW_DAYS);

    // v_listing_field_accuracy_daily: each flag's share per business and day; the days
    // between two syncs repeat the earlier one.
    const expectedFields: Record<string, unknown>[] = [];
    for (let day = 0; day <= LAST; day++) {
      const synced = [...SYNCED].reverse().find((d) => d <= day) as number;
      for (const business of businessesOn(truth, synced)) {
        const listings = listingsOf(truth, business, synced);
        const share = (field: string) => {
          const checked = listings.filter((l) => typeof l[field] === 'boolean');
          const valid = checked.filter((l) => l[field] === true).length;
          return [checked.length, checked.length ? round(valid, checked.length, 4) : null];
        };
        const [names, name] = share('name_valid');
        const [phones, phone] = share('phone_valid');
        const [addresses, address] = share('address_valid');
        expectedFields.push({
          business_id: business.id,
          day: dayToDate(truth, day),
          names_checked: names,
          name_valid: name,
          phones_checked: phones,
          phone_valid: phone,
          addresses_checked: addresses,
          address_valid: address,
        });
      }
    }
    const fields = (await select(sql`select * from v_listing_field_accuracy_daily`)).map((r) => ({
      business_id: Number(r.business_id),
      day: String(r.day),
      names_checked: r.names_checked,
      name_valid: r.name_valid === null ? null : Number(r.name_valid),
      phones_checked: r.phones_checked,
      phone_valid: r.phone_valid === null ? null : Number(r.phone_valid),
      addresses_checked: r.addresses_checked,
      address_valid: r.address_valid === null ? null : Number(r.address_valid),
    }));
    const fieldKey = (r: Record<string, unknown>) => `${r['business_id']}|${r['day']}`;
    expect([...fields].sort((a, b) => fieldKey(a).localeCompare(fieldKey(b)))).toEqual(
      [...expectedFields].sort((a, b) => fieldKey(a).localeCompare(fieldKey(b))),
    );

    // v_review_velocity_weekly: the reviews the last night serves, by site and UTC week.
    const weeks = new Map<string, ReviewTruth[]>();
    for (const business of live) {
      for (const review of reviewsOf(truth, business, LAST)) {
        const key = `${business.id}|${review.siteName}|${weekOf(review.reviewedAt)}`;
        weeks.set(key, [...(weeks.get(key) ?? []), review]);
      }
    }
    const expectedWeeks = [...weeks].map(([key, reviews]) => {
      const [businessId, siteName, week] = key.split('|');
      const rated = reviews.filter((r) => r.rating !== null);
      const hours = median(reviews.map(hoursToResponse).filter((h): h is number => h !== null));
      return {
        business_id: Number(businessId),
        site_name: siteName,
        week,
        new_reviews: reviews.length,
        avg_rating: rated.length
          ? round(
              rated.reduce((sum, r) => sum + (r.rating as number), 0),
              rated.length,
              2,
            )
          : null,
        responded_share: round(reviews.filter((r) => r.answered).length, reviews.length, 4),
        median_hours_to_response: hours === null ? null : round(hours, 3600, 1),
      };
    });
    const velocity = (await select(sql`select * from v_review_velocity_weekly`)).map((r) => ({
      business_id: Number(r.business_id),
      site_name: r.site_name,
      week: String(r.week),
      new_reviews: r.new_reviews,
      avg_rating: r.avg_rating === null ? null : Number(r.avg_rating),
      responded_share: Number(r.responded_share),
      median_hours_to_response:
        r.median_hours_to_response === null ? null : Number(r.median_hours_to_response),
    }));
    const weekKey = (r: Record<string, unknown>) =>
      `${r['business_id']}|${r['site_name']}|${r['week']}`;
    expect([...velocity].sort((a, b) => weekKey(a).localeCompare(weekKey(b)))).toEqual(
      [...expectedWeeks].sort((a, b) => weekKey(a).localeCompare(weekKey(b))),
    );
    // Reviews answered before the sync first saw them are counted from their own date.
    const { rows: answeredBefore } = await sql<{ n: number }>`
      select count(*)::int as n from reviews r
      where r.category = 'review' and exists (select 1 from review_responses p
        where p.review_id = r.review_id and p.responded_at < r.first_seen_at)`.execute(
      world.warehouse.db,
    );
    expect(answeredBefore[0]?.n).toBeGreaterThan(0);

    // v_location_scorecard: one row per live business, its components and its score.
    const card = await select(sql`select *, now() as asked_at from v_location_scorecard`);
    const askedAt = new Date(card[0]?.asked_at).getTime();
    const expectedCard = live.map((business) => {
      const listings = listingsOf(truth, business, LAST);
      const accurate = listings.filter((l) => l['status'] === 'Accurate').length;
      const inaccurate = listings.filter((l) => l['status'] === 'Inaccurate').length;
      const reviews = reviewsOf(truth, business, LAST);
      const recent = reviews.filter((r) => r.reviewedAt >= askedAt - 90 * DAY_MS);
      const rated = recent.filter((r) => r.rating !== null);
      const hours = median(recent.map(hoursToResponse).filter((h): h is number => h !== null));
      const now = ranksOf(truth, business, LAST);
      const monthBefore = ranksOf(truth, business, LAST - 30);
      const accuracyPct =
        accurate + inaccurate ? round(100 * accurate, accurate + inaccurate, 1) : null;
      const avgRating = rated.length
        ? round(
            rated.reduce((sum, r) => sum + (r.rating as number), 0),
            rated.length,
            2,
          )
        : null;
      const waiting = reviews.filter((r) => r.canRespond && !r.answered).length;
      const medianHours = hours === null ? null : round(hours, 3600, 1);
      const visibilityPct = now.length ? visibility(now).visibility_pct : null;
      const change =
        now.length && monthBefore.length
          ? Math.round(
              (visibility(now).visibility_pct - visibility(monthBefore).visibility_pct) * 100,
            ) / 100
          : null;
      // docs/warehouse.md, "v_location_scorecard": weights 35, 25, 20, 10, 10 over the
      // components that have a value.
      const parts: [number, number | null][] = [
        [35, accuracyPct],
        [25, visibilityPct],
        [20, avgRating === null ? null : (avgRating - 1) * 25],
        [10, Math.max(0, 100 - 10 * waiting)],
        [10, medianHours === null ? null : Math.max(0, 100 - (medianHours * 100) / 168)],
      ];
      const known = parts.filter(([, value]) => value !== null) as [number, number][];
      const score =
        known.reduce((sum, [w, v]) => sum + w * v, 0) / known.reduce((sum, [w]) => sum + w, 0);
      return {
        business_id: business.id,
        accuracy_pct: accuracyPct,
        inaccurate_listings: inaccurate,
        avg_rating_90d: avgRating,
        reviews_waiting: waiting,
        median_hours_to_response_90d: medianHours,
        visibility_pct: visibilityPct,
        visibility_change_30d: change,
        health_score: score,
      };
    });
    const num = (v: unknown) => (v === null ? null : Number(v));
    const actualCard = card.map((r) => ({
      business_id: Number(r.business_id),
      accuracy_pct: num(r.accuracy_pct),
      inaccurate_listings: r.inaccurate_listings,
      avg_rating_90d: num(r.avg_rating_90d),
      reviews_waiting: r.reviews_waiting,
      median_hours_to_response_90d: num(r.median_hours_to_response_90d),
      visibility_pct: num(r.visibility_pct),
      visibility_change_30d: num(r.visibility_change_30d),
      health_score: Number(r.health_score),
    }));
    actualCard.sort((a, b) => a.business_id - b.business_id);
    expectedCard.sort((a, b) => a.business_id - b.business_id);
    expect(actualCard.map(({ health_score: _, ...rest }) => rest)).toEqual(
      expectedCard.map(({ health_score: _, ...rest }) => rest),
    );
    // The score is rounded to one decimal from the rounded components.
    actualCard.forEach((row, i) => {
      expect(
        Math.abs(row.health_score - (expectedCard[i]?.health_score ?? Number.NaN)),
      ).toBeLessThanOrEqual(0.05 + 1e-9);
    });
    const stripped = actualCard.find((r) => r.business_id === NO_KEYWORDS);
    expect(stripped?.visibility_pct).toBeNull();
    expect(actualCard.every((r) => r.avg_rating_90d !== null)).toBe(true);
  });
});
