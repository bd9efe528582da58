/**
 * `listings-sync replay --in-place` (docs/replay.md, "Replay in place"): the live
 * warehouse rebuilt from its raw zone, without losing what the raw zone cannot rebuild.
 * Under the sync lock (no sync runs meanwhile):
 *
 * 1. each business's window: from its first read in a run whose business list is kept
 *    (src/replay/merge.ts, `replayWindow`); a business the raw zone cannot
 *    rebuild whole is kept as it is, and named;
 * 2. a scratch schema beside the live one, `<live>_rebuild` (src/replay/scratch.ts,
 *    each table as src/replay/tables.ts says), seeded with each rebuilt
 *    business as it stood before its window (its older history, its rows wound back to
 *    the last kept state), so that the first night of the window compares with the last
 *    night kept, not with nothing; every kept run is replayed into it, with the settings
 *    the run recorded;
 * 3. one transaction on the live tables: for each rebuilt business, the rows of its window
 *    are replaced by the rebuilt ones (deleted, inserted or updated by key; never a drop, a
 *    rename or a truncate), so grants, comments, the operator's views and a reader's
 *    snapshot survive, and a reader sees the old rows or the new, never none. Alerts keep
 *    their identity and delivery; an alert only the rebuild raised is added closed
 *    undelivered. Nothing else is touched (runs, the raw zone, webhook events, response
 *    requests, accounts);
 * 4. the scratch schema is dropped.
 *
 * `--dry-run` does all of it but commits nothing: it prints what the transaction would
 * change, per table.
 */
import { sql } from 'kysely';
import type { AlertRules } from '../alerts/rules.ts';
import { ListingsSyncError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { NIGHTLY_LOCK_KEY } from '../sync/run.ts';
import type { Db } from '../warehouse/database.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import { tryAcquireSyncLock } from '../warehouse/runs/sync-lock.ts';
import {
  type KeptWholeReason,
  lockMergedTables,
  mergeRebuild,
  replayWindow,
  type TableChange,
} from './merge.ts';
import {
  currentSchema,
  type ReplayProgress,
  type ReplayResult,
  replay,
  SCHEMA_NAME,
} from './replay.ts';
import {
  dropFromMerge,
  dropScratch,
  incompleteRebuilds,
  pointRunIdsBack,
  seedScratch,
} from './scratch.ts';

export interface InPlaceOptions {
  warehouse: Warehouse;
  /** PostgreSQL: the live warehouse's URL, to open the schema built beside it. */
  databaseUrl?: string;
  alertRules?: AlertRules;
  logger: Logger;
  onProgress?: (progress: ReplayProgress) => void;
  /** Build and compare, commit nothing: the result says what would change. */
  dryRun?: boolean;
}

export interface InPlaceResult extends ReplayResult {
  /** The live schema, rebuilt. */
  schema: string;
  dryRun: boolean;
  /** Businesses rebuilt from their window on. */
  rebuilt: number;
  /** The earliest window start: rows before it were not touched. */
  windowFrom: Date | null;
  /** Businesses with kept reads whose rows stay as they were, and why. */
  keptWhole: { businessId: number; reason: KeptWholeReason }[];
  /** What the transaction changed (or would change), per live table. */
  changes: TableChange[];
}

/** A sync holds the lock: the rebuild would miss what it writes (docs/running.md, "Error codes"). */
export class ReplayLockedError extends ListingsSyncError {
  readonly code = 'REPLAY_LOCKED';
  override name = 'ReplayLockedError';
}

const NOT_DELIVERED_NOTE = 'recomputed by replay --in-place for a past night; not delivered';

/** The live quarantine rows of these runs marked recovered. */
async function recoveredRows(db: Db, runIds: readonly string[]): Promise<number> {
  if (runIds.length === 0) return 0;
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from quarantine
     where run_id = any(${[...runIds]}::uuid[]) and recovered_at is not null`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The scratch schema built beside `live` (dropped when the replay ends, whatever the outcome). */
export function scratchSchema(live: string): string {
  return `${live}_rebuild`;
}

/** Thrown inside the merge transaction of a dry run, so that it rolls back. */
class DryRunRollback extends Error {
  readonly changes: TableChange[];
  constructor(changes: TableChange[]) {
    super('dry run');
    this.changes = changes;
  }
}

export async function replayInPlace(options: InPlaceOptions): Promise<InPlaceResult> {
  const { warehouse, logger } = options;
  const db = warehouse.db;
  const live = await currentSchema(db);
  const scratch = scratchSchema(live);
  if (!SCHEMA_NAME.test(scratch)) {
    throw new Error(
      `replay --in-place needs the schema name "${scratch}" beside the live "${live}", ` +
        'and that is not a plain lower-case name of at most 63 characters.',
    );
  }
  const lock = await tryAcquireSyncLock(warehouse, { exclusive: [NIGHTLY_LOCK_KEY] });
  if (!lock) {
    throw new ReplayLockedError(
      `A sync is running against schema "${live}" (it holds the sync lock); replay --in-place ` +
        'would miss what it writes, so it did not start. Wait for the sync to finish and run again.',
    );
  }
  try {
    // Only an interrupted replay leaves it: it is scratch, never the operator's.
    await dropScratch(db, scratch);
    const window = await replayWindow(db, live);
    let windowFrom: Date | null = null;
    for (const start of window.rebuilt.values()) {
      if (!windowFrom || start < windowFrom) windowFrom = start;
    }
    const keptWhole = new Map(window.keptWhole);
    const failedInReplay = new Set<number>();
    let result: ReplayResult;
    let changes: TableChange[];
    let recovered = 0;
    try {
      result = await replay({
        warehouse,
        ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
        into: scratch,
        ...(options.alertRules ? { alertRules: options.alertRules } : {}),
        logger,
        skipBusinesses: new Set(keptWhole.keys()),
        onBusinessError: (id, error) => {
          failedInReplay.add(id);
          logger.warn(
            { businessId: id, err: error },
            'replay --in-place: a business failed to write; it is kept as it was',
          );
        },
        prepare: (target) => seedScratch(target, live, scratch, window.rebuilt),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      // A business-night the replay could not rebuild (a write that failed, an answer it
      // could not serve): the business is kept whole, and the command exits 3 naming it.
      for (const missing of result.notRebuilt) failedInReplay.add(missing.businessId);
      for (const id of [...failedInReplay, ...(await incompleteRebuilds(db, live, scratch))]) {
        keptWhole.set(id, 'the replay did not write every night of its window');
      }
      await dropFromMerge(
        db,
        scratch,
        [...keptWhole.keys()].filter((id) => window.rebuilt.has(id)),
      );
      changes = await db
        .transaction()
        .execute(async (trx) => {
          // Writers of the merged tables wait for the commit; readers never do.
          await lockMergedTables(trx, live);
          await pointRunIdsBack(trx, scratch, result.runIds);
          const replayedRuns = [...new Set(result.runIds.values())];
          const recoveredBefore = await recoveredRows(trx, replayedRuns);
          const merged = await mergeRebuild(trx, live, scratch, replayedRuns, NOT_DELIVERED_NOTE);
          // What the merge recovered, not what the rebuild would have: a record quarantined
          // about an id the live warehouse holds elsewhere stays quarantined.
          recovered = (await recoveredRows(trx, replayedRuns)) - recoveredBefore;
          if (options.dryRun) throw new DryRunRollback(merged);
          return merged;
        })
        .catch((error: unknown) => {
          if (error instanceof DryRunRollback) return error.changes;
          throw error;
        });
    } finally {
      await dropScratch(db, scratch);
    }
    const rebuilt = [...window.rebuilt.keys()].filter((id) => !keptWhole.has(id)).length;
    logger.info(
      { schema: live, rebuilt, keptWhole: keptWhole.size, dryRun: options.dryRun === true },
      options.dryRun
        ? 'replay --in-place --dry-run: nothing committed'
        : 'replay --in-place merged the rebuilt rows',
    );
    return {
      ...result,
      recovered,
      schema: live,
      dryRun: options.dryRun === true,
      rebuilt,
      windowFrom,
      keptWhole: [...keptWhole]
        .sort(([a], [b]) => a - b)
        .map(([businessId, reason]) => ({ businessId, reason })),
      changes,
    };
  } finally {
    await lock.release();
  }
}
