/** Keyword rankings: operation 11 of docs/upstream.md. */
import { z } from 'zod';
import {
  type AnswerBounds,
  BOUND_SETTINGS,
  checkBound,
  DEFAULT_ANSWER_BOUNDS,
  SAMPLE_SIZE,
} from './bounds.ts';
import { type BusinessRead, businessRead } from './client.ts';
import { columns as c, column, recordShape } from './record-shape.ts';
import {
  describeIssues,
  INDEXED_TEXT_MAX,
  indexedString,
  rank,
  scrubPayload,
  unstorableTextReason,
} from './schemas.ts';
import type { ListResult, RejectedRecord } from './types.ts';

/**
 * One keyword's rank on one search site: the rankings' record (`Google_new` is two sites,
 * the glossary in `types.ts`).
 */
export interface RankObservation {
  keyword: string;
  site: string;
  /** null where the upstream says `-`. */
  rank: number | null;
}

/**
 * A rank observation's columns (src/api/record-shape.ts): `rank_series` stores the keyword
 * and site (a series); the rank goes to the day's element of `rank_months`, which the writer
 * fills itself. The Airbyte record shows all three, with the day (docs/airbyte.md).
 */
export const rankObservationShape = recordShape<RankObservation>()({
  keyword: c.text,
  site: c.text,
  rank: column(
    'integer',
    z.int().nullable().describe('null where the upstream says "-" (searched, not ranked)'),
  ).recordOnly(),
});

/**
 * One keyword's entry: site name → rank, where an object value (`Google_new`) holds
 * `{local, organic}` and becomes one site per key.
 */
const splitRank = z.compile(z.object({ local: rank, organic: rank }));

/**
 * A site's value: an object is the split form, anything else a rank. Dispatched by shape
 * rather than a union, so a bad value is reported with the rank's own rule instead of a
 * bare "Invalid input".
 */
const siteRank = z
  .union([z.number(), z.string(), z.null(), z.object({ local: z.unknown(), organic: z.unknown() })])
  .transform((value, ctx): number | null | { local: number | null; organic: number | null } => {
    const parsed =
      value !== null && typeof value === 'object'
        ? splitRank.safeParse(value)
        : rank.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    }
    return z.NEVER;
  });

export const rankingEntrySchema = z.compile(
  z.record(indexedString, siteRank).transform((sites): Array<Omit<RankObservation, 'keyword'>> => {
    const out: Array<Omit<RankObservation, 'keyword'>> = [];
    for (const [site, value] of Object.entries(sites)) {
      if (value !== null && typeof value === 'object') {
        out.push({ site: `${site}.local`, rank: value.local });
        out.push({ site: `${site}.organic`, rank: value.organic });
      } else {
        out.push({ site, rank: value });
      }
    }
    return out;
  }),
);

/** Keyword → sites. No keywords may come as `[]` (an empty hash serialised as a list). */
const rankingsByKeyword = z.union([
  z.record(z.string(), z.unknown()),
  z.array(z.unknown()).max(0, 'expected an object keyed by keyword'),
]);

/**
 * Flatten keyword → site → rank into observations; a bad keyword entry is rejected whole,
 * and so is one with more than `sitesPerKeyword` sites. More than `keywordsPerBusiness`
 * keywords refuses the answer (TOO_MANY_RECORDS) before any entry is read.
 */
export function rankingsFromResult(
  result: unknown,
  bounds: Readonly<AnswerBounds> = DEFAULT_ANSWER_BOUNDS,
): ListResult<RankObservation> {
  const byKeyword = rankingsByKeyword.parse(result);
  const records: RankObservation[] = [];
  const rejected: RejectedRecord[] = [];
  if (Array.isArray(byKeyword)) return { records, rejected };
  const keywords = Object.keys(byKeyword);
  checkBound(bounds, 'keywordsPerBusiness', keywords.length, 'keywords', 'rankings', () =>
    keywords.slice(0, SAMPLE_SIZE),
  );
  // What the answer expands into, counted before it is: sites of the keywords within
  // their own bound (a keyword over it is refused alone, below).
  let series = 0;
  for (const sites of Object.values(byKeyword)) {
    const siteCount = isPlainObject(sites) ? Object.keys(sites).length : 0;
    if (siteCount <= bounds.sitesPerKeyword) series += siteCount;
  }
  checkBound(bounds, 'rankSeriesPerBusiness', series, 'keyword × site pairs', 'rankings', () =>
    keywords.slice(0, SAMPLE_SIZE),
  );
  for (const [keyword, sites] of Object.entries(byKeyword)) {
    const siteCount = isPlainObject(sites) ? Object.keys(sites).length : 0;
    if (siteCount > bounds.sitesPerKeyword) {
      rejected.push({
        location: keyword,
        reason: `keyword: ${siteCount} sites, more than the ${bounds.sitesPerKeyword} allowed by ${BOUND_SETTINGS.sitesPerKeyword}`,
        payload: { sites: siteCount, sample: Object.keys(sites as object).slice(0, SAMPLE_SIZE) },
      });
      continue;
    }
    const unstorable =
      unstorableTextReason(keyword) ??
      (keyword.length > INDEXED_TEXT_MAX
        ? `expected at most ${INDEXED_TEXT_MAX} characters (the value is part of an index key)`
        : undefined);
    if (unstorable) {
      rejected.push({
        location: keyword,
        reason: `keyword: ${unstorable}`,
        payload: scrubPayload(sites),
      });
      continue;
    }
    const parsed = rankingEntrySchema.safeParse(sites);
    if (parsed.success) {
      for (const observation of parsed.data) records.push({ keyword, ...observation });
    } else {
      rejected.push({
        location: keyword,
        reason: describeIssues(parsed.error),
        payload: scrubPayload(sites),
      });
    }
  }
  return { records, rejected };
}

/** Operation 11: every keyword's rank on every search site; `-` becomes null. */
export const getRankings: BusinessRead<ListResult<RankObservation>> = businessRead(
  'get_rankings',
  '/rankings',
  (result, _body, bounds) => rankingsFromResult(result, bounds),
);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
