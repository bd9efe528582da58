/** Keyword rankings: operation 11 (docs/upstream.md, "Operations"). */
import { z } from 'zod';
import { type ApiClient, type CallOptions, callUpstream, idSegment } from './client.ts';
import {
  describeIssues,
  rankingEntrySchema,
  scrubPayload,
  unstorableTextReason,
} from './schemas.ts';
import type { Credential, ListResult, RankObservation, RejectedRecord } from './types.ts';

/** Keyword → sites. No keywords may come as `[]` (an empty hash serialised as a list). */
const rankingsByKeyword = z.union([
  z.record(z.string(), z.unknown()),
  z.array(z.unknown()).max(0, 'expected an object keyed by keyword'),
]);

/** Flatten keyword → site → rank into observations; a bad keyword entry is rejected whole. */
export function rankingsFromResult(result: unknown): ListResult<RankObservation> {
  const byKeyword = rankingsByKeyword.parse(result);
  const records: RankObservation[] = [];
  const rejected: RejectedRecord[] = [];
  if (Array.isArray(byKeyword)) return { records, rejected };
  for (const [keyword, sites] of Object.entries(byKeyword)) {
    const unstorable = unstorableTextReason(keyword);
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
export function getRankings(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  opts?: CallOptions,
): Promise<ListResult<RankObservation>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'get_rankings',
      method: 'GET',
      path: `/businesses/${idSegment('businessId', businessId)}/rankings.json`,
      subject: `for business ${businessId}`,
      parse: (result) => rankingsFromResult(result),
    },
    opts,
  );
}
