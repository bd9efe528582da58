/**
 * A run's counts and failures, and the rules that turn them into its status. The stored
 * shape is `SyncRunStats` (src/warehouse/runs/sync-runs.ts); `RunStats` is the same type.
 */
import { redactText } from '../log.ts';
import {
  type CredentialOutcome,
  emptySyncRunStats,
  type SyncFailure,
  type SyncRunStats,
} from '../warehouse/runs/sync-runs.ts';

export type { CredentialOutcome, SyncFailure } from '../warehouse/runs/sync-runs.ts';
export type RunStats = SyncRunStats;

export type RunStatus = 'succeeded' | 'partial' | 'failed' | 'interrupted';

/** Failures listed one by one in a run's stats; `failureCount` counts them all. */
export const MAX_FAILURES_LISTED = 50;

/**
 * Counts `failure` in `failureCount`, and lists it (redacted, its reason cut to 300
 * characters) while there is room. Every failure of a run goes through here, once.
 */
export function recordFailure(stats: RunStats, failure: SyncFailure): void {
  stats.failureCount += 1;
  if (stats.failures.length < MAX_FAILURES_LISTED) {
    stats.failures.push({ ...failure, reason: redactText(failure.reason).slice(0, 300) });
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export const emptyStats: () => RunStats = emptySyncRunStats;

/**
 * The run's status: `failed` when the warehouse failed (`fatal`) or every credential
 * failed; `interrupted` when stopped; `partial` when anything failed or was quarantined.
 */
export function decideStatus(
  stats: RunStats,
  fatal: Error | undefined,
  signal?: AbortSignal,
): RunStatus {
  if (fatal) return 'failed';
  if (signal?.aborted) return 'interrupted';
  const failedCredentials = stats.credentials.filter((c) => c.status === 'failed').length;
  if (stats.credentials.length > 0 && failedCredentials === stats.credentials.length)
    return 'failed';
  const partial =
    failedCredentials > 0 ||
    stats.credentials.some((c) => c.status === 'partial') ||
    stats.businesses.failed > 0 ||
    stats.streamFailures > 0 ||
    stats.quarantined > 0;
  return partial ? 'partial' : 'succeeded';
}

/**
 * The run's error text when credentials failed or were stopped (one clause each), else
 * undefined.
 */
export function summariseFailures(stats: RunStats): string | undefined {
  const failed = stats.credentials.filter(
    (c: CredentialOutcome) => c.status === 'failed' || c.error !== undefined,
  );
  if (failed.length === 0) return undefined;
  return failed
    .map((c) =>
      c.error?.startsWith(`credential "${c.name}"`)
        ? c.error
        : `credential "${c.name}": ${c.error ?? 'failed'}`,
    )
    .join('; ');
}
