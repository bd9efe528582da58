/** The client's counters: requests sent, retries, and each operation's outcomes. */

export interface ApiStats {
  /** HTTP requests sent, retries included. */
  requests: number;
  /** Attempts repeated after a retryable failure. */
  retries: number;
  /** operation → outcome (`ok`, an error code, or `aborted`) → calls. */
  byOperation: Record<string, Record<string, number>>;
}

export function emptyStats(): ApiStats {
  return { requests: 0, retries: 0, byOperation: {} };
}

/** Count one call of `operation` that ended with `outcome`. */
export function countOutcome(stats: ApiStats, operation: string, outcome: string): void {
  const outcomes = stats.byOperation[operation] ?? {};
  outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  stats.byOperation[operation] = outcomes;
}

/** A copy of the counters, detached from the ones still counting. */
export function snapshotStats(stats: ApiStats): ApiStats {
  const byOperation: ApiStats['byOperation'] = {};
  for (const [operation, outcomes] of Object.entries(stats.byOperation)) {
    byOperation[operation] = { ...outcomes };
  }
  return { requests: stats.requests, retries: stats.retries, byOperation };
}
