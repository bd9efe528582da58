/** `sync_runs`: the audit row of every run, from `running` to its outcome. */
import { randomUUID } from 'node:crypto';
import { type Logger, redactSecrets, redactText } from '../log.ts';
import type { Db, SyncRunStatus } from './database.ts';

export interface SyncRunStart {
  trigger: string;
  streams: string[];
  accounts: string[];
  shard?: string;
}

export interface SyncRunResult {
  status: Exclude<SyncRunStatus, 'running'>;
  stats: unknown;
  error?: string | null;
}

/** Inserts a `running` row and returns its run_id (a uuid). */
export async function startSyncRun(db: Db, run: SyncRunStart): Promise<string> {
  const runId = randomUUID();
  await db
    .insertInto('sync_runs')
    .values({
      run_id: runId,
      started_at: new Date(),
      status: 'running',
      trigger: run.trigger,
      streams: JSON.stringify(run.streams),
      accounts: JSON.stringify(run.accounts),
      shard: run.shard ?? null,
    })
    .execute();
  return runId;
}

/** Records the outcome. Stats and error text pass through the secret redaction. */
export async function finishSyncRun(db: Db, runId: string, result: SyncRunResult): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({
      status: result.status,
      finished_at: new Date(),
      stats: JSON.stringify(redactSecrets(result.stats ?? null)),
      error: result.error ? redactText(result.error) : null,
    })
    .where('run_id', '=', runId)
    .execute();
}

/** Attempts at recording a run's end, and the pause before each retry. */
const END_ATTEMPTS = 3;
const END_RETRY_DELAY_MS = 1_000;

/**
 * Records the outcome of a run that is ending, whatever the database is doing: a run that
 * failed because the database went away tries again (each attempt is bounded by the
 * database timeouts; a database back from a restart takes the row), so the run is not
 * later mistaken for one whose process died. If no attempt succeeds, the outcome goes to
 * the log at `error` (the row stays `running`, and the next run marks it `interrupted`
 * saying the outcome was not recorded). Never throws.
 */
export async function recordSyncRunEnd(
  db: Db,
  runId: string,
  result: SyncRunResult,
  logger: Logger,
  options: { attempts?: number; retryDelayMs?: number } = {},
): Promise<boolean> {
  const attempts = options.attempts ?? END_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    try {
      await finishSyncRun(db, runId, result);
      return true;
    } catch (error) {
      if (attempt >= attempts) {
        logger.error(
          { err: error, runId, status: result.status, runError: result.error ?? null },
          'could not record the end of the run: it stays `running` until the next run marks it ' +
            'interrupted; this line holds its outcome',
        );
        return false;
      }
      logger.warn({ err: error, runId, attempt }, 'could not record the end of the run; retrying');
      await new Promise((resolve) =>
        setTimeout(resolve, options.retryDelayMs ?? END_RETRY_DELAY_MS),
      );
    }
  }
}

/**
 * Runs still `running` whose process is gone (killed, crashed, its node drained): the
 * caller holds the sync lock for `shard`, so no live process can own them. Marks them
 * `interrupted` and returns how many.
 */
export async function interruptAbandonedRuns(db: Db, shard: string | undefined): Promise<number> {
  const result = await db
    .updateTable('sync_runs')
    .set({
      status: 'interrupted',
      finished_at: new Date(),
      // Not "killed or crashed" as a fact: a process that lost the database at its very end
      // exits cleanly without recording its outcome, and logs it (recordSyncRunEnd).
      error:
        'No outcome was recorded: the process was killed or crashed, or it could not reach the ' +
        'database to record its end (its log then has "could not record the end of the run"). ' +
        'A later run found it still running.',
    })
    .where('status', '=', 'running')
    .where((eb) => (shard ? eb('shard', '=', shard) : eb('shard', 'is', null)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows ?? 0);
}
