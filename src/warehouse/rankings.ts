/**
 * `rank_observations`: one row per business, keyword, site and UTC day. A second run on
 * the same day rewrites only the ranks that changed; the next day adds new rows. A rank
 * of `-` upstream (searched, not ranked) is stored as NULL.
 */
import type { Kysely, Transaction } from 'kysely';
import type { RankObservation } from '../api/types.ts';
import { upsertRows } from './bulk-write.ts';
import type { Database } from './database.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** The UTC calendar day of an instant, `YYYY-MM-DD`. */
export function observedOn(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function rankToRow(ctx: BusinessWriteContext, rank: RankObservation) {
  return {
    business_id: ctx.businessId,
    keyword: rank.keyword,
    site: rank.site,
    observed_on: observedOn(ctx.observedAt),
    rank: rank.rank,
    observed_at: ctx.observedAt,
    run_id: ctx.runId,
  };
}

export async function writeRankings(
  db: Db,
  ctx: BusinessWriteContext,
  ranks: readonly RankObservation[],
): Promise<WriteStats> {
  const result = await upsertRows(
    db,
    {
      table: 'rank_observations',
      key: ['business_id', 'keyword', 'site', 'observed_on'],
      columns: ['business_id', 'keyword', 'site', 'observed_on', 'rank', 'observed_at', 'run_id'],
      compare: ['rank'],
    },
    ranks.map((rank) => rankToRow(ctx, rank)),
  );
  return addCounts({}, 'rank_observations', {
    inserted: result.inserted,
    updated: result.updated,
    unchanged: result.unchanged,
  });
}
