/**
 * The one entry point the sync calls per business, inside the transaction it opens:
 *
 *   await db.transaction().execute((trx) => writeBusinessSnapshot(trx, snapshot, ctx));
 *
 * so a reader never sees half a business, and one business's failure rolls back only
 * that business. A null stream means its read failed this run: nothing of that stream is
 * touched (no upserts, no removals, its `*_synced_at` stays).
 */
import type { Transaction } from 'kysely';
import type {
  BusinessFull,
  BusinessSummary,
  Keyword,
  Listing,
  RankObservation,
  Review,
} from '../api/types.ts';
import { lockBusiness, writeBusiness } from './businesses.ts';
import type { Database } from './database.ts';
import { writeKeywords } from './keywords.ts';
import { writeListings } from './listings.ts';
import { quarantineRecords } from './quarantine.ts';
import { writeRankings } from './rankings.ts';
import { writeReviews } from './reviews.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, mergeWriteStats, type WriteStats } from './write-stats.ts';

export type { TableCounts, WriteStats } from './write-stats.ts';
export { mergeWriteStats } from './write-stats.ts';

export interface RejectedInSnapshot {
  stream: string;
  location: string;
  reason: string;
  payload: unknown;
}

export interface BusinessSnapshot {
  accountName: string;
  businessId: number;
  /** From the list operation (always present). */
  summary: BusinessSummary;
  /** null: the full read failed this run; the stored profile is kept, summary fields refresh. */
  full: BusinessFull | null;
  /** null: the stream failed; no listing changes, no removals. */
  listings: Listing[] | null;
  /** Both categories (`review` and `social`); null if any reviews call failed. */
  reviews: Review[] | null;
  rankings: RankObservation[] | null;
  keywords: Keyword[] | null;
  /** Records that failed their schema: quarantined in the same transaction. */
  rejected: RejectedInSnapshot[];
}

export interface WriteContext {
  runId: string;
  /** The run's observation time; ranks use its UTC date as observed_on. */
  observedAt: Date;
}

export interface SnapshotWriteResult {
  stats: WriteStats;
  /** Alerts raised (listings newly Inaccurate). */
  alerts: number;
  quarantined: number;
}

export async function writeBusinessSnapshot(
  trx: Transaction<Database>,
  snapshot: BusinessSnapshot,
  ctx: WriteContext,
): Promise<SnapshotWriteResult> {
  const write: BusinessWriteContext = {
    accountName: snapshot.accountName,
    businessId: snapshot.businessId,
    runId: ctx.runId,
    observedAt: ctx.observedAt,
  };
  const stored = await lockBusiness(trx, snapshot.businessId);
  const stats = await writeBusiness(trx, write, {
    summary: snapshot.summary,
    full: snapshot.full,
    stored,
    synced: {
      listings: snapshot.listings !== null,
      reviews: snapshot.reviews !== null,
      rankings: snapshot.rankings !== null,
      keywords: snapshot.keywords !== null,
    },
  });

  let alerts = 0;
  if (snapshot.listings !== null) {
    const result = await writeListings(
      trx,
      { ...write, hadListingsSync: stored?.listings_first_synced_at != null },
      snapshot.listings,
    );
    mergeWriteStats(stats, result.stats);
    alerts = result.alerts;
  }
  if (snapshot.reviews !== null) {
    mergeWriteStats(stats, await writeReviews(trx, write, snapshot.reviews));
  }
  // Keywords first: a rank series created this run resolves its keyword id.
  if (snapshot.keywords !== null) {
    mergeWriteStats(stats, await writeKeywords(trx, write, snapshot.keywords));
  }
  if (snapshot.rankings !== null) {
    mergeWriteStats(stats, await writeRankings(trx, write, snapshot.rankings));
  }
  const quarantined = await quarantineRecords(
    trx,
    ctx.runId,
    snapshot.rejected.map((record) => ({
      accountName: snapshot.accountName,
      businessId: snapshot.businessId,
      ...record,
    })),
  );
  if (quarantined > 0) addCounts(stats, 'quarantine', { inserted: quarantined });
  return { stats, alerts, quarantined };
}
