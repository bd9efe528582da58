/**
 * `sync_runs`: the audit row of every run, from `running` to its outcome. All SQL on the
 * table lives here: the run's own start and end, the interruption of abandoned runs, and
 * the reads of `listings-sync runs` and of the `sync_failed`/`sync_stale` rules. The shape
 * stored in `stats` is `SyncRunStats`, the one type its writer and every reader share
 * (docs/warehouse.md, "sync_runs").
 */
import { randomUUID } from 'node:crypto';
import { type ColumnType, sql } from 'kysely';
import { type Logger, redactSecrets, redactText } from '../../log.ts';
import type { Db, Json, JsonValue, Timestamp, TimestampWithDefault } from '../database.ts';
import type { WriteStats } from '../write/write-stats.ts';

/** How one credential's part of a run ended. */
export interface CredentialOutcome {
  name: string;
  status: 'succeeded' | 'partial' | 'failed' | 'skipped';
  businesses: number;
  error?: string;
  /**
   * Its business list was held on a volume drop (docs/warehouse.md, "How removals work"):
   * the account's live businesses, those the list answered, and those it no longer listed
   * (not archived). The credential is `partial`, and the account not synced by this run
   * (`lastSuccessByAccount`). Absent otherwise, and in runs recorded before it existed.
   */
  listHeld?: { stored: number; answered: number; removing: number };
}

/** One thing that failed in a run, as `listings-sync runs` lists it. */
export interface SyncFailure {
  credential: string;
  /** Null for a credential-wide failure (reference data, the business list). */
  businessId: number | null;
  /** A stream name, `business` (the whole business) or `response-status`. */
  stream: string;
  reason: string;
}

/** What `sync_runs.stats` holds: a run's counts, written at its end. */
export interface SyncRunStats {
  credentials: CredentialOutcome[];
  businesses: { listed: number; inShard: number; synced: number; failed: number; archived: number };
  streamFailures: number;
  /**
   * Every failure of the run, counted once: a failed stream, a failed business, a failed
   * operation 10 poll, a credential-wide failure (what `failures` lists, and what it had
   * no room for). A business with a failed stream is one failure, not two.
   */
  failureCount: number;
  /**
   * Identical copies of a record an answer repeated, collapsed into one by the client
   * (`ListResult.duplicates`): the business list's and every stream's parsed this run.
   */
  duplicates: number;
  /**
   * A business's reads whose body was the one its rows were last built from, so neither
   * parsed nor written (docs/warehouse.md, "Answers applied"). Absent in runs recorded
   * before it existed.
   */
  answersUnchanged?: number;
  /**
   * What failed, for the summary and `listings-sync runs`: the first `MAX_FAILURES_LISTED`
   * of src/sync/stats.ts (a run against a broken upstream must not grow `sync_runs.stats`
   * without bound).
   */
  failures: SyncFailure[];
  requests: number;
  retries: number;
  tables: WriteStats;
  quarantined: number;
  alerts: number;
  /**
   * Streams of a business, and business lists of an account, whose removals were held (a
   * volume drop, docs/warehouse.md "How removals work"). A held stream is not a failure:
   * the run's status does not change; a held list makes its credential `partial`
   * (`CredentialOutcome.listHeld`). Absent in runs recorded before it existed.
   */
  removalsHeld?: number;
  /** Review response requests polled (operation 10), and what they showed. */
  responseRequests: {
    checked: number;
    changed: number;
    completed: number;
    failed: number;
    /** Closed because the upstream answered `Invalid Request ID` (never asked again). */
    invalid: number;
    errors: number;
  };
  seconds: number;
}

/** The stats of a run that has done nothing yet. */
export function emptySyncRunStats(): SyncRunStats {
  return {
    credentials: [],
    businesses: { listed: 0, inShard: 0, synced: 0, failed: 0, archived: 0 },
    streamFailures: 0,
    failureCount: 0,
    duplicates: 0,
    answersUnchanged: 0,
    failures: [],
    requests: 0,
    retries: 0,
    tables: {},
    quarantined: 0,
    alerts: 0,
    removalsHeld: 0,
    responseRequests: { checked: 0, changed: 0, completed: 0, failed: 0, invalid: 0, errors: 0 },
    seconds: 0,
  };
}

export interface SyncRunStart {
  trigger: string;
  streams: string[];
  accounts: string[];
  shard?: string;
  /** What shaped the run's writes, for its replay (migration 0015). */
  settings?: Record<string, unknown>;
  /** The run's trace, when traces are on (docs/running.md, "Traces"). */
  traceId?: string | null;
}

export interface SyncRunResult {
  status: Exclude<SyncRunStatus, 'running'>;
  stats: SyncRunStats;
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
      settings: run.settings ? JSON.stringify(run.settings) : null,
      trace_id: run.traceId ?? null,
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

/** A run as `listings-sync runs` shows it. `stats` is null while it runs (or if unrecorded). */
export interface SyncRunLine {
  runId: string;
  startedAt: Date;
  finishedAt: Date | null;
  status: SyncRunStatus;
  trigger: string;
  shard: string | null;
  /** Partial: rows written by older versions may lack fields added since. */
  stats: Partial<SyncRunStats> | null;
  error: string | null;
  /**
   * The upstream days the run read (`YYYY-MM-DD`, UTC), first and last: its raw reads'
   * observation times (`raw_read_sets.observed_at`, on the upstream's clock: docs/warehouse.md,
   * "Raw zone"). Null when the raw zone holds no read of it (a run that read nothing, a
   * replay, or one RAW_RETENTION_DAYS pruned).
   */
  upstreamDays: { first: string; last: string } | null;
}

/** The `limit` most recent runs, newest first, each with the upstream days it read. */
export async function readRecentRuns(db: Db, limit: number): Promise<SyncRunLine[]> {
  const rows = await db
    .selectFrom('sync_runs')
    .select(['run_id', 'started_at', 'finished_at', 'status', 'trigger', 'shard', 'stats', 'error'])
    .orderBy('started_at', 'desc')
    .orderBy('run_id', 'desc')
    .limit(limit)
    .execute();
  const days = new Map(
    (rows.length === 0
      ? []
      : await db
          .selectFrom('raw_read_sets')
          .select([
            'run_id',
            sql<string>`to_char(min(observed_at) at time zone 'UTC', 'YYYY-MM-DD')`.as('first'),
            sql<string>`to_char(max(observed_at) at time zone 'UTC', 'YYYY-MM-DD')`.as('last'),
          ])
          .where(
            'run_id',
            'in',
            rows.map((row) => row.run_id),
          )
          .groupBy('run_id')
          .execute()
    ).map((row) => [row.run_id, { first: row.first, last: row.last }]),
  );
  return rows.map((row) => ({
    runId: row.run_id,
    startedAt: new Date(row.started_at),
    finishedAt: row.finished_at === null ? null : new Date(row.finished_at),
    status: row.status,
    trigger: row.trigger,
    shard: row.shard,
    stats: (typeof row.stats === 'string'
      ? JSON.parse(row.stats)
      : row.stats) as Partial<SyncRunStats> | null,
    error: row.error,
    upstreamDays: days.get(row.run_id) ?? null,
  }));
}

/** A run's outcome counts for health from these statuses on (`partial` per account). */
const SUCCESS = ['succeeded', 'partial'] as const satisfies readonly SyncRunStatus[];

/** When the last successful run finished (any account), or null: the metrics gauge. */
export async function lastSuccessfulRunAt(db: Db): Promise<Date | null> {
  const row = await db
    .selectFrom('sync_runs')
    .select(sql<Date | null>`max(finished_at)`.as('at'))
    .where('status', 'in', [...SUCCESS])
    .executeTakeFirst();
  return row?.at ? new Date(row.at) : null;
}

/** The `limit` most recently finished runs, newest first: what `sync_failed` judges. */
export async function latestFinishedRuns(db: Db, limit: number) {
  return db
    .selectFrom('sync_runs')
    .select(['run_id', 'status', 'finished_at', 'error', 'accounts'])
    .where('status', '!=', 'running')
    .where('finished_at', 'is not', null)
    .orderBy('finished_at', 'desc')
    .limit(limit)
    .execute();
}

// The jsonb paths below are names of SyncRunStats and CredentialOutcome: renaming a field
// there fails the type check here instead of silently reading nothing.
const CREDENTIALS_KEY = 'credentials' satisfies keyof SyncRunStats;
const NAME_KEY = 'name' satisfies keyof CredentialOutcome;
const STATUS_KEY = 'status' satisfies keyof CredentialOutcome;
const LIST_HELD_KEY = 'listHeld' satisfies keyof CredentialOutcome;
/** A credential outcome that means the account itself was not synced in a `partial` run. */
const NOT_SYNCED = ['failed', 'skipped'] as const satisfies readonly CredentialOutcome['status'][];

/**
 * Per account, when its last successful run finished (absent: never). A `partial` run
 * counts for an account only if that account's own credential did not fail or get
 * skipped in it, nor have its business list held (`stats.credentials`): a revoked token
 * on one account, while the others keep every run `partial`, is exactly the silence
 * `sync_stale` is for, and so is a list that answers nothing, night after night.
 */
export async function lastSuccessByAccount(
  db: Db,
  accounts: readonly string[],
): Promise<Map<string, Date>> {
  if (accounts.length === 0) return new Map();
  const [failed, skipped] = NOT_SYNCED;
  const outcomeOf = (status: CredentialOutcome['status']) =>
    sql`jsonb_build_array(jsonb_build_object(${NAME_KEY}::text, a.name, ${STATUS_KEY}::text, ${status}::text))`;
  const { rows } = await sql<{ name: string; at: Date | null }>`
    select a.name, max(r.finished_at) as at
    from unnest(${[...accounts]}::text[]) as a(name)
    join sync_runs r on r.accounts @> jsonb_build_array(a.name)
      and (
        r.status = 'succeeded'
        or (
          r.status = 'partial'
          and not coalesce(r.stats -> ${CREDENTIALS_KEY}::text, '[]'::jsonb) @> ${outcomeOf(failed)}
          and not coalesce(r.stats -> ${CREDENTIALS_KEY}::text, '[]'::jsonb) @> ${outcomeOf(skipped)}
          and not exists (
            select 1 from jsonb_array_elements(coalesce(r.stats -> ${CREDENTIALS_KEY}::text, '[]'::jsonb)) as c(outcome)
            where c.outcome ->> ${NAME_KEY}::text = a.name
              and c.outcome -> ${LIST_HELD_KEY}::text is not null
          )
        )
      )
    group by a.name`.execute(db);
  return new Map(rows.filter((r) => r.at).map((r) => [r.name, new Date(r.at as Date)]));
}

export interface SyncRunsTable {
  run_id: string;
  started_at: TimestampWithDefault;
  finished_at: Timestamp | null;
  status: ColumnType<SyncRunStatus, SyncRunStatus, SyncRunStatus>;
  trigger: string;
  streams: Json;
  accounts: Json;
  shard: string | null;
  stats: Json | null;
  error: string | null;
  /** Migration 0015: the settings that shaped the run's writes (`RunSettings`); null before. */
  settings: ColumnType<JsonValue | null, string | null | undefined, string | null>;
  /** Migration 0020: the run's OpenTelemetry trace id when traces were on; else null. */
  trace_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type SyncRunStatus = 'running' | 'succeeded' | 'partial' | 'failed' | 'interrupted';

declare module '../database.ts' {
  interface Database {
    sync_runs: SyncRunsTable;
  }
}
