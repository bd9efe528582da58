/**
 * Keywords (operations 12–14) and their rankings (operation 11).
 *
 * A generated business starts with 5–15 keywords, the first one primary. On later days
 * a keyword is sometimes added (served with `primary: null`, one of the documented shapes)
 * and sometimes archived (`archived: true`, still listed, no longer ranked). Keyword ids
 * are `business id * 1000 + n`, so operation 14 finds the business from the id alone:
 * n < 100 for the starting keywords, 100–499 for ones added upstream, 500–899 for ones
 * added through operation 13.
 *
 * Ranks drift smoothly: a weekly value noise plus a small daily jitter around a
 * per-(keyword, site) baseline; beyond 50 a site answers `-` (not ranked).
 */

import { createRng, geometricDay, hash32, unit } from './random.ts';
import { RANKING_SITES, STATE_BY_ID, SUB_CATEGORY_BY_ID } from './reference-data.ts';
import { type BusinessView, generatedProfile, STREAM, type World } from './world.ts';

export const KEYWORD_ID_SPAN = 1000;
const UPSTREAM_ADDED_BASE = 100;
export const USER_ADDED_BASE = 500;
/** Ids 900–999 are left to malformed records, so they never collide with a real keyword. */
export const MALFORMED_KEYWORD_BASE = 900;
/** Daily chance that a keyword is added upstream to a generated business. */
const DAILY_KEYWORD_ADD = 0.03;
/** Daily chance that a non-primary keyword is archived upstream. */
const DAILY_KEYWORD_ARCHIVE = 0.004;
/** Ranks past this are served as `-`. */
const LAST_RANK = 50;

export interface KeywordRecord {
  id: number;
  keyword: string;
  city: string;
  state: string;
  primary: boolean | null;
  location_id: number;
  archived: boolean;
}

const PATTERNS = [
  '{s} {city}',
  '{s} near me',
  'best {s} {city}',
  '{s} {city} {iso}',
  '{s}',
  'affordable {s}',
  '{s} in {city}',
  'top rated {s}',
];

function candidatePhrases(world: World, businessId: number): string[] {
  const profile = generatedProfile(world, businessId);
  const iso = STATE_BY_ID.get(profile.stateId)?.iso.toLowerCase() ?? '';
  const city = profile.city.toLowerCase();
  const stems = stemsOf(profile.subCategoryId);
  const phrases: string[] = [];
  for (const pattern of PATTERNS) {
    for (const stem of stems) {
      phrases.push(pattern.replace('{s}', stem).replace('{city}', city).replace('{iso}', iso));
    }
  }
  // A deterministic shuffle, so that businesses of a category do not all share a head.
  const rng = createRng(hash32(world.seed, businessId, STREAM.keyword));
  for (let i = phrases.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [phrases[i], phrases[j]] = [phrases[j]!, phrases[i]!];
  }
  return phrases;
}

function stemsOf(subCategoryId: number): readonly string[] {
  return SUB_CATEGORY_BY_ID.get(subCategoryId)?.stems ?? ['local business'];
}

function phraseAt(phrases: readonly string[], ordinal: number): string {
  const base = phrases[ordinal % phrases.length] ?? 'local business';
  const round = Math.floor(ordinal / phrases.length);
  return round === 0 ? base : `${base} ${round + 1}`;
}

/** Every keyword of the business on `day`, archived ones included, deleted ones not. */
export function listKeywords(world: World, business: BusinessView, day: number): KeywordRecord[] {
  const out: KeywordRecord[] = [];
  const deleted = business.mutations?.deletedKeywords;
  const profile = business.profile;
  const state = STATE_BY_ID.get(profile.stateId)?.iso ?? '';
  if (business.generated) {
    const phrases = candidatePhrases(world, business.id);
    const starting = 5 + (hash32(world.seed, business.id, STREAM.keyword, 0) % 11);
    const push = (ordinal: number, id: number, createdDay: number, primary: boolean | null) => {
      if (deleted?.has(id)) return;
      const archived =
        primary !== true &&
        geometricDay(
          hash32(world.seed, id, STREAM.keywordArchive),
          DAILY_KEYWORD_ARCHIVE,
          createdDay + 1,
        ) <= day;
      out.push({
        id,
        keyword: phraseAt(phrases, ordinal),
        city: profile.city,
        state,
        primary,
        location_id: business.id,
        archived,
      });
    };
    for (let n = 0; n < starting; n++) {
      push(n, business.id * KEYWORD_ID_SPAN + n, 0, n === 0);
    }
    let added = 0;
    for (let d = 1; d <= day && added < USER_ADDED_BASE - UPSTREAM_ADDED_BASE; d++) {
      if (unit(hash32(world.seed, business.id, STREAM.keywordAdd, d)) < DAILY_KEYWORD_ADD) {
        push(
          starting + added,
          business.id * KEYWORD_ID_SPAN + UPSTREAM_ADDED_BASE + added,
          d,
          null,
        );
        added++;
      }
    }
  }
  for (const keyword of business.mutations?.addedKeywords ?? []) {
    if (keyword.createdDay > day || deleted?.has(keyword.id)) continue;
    out.push({
      id: keyword.id,
      keyword: keyword.keyword,
      city: profile.city,
      state,
      primary: keyword.primary,
      location_id: business.id,
      archived: false,
    });
  }
  return out;
}

function rankOn(
  world: World,
  keywordId: number,
  site: number,
  day: number,
  spread: number,
): number {
  const baseline = 1 + (hash32(world.seed, keywordId, STREAM.rank, site) % spread);
  const week = Math.floor(day / 7);
  const frac = (day % 7) / 7;
  const wave = (w: number) =>
    (unit(hash32(world.seed, keywordId, STREAM.rank, site, w)) - 0.5) * 16;
  const noise = wave(week) * (1 - frac) + wave(week + 1) * frac;
  const jitter = (hash32(world.seed, keywordId, STREAM.rank, site, 100_000 + day) % 5) - 2;
  return Math.max(1, Math.round(baseline + noise + jitter));
}

/** The rankings operation's result: keyword text → site → rank or `-`, plus `Google_new`. */
export function buildRankings(
  world: World,
  business: BusinessView,
  day: number,
): Record<string, Record<string, unknown>> {
  const result: Record<string, Record<string, unknown>> = {};
  for (const keyword of listKeywords(world, business, day)) {
    if (keyword.archived) continue;
    const ranks: Record<string, unknown> = {};
    RANKING_SITES.forEach((site, index) => {
      // Directory sites rank fewer keywords than search engines.
      const spread = site === 'Yelp' || site === 'Yellowpages' ? 80 : 55;
      const rank = rankOn(world, keyword.id, index, day, spread);
      ranks[site] = rank > LAST_RANK ? '-' : rank;
    });
    ranks['Google_new'] = {
      local: Math.min(20, rankOn(world, keyword.id, 90, day, 15)),
      organic: Math.min(100, rankOn(world, keyword.id, 91, day, 70)),
    };
    result[keyword.keyword] = ranks;
  }
  return result;
}
