/**
 * RAW_RETENTION_DAYS: what a full run deletes from the raw zone when it ends
 * (docs/replay.md). Retention never deletes what replay needs
 * to rebuild the warehouse as it stands, however long ago a business was last read, and
 * it measures age on the clock the reads were recorded with, never on ours.
 *
 * - An account's clock: the newest of its reads tied to no business (`business_id` null:
 *   its business list, which every run reads first, reference data, response polls), as
 *   `observed_at` holds it: the upstream's time when its `Date` was plausible
 *   (src/sync/observation-clock.ts). An upstream whose clock lags ours ages its reads by
 *   its own days, however far behind ours they are.
 * - An account's run: the reads one run kept of one account (`run_id`, `account_name`). It
 *   is past retention when every one of its reads is more than `days` days older than its
 *   account's clock; a run with any read inside the window is kept whole.
 * - Of a run past retention, kept: a business's reads unless a later run of the account
 *   read that business again and committed it (so the reads its current rows were built
 *   from stay); its reads tied to no business while it keeps a business read (the list its
 *   replay starts from) or while one of them is its account's newest. The rest is deleted,
 *   and what is kept is marked `aged_out` (migration 0017), from which `raw stats` names the
 *   oldest night replay can rebuild (src/cli/commands/raw-show.ts).
 * - Then the bodies no read refers to.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { deleteUnreadBodies, pruneRawReads } from './prune.ts';

export interface PrunedRawZone {
  /** Reads deleted. */
  reads: number;
  /** Reads of runs past retention that this pruning kept, and marked `aged_out`. */
  agedOut: number;
  /** Bodies deleted: no read refers to them any more. */
  bodies: number;
}

/**
 * Prunes the raw zone to `days` days on each account's own clock (see above): one
 * statement for the reads, one for the bodies. Run it under a full run's sync lock, so
 * that no read is written meanwhile (a read written between the two statements could
 * refer to a body the second deletes).
 */
export async function pruneRawZone(db: Kysely<Database>, days: number): Promise<PrunedRawZone> {
  if (!Number.isInteger(days) || days < 1) {
    throw new RangeError(
      `Raw zone retention takes a whole number of days, at least 1 (got ${days}).`,
    );
  }
  const { deleted, agedOut } = await pruneRawReads(db, days);
  const bodies = await deleteUnreadBodies(db);
  return { reads: deleted, agedOut, bodies };
}
