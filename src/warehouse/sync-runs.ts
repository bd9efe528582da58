/** `sync_runs`: the audit row of every run, from `running` to its outcome. */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { redactSecrets, redactText } from '../log.ts';
import type { Database, SyncRunStatus } from './database.ts';

type Db = Kysely<Database> | Transaction<Database>;

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
      error: 'The process ended before the run finished (killed or crashed); a later run found it.',
    })
    .where('status', '=', 'running')
    .where((eb) => (shard ? eb('shard', '=', shard) : eb('shard', 'is', null)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows ?? 0);
}
