/**
 * `listings-sync runs [--limit N]`: the most recent sync runs from `sync_runs`, newest
 * first: when each started, the upstream day it read (its raw reads' observation time,
 * docs/warehouse.md "Raw zone": a sandbox's or the demo's simulated day, not the wall
 * clock's), status, duration, counts, and for a run that was not clean, what failed (the
 * run's listed failures, docs/warehouse.md "sync_runs"). Reads only.
 */
import { renderTable } from '../../text-table.ts';
import type { SyncFailure, SyncRunLine } from '../../warehouse/runs/sync-runs.ts';

// The SQL is the warehouse's (src/warehouse/runs/sync-runs.ts); the command reads through it.
export { readRecentRuns } from '../../warehouse/runs/sync-runs.ts';
export type RunLine = SyncRunLine;

/** "0.8 s", "2 min 05 s", "1 h 12 min": a run's length as a person reads it. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '–';
  const seconds = ms / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(Math.round(seconds % 60)).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** `2026-03-09`, or `2026-03-09 … 2026-03-10` for a run that read across midnight; `–` with no read kept. */
export function formatUpstreamDays(days: RunLine['upstreamDays']): string {
  if (!days) return '–';
  return days.first === days.last ? days.first : `${days.first} … ${days.last}`;
}

export function renderRuns(runs: readonly RunLine[]): string {
  if (runs.length === 0) return 'No sync has run against this warehouse yet.\n';
  const table = renderTable(
    [
      'started (UTC)',
      'upstream day',
      'status',
      'trigger',
      'duration',
      'businesses',
      'requests',
      'quarantined',
      'alerts',
      'failures',
    ],
    runs.map((run) => {
      const stats = run.stats ?? {};
      const businesses = stats.businesses
        ? `${stats.businesses.synced}/${stats.businesses.inShard}`
        : '–';
      return [
        `${run.startedAt.toISOString().slice(0, 19).replace('T', ' ')}${run.shard ? ` [${run.shard}]` : ''}`,
        formatUpstreamDays(run.upstreamDays),
        run.status,
        run.trigger,
        formatDuration(run.finishedAt ? run.finishedAt.getTime() - run.startedAt.getTime() : null),
        businesses,
        stats.requests ?? '–',
        stats.quarantined ?? '–',
        stats.alerts ?? '–',
        // A refused credential fails its whole account: it counts too, or a partial run
        // would read 0 failures.
        // Each failure once (`failureCount`); runs recorded before it, as they were counted.
        (stats.failureCount ?? (stats.streamFailures ?? 0) + (stats.businesses?.failed ?? 0)) +
          (stats.credentials ?? []).filter((c) => c.status === 'failed').length,
      ];
    }),
  );
  const details: string[] = [];
  for (const run of runs) {
    const failures: SyncFailure[] = run.stats?.failures ?? [];
    if (!failures.length && !run.error) continue;
    details.push(`Run ${run.runId} (${run.status}, ${run.startedAt.toISOString()}):`);
    if (run.error) details.push(`  ${run.error}`);
    for (const f of failures) {
      details.push(
        `  ${f.credential}${f.businessId === null ? '' : ` business ${f.businessId}`} ${f.stream}: ${f.reason}`,
      );
    }
  }
  return `${table}\n${details.length ? `\n${details.join('\n')}\n` : ''}`;
}
