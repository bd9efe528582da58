/**
 * `rank_observations`: one row per business, keyword, site and UTC day. A second run on
 * the same day rewrites only the ranks that changed; the next day adds new rows. A rank
 * of `-` upstream (searched, not ranked) is stored as NULL.
 */
import type { Kysely, Transaction } from 'kysely';
import { raiseRankDrops } from '../alerts/rank-drop.ts';
import { DEFAULT_ALERT_RULES } from '../alerts/rules.ts';
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
  const stats = addCounts({}, 'rank_observations', {
    inserted: result.inserted,
    updated: result.updated,
    unchanged: result.unchanged + (latest.size - rows.length),
  });
  // Alert hook (`rank_drop`, src/alerts/rank-drop.ts): today's ranks and the 8 days before.
  const rules = ctx.alertRules ?? DEFAULT_ALERT_RULES;
  if (rules.rankDrop.enabled && latest.size > 0) {
    const history = await ranksOfDaysBefore(db, ctx.businessId, day, 8);
    const raised = await raiseRankDrops(
      db,
      rules,
      { ...ctx, day, detectedAt: ctx.observedAt },
      [...latest].map(([key, rank]) => ({
        keyword: rank.keyword,
        site: rank.site,
        rank: rank.rank,
        history: history.get(key) ?? new Map(),
      })),
    );
    addCounts(stats, 'alerts', { inserted: raised });
  }
  return stats;
}

/** A business's ranks of the `days` days before `day`: series key → day → rank. */
async function ranksOfDaysBefore(
  db: Db,
  businessId: number,
  day: string,
  days: number,
): Promise<Map<string, Map<string, number | null>>> {
  const from = new Date(Date.parse(`${day}T00:00:00Z`) - days * 86_400_000);
  const rows = await db
    .selectFrom('rank_observations')
    .select(['keyword', 'site', 'observed_on', 'rank'])
    .where('business_id', '=', businessId)
    .where('observed_on', '>=', observedOn(from))
    .where('observed_on', '<', day)
    .execute();
  const bySeries = new Map<string, Map<string, number | null>>();
  for (const row of rows) {
    const key = rankKey(row.keyword, row.site);
    const series = bySeries.get(key) ?? new Map<string, number | null>();
    series.set(row.observed_on, row.rank);
    bySeries.set(key, series);
  }
  return bySeries;
}

// Joins keyword and site: a character neither contains.
function rankKey(keyword: string, site: string): string {
  return `${keyword}\u0000${site}`;
}
