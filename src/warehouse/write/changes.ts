/**
 * What a write changed, as the writers report it: listings that turned Inaccurate, reviews
 * seen for the first time, the day's ranks, review response requests that failed, reads
 * whose removals were held (a volume drop). The
 * warehouse stores and reports these; it does not decide what they mean. The alert rules
 * (`src/alerts`, docs/alerts.md, "Alert rules") decide that, through a `ChangeHandler`
 * the caller hands in and the writer calls inside its transaction, so the alerts a change
 * raises commit with it or not at all.
 */
import type { Selectable } from 'kysely';
import type { Database, Db } from '../database.ts';
import type { RemovalsHeld } from './held-removals.ts';

/** A listing whose last recorded status was not `Inaccurate` and is now (or a new one). */
export interface ListingTurnedInaccurate {
  accountName: string;
  businessId: number;
  listingId: number;
  siteName: string;
  previousStatus: string | null;
  /** When the previous status began; null for a listing seen for the first time. */
  previousStatusSince: Date | null;
  status: string;
  detectedAt: Date;
  runId: string | null;
  /**
   * When the listing was last fixed (read as not `Inaccurate` after an Inaccurate
   * episode, `listing_fixes.fixed_at`) before this transition; null when it never was.
   */
  lastFixedAt: Date | null;
}

/** A review seen for the first time. */
export interface NewReview {
  reviewId: string;
  siteName: string;
  rating: number | null;
  authorName: string | null;
}

/** `rank_latest` as stored (the row `v_rank_latest` shows, and the window it is computed from). */
export type LatestState = Omit<Selectable<Database['rank_latest']>, 'series_id'>;

/** A series whose rank of the day was written (new for the day, or changed). */
export interface RankWritten {
  keyword: string;
  site: string;
  /** Today's rank; null when not ranked. */
  rank: number | null;
  /** The series' `rank_latest` row before this write (its last 31 days); null if none. */
  before: LatestState | null;
}

/** A review response request whose status read answered `Failed`. */
export interface ResponseFailed {
  requestId: string;
  accountName: string;
  businessId: number;
  siteName: string | null;
  /** The status before `Failed`; null when it was already `Failed`. */
  previousStatus: string | null;
  detectedAt: Date;
  runId: string | null;
}

export type Change =
  | ({ type: 'listing_turned_inaccurate' } & ListingTurnedInaccurate)
  | {
      type: 'reviews_first_seen';
      accountName: string;
      businessId: number;
      runId: string | null;
      detectedAt: Date;
      reviews: NewReview[];
    }
  | {
      type: 'ranks_written';
      accountName: string;
      businessId: number;
      runId: string | null;
      /** The run's UTC day, `YYYY-MM-DD`. */
      day: string;
      detectedAt: Date;
      series: RankWritten[];
    }
  | ({ type: 'response_failed' } & ResponseFailed)
  | ({
      /** A read that would have removed most of a stream's rows: held (held-removals.ts). */
      type: 'removals_held';
      accountName: string;
      businessId: number;
      runId: string | null;
      detectedAt: Date;
    } & RemovalsHeld);

/**
 * Called by a writer with what it changed, in its transaction (`db`); returns how many
 * alerts it raised. `src/alerts` makes one from the alert rules (`alertsUnder`).
 */
export type ChangeHandler = (db: Db, changes: readonly Change[]) => Promise<number>;
