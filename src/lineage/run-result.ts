/**
 * The run result (docs/running.md, "The run result"): a run's outcome as one JSON document
 * for an orchestrator (Airflow's KubernetesPodOperator reads /airflow/xcom/return.json,
 * Argo an output parameter's file), written by `sync` and `replay` with `--result-file
 * PATH` or `--result-json` (standard output, which then holds nothing else). Its schema is
 * docs/schemas/run-result.schema.json. Built from what the command already has: no query.
 */
import { writeFileSync } from 'node:fs';
import { redactText } from '../log.ts';

export const RUN_RESULT_SCHEMA_ID =
  'https://github.com/listings-sync/listings-sync/blob/main/docs/schemas/run-result.schema.json';

export interface TableCountsLike {
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  moved?: number;
}

export interface RunResultFailure {
  credential: string;
  businessId: number | null;
  stream: string;
  reason: string;
  /** A replay's business-night not rebuilt: its night. */
  night?: string;
}

export interface RunResult {
  $schema: string;
  command: 'sync' | 'replay';
  /** The run's `sync_runs.run_id`; a replay's: null (it makes one run per kept run). */
  runId: string | null;
  /** Every run the command recorded. */
  runIds: string[];
  status: 'succeeded' | 'partial' | 'failed' | 'interrupted';
  exitCode: number;
  /** Rows per table. A replay into a schema: {} (each run's are in `runs` of that schema). */
  tables: Record<string, TableCountsLike>;
  failures: RunResultFailure[];
  /** All failures, `failures` listing at most the first 50. */
  failureCount: number;
  /** Records quarantined (a sync); replay: the quarantined records it recovered. */
  quarantined: number;
  /**
   * Each credential's upstream day at the run's end (UTC, `YYYY-MM-DD`, from its latest
   * answer's `Date`), null when it sent none; {} for a replay (its days are the kept runs').
   */
  upstreamDays: Record<string, string | null>;
}

/** What a sync returns (src/sync/run.ts, `SyncResult`), as far as the result reads it. */
export interface SyncOutcome {
  runId: string;
  status: RunResult['status'];
  stats: {
    credentials: readonly { name: string; status: string; error?: string }[];
    tables: Record<string, TableCountsLike>;
    failures: { credential: string; businessId: number | null; stream: string; reason: string }[];
    failureCount?: number;
    quarantined: number;
  };
}

export function syncRunResult(
  outcome: SyncOutcome,
  exitCode: number,
  upstreamDays: Record<string, Date | undefined>,
): RunResult {
  const { stats } = outcome;
  // A credential that failed whole (its list refused) is a failure of its own.
  const credentialFailures = stats.credentials
    .filter((c) => c.status === 'failed' && c.error !== undefined)
    .filter((c) => !stats.failures.some((f) => f.credential === c.name && f.businessId === null))
    .map((c) => ({
      credential: c.name,
      businessId: null,
      stream: 'credential',
      reason: c.error ?? '',
    }));
  const failures = [...credentialFailures, ...stats.failures];
  return {
    $schema: RUN_RESULT_SCHEMA_ID,
    command: 'sync',
    runId: outcome.runId,
    runIds: [outcome.runId],
    status: outcome.status,
    exitCode,
    tables: stats.tables,
    failures: failures.slice(0, 50).map((f) => ({
      credential: f.credential,
      businessId: f.businessId,
      stream: f.stream,
      reason: redactText(f.reason).slice(0, 300),
    })),
    failureCount: (stats.failureCount ?? stats.failures.length) + credentialFailures.length,
    quarantined: stats.quarantined,
    upstreamDays: Object.fromEntries(
      Object.entries(upstreamDays).map(([name, at]) => [name, at ? isoDay(at) : null]),
    ),
  };
}

export interface ReplayOutcome {
  runIds: readonly string[];
  notRebuilt: readonly {
    account: string;
    businessId: number;
    night: string;
    reason: string;
  }[];
  recovered: number;
  /** In place: what changed per table. */
  changes?: readonly { table: string; inserted: number; updated: number; deleted: number }[];
}

export function replayRunResult(outcome: ReplayOutcome, exitCode: number): RunResult {
  const failures = outcome.notRebuilt.map((m) => ({
    credential: m.account,
    businessId: m.businessId,
    stream: 'replay',
    reason: m.reason,
    night: m.night,
  }));
  return {
    $schema: RUN_RESULT_SCHEMA_ID,
    command: 'replay',
    runId: null,
    runIds: [...outcome.runIds],
    status: exitCode === 0 ? 'succeeded' : 'partial',
    exitCode,
    tables: Object.fromEntries(
      (outcome.changes ?? []).map((c) => [
        c.table,
        { inserted: c.inserted, updated: c.updated, unchanged: 0, deleted: c.deleted },
      ]),
    ),
    failures: failures.slice(0, 50),
    failureCount: failures.length,
    quarantined: outcome.recovered,
    upstreamDays: {},
  };
}

function isoDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Where the result goes: `--result-file PATH`, `--result-json` (standard output), or nowhere. */
export interface ResultTarget {
  resultFile?: string;
  resultJson?: boolean;
}

/** Writes `result` as `target` asks: the file (replaced whole), or one line on `stdout`. */
export function writeRunResult(
  target: ResultTarget,
  result: RunResult,
  stdout: (text: string) => void,
): void {
  const text = `${JSON.stringify(result, null, 2)}\n`;
  if (target.resultFile) writeFileSync(target.resultFile, text);
  if (target.resultJson) stdout(text);
}
