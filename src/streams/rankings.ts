/** `rankings`: each business's keyword ranks per search site (operation 11), a row per UTC day. */
import { z } from 'zod';
import {
  getRankings,
  type RankObservation,
  rankObservationShape,
  recordOf,
  recordSchemaOf,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account } from './record-fields.ts';

/** The Airbyte record: an observation's shape (`rankObservationShape`) and the day it was read on. */
export const rankingRecord = recordSchemaOf(
  rankObservationShape,
  { account, business_id: z.int() },
  { day: z.iso.date().describe("the upstream's UTC day the rank was read on (docs/warehouse.md)") },
);

export function rankingRecordOf(
  name: string,
  businessId: number,
  day: string,
  o: RankObservation,
): z.infer<typeof rankingRecord> {
  return { account: name, business_id: businessId, ...recordOf(rankObservationShape, o), day };
}

export const rankings = defineStream({
  name: 'rankings',
  description: "each business's keyword ranks per search site, one observation per day",
  scope: 'business',
  reads: [
    {
      read: 'rankings',
      operation: 'get_rankings',
      fetch: (api, credential, id, options) => getRankings(api, credential, id, options),
    },
  ],
  // `rank_months`: an element per UTC day.
  daily: true,
  bounds: [
    'LISTINGS_MAX_KEYWORDS_PER_BUSINESS',
    'LISTINGS_MAX_SITES_PER_KEYWORD',
    'LISTINGS_MAX_RANK_SERIES_PER_BUSINESS',
  ],
  // A rank missing from a read is not a rank removed: the series stays, the day has no row.
  removals: 'none',
  replay: 'business-reads',
  catalog: [
    {
      name: 'rankings',
      schema: rankingRecord,
      primaryKey: [['account'], ['business_id'], ['keyword'], ['site'], ['day']],
      cursor: 'day',
    },
  ],
});
