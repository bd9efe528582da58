/**
 * `rank_observations`: one row per business, keyword, site and UTC day. A second run on
 * the same day rewrites only the ranks that changed; the next day adds new rows. A rank
 * of `-` upstream (searched, not ranked) is stored as NULL.
 */
import type { Kysely, Transaction } from 'kysely';
import type { RankObservation } from '../api/types.ts';
import { type BulkRow, upsertRows } from './bulk-write.ts';
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

/**
 * Writes the day's ranks of one business. Only ranks that are new for the day or differ
 * from the stored one are sent: a second run on the same day with no change sends none.
 */
export async function writeRankings(
  db: Db,
  ctx: BusinessWriteContext,
  ranks: readonly RankObservation[],
): Promise<WriteStats> {
  const day = observedOn(ctx.observedAt);
  const stored = await db
    .selectFrom('rank_observations')
    .select(['keyword', 'site', 'rank'])
    .where('business_id', '=', ctx.businessId)
    .where('observed_on', '=', day)
    .execute();
  const storedRank = new Map(stored.map((row) => [rankKey(row.keyword, row.site), row.rank]));
  // The last observation per keyword and site wins, as the upsert's own dedupe would have it.
  const latest = new Map(ranks.map((rank) => [rankKey(rank.keyword, rank.site), rank]));
  const rows: BulkRow<'rank_observations'>[] = [];
  for (const [key, rank] of latest) {
    const before = storedRank.get(key);
    if (before !== undefined && before === rank.rank) continue;
    rows.push(rankToRow(ctx, rank));
  }
  const result = await upsertRows(
    db,
    {
      table: 'rank_observations',
      key: ['business_id', 'keyword', 'site', 'observed_on'],
      columns: {
        business_id: 'bigint',
        keyword: 'text',
        site: 'text',
        observed_on: 'date',
        rank: 'integer',
        observed_at: 'timestamptz',
        run_id: 'uuid',
      },
      compare: ['rank'],
    },
    rows,
  );
  return addCounts({}, 'rank_observations', {
    inserted: result.inserted,
    updated: result.updated,
    unchanged: result.unchanged + (latest.size - rows.length),
  });
}

// Joins keyword and site: a character neither contains.
function rankKey(keyword: string, site: string): string {
  return `${keyword}\u0000${site}`;
}
