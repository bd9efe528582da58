/** The table printed at the end of a sync: what happened to each credential and table. */
import { renderTable } from '../text-table.ts';
import type { SyncResult } from './run.ts';

export interface SummaryContext {
  /** The warehouse written to, password removed (`WarehouseTarget.description`). */
  warehouse: string;
}

/**
 * The summary a sync prints: the outcome, the warehouse it wrote to, per credential and
 * per table counts, and for a run that was not clean, what failed (business, stream,
 * reason) rather than only how many.
 */
export function renderSyncSummary(result: SyncResult, context: SummaryContext): string {
  const { stats } = result;
  const parts: string[] = [];
  parts.push(
    `Sync ${result.status} in ${stats.seconds}s (run ${result.runId}) into ${context.warehouse}: ` +
      `${businessesLine(stats)}, ` +
      (stats.duplicates ? `${stats.duplicates} duplicate record(s) collapsed, ` : '') +
      (stats.answersUnchanged
        ? `${stats.answersUnchanged} answer(s) as their rows already were (not parsed again), `
        : '') +
      `${stats.requests} requests, ${stats.retries} retries, ` +
      `${stats.quarantined} quarantined, ${stats.alerts} alerts.`,
  );
  if (stats.credentials.length) {
    parts.push(
      renderTable(
        ['credential', 'status', 'businesses', 'error'],
        stats.credentials.map((c) => [c.name, c.status, c.businesses, c.error ?? '']),
      ),
    );
  }
  const tables = Object.entries(stats.tables).sort(([a], [b]) => a.localeCompare(b));
  if (tables.length) {
    // A moved column only when a row moved between businesses (a keyword the upstream moved).
    const moved = tables.some(([, c]) => (c.moved ?? 0) > 0);
    parts.push(
      renderTable(
        ['table', 'inserted', 'updated', 'unchanged', 'deleted', ...(moved ? ['moved'] : [])],
        tables.map(([name, c]) => [
          name,
          c.inserted,
          c.updated,
          c.unchanged,
          c.deleted,
          ...(moved ? [c.moved ?? 0] : []),
        ]),
      ),
    );
  }
  const failures = renderFailures(result);
  if (failures) parts.push(failures);
  const held = stats.removalsHeld ?? 0;
  if (held > 0) {
    // Not a failure (the status says so); said here so that "succeeded" is not read as "all applied".
    parts.push(
      `${held} stream read(s) held on a volume drop: what they answered is stored, but the rows they no longer list ` +
        'stay until the next run confirms the drop (alerts of kind volume_drop; docs/warehouse.md, "How removals work").',
    );
  }
  if (result.error) parts.push(`Problems: ${result.error}`);
  return `${parts.join('\n\n')}\n`;
}

/**
 * "12 of 12 businesses synced", or, when a credential failed, whose businesses a refused
 * list never counted: "12 of 12 businesses of 1 of 2 credentials synced (credential
 * "east" failed)", never a whole that is not.
 */
function businessesLine(stats: SyncResult['stats']): string {
  const { synced, inShard } = stats.businesses;
  const failed = stats.credentials.filter((c) => c.status === 'failed');
  if (failed.length === 0) return `${synced} of ${inShard} businesses synced`;
  const total = stats.credentials.length;
  const names = failed.map((c) => `"${c.name}"`).join(', ');
  return (
    `${synced} of ${inShard} businesses of ${total - failed.length} of ${total} credentials synced ` +
    `(credential${failed.length === 1 ? '' : 's'} ${names} failed)`
  );
}

/** The failures of a run as a table, with a line for what was not listed and for quarantine. */
export function renderFailures(result: Pick<SyncResult, 'runId' | 'stats'>): string {
  const { stats } = result;
  const listed = stats.failures ?? [];
  const lines: string[] = [];
  if (listed.length) {
    lines.push('What failed (the rest of each business committed):');
    lines.push(
      renderTable(
        ['credential', 'business', 'stream', 'reason'],
        listed.map((f) => [f.credential, f.businessId ?? '–', f.stream, f.reason]),
      ),
    );
  }
  // Runs recorded before `failureCount` existed: only what is listed is known exactly.
  const failedCount = stats.failureCount ?? listed.length;
  if (failedCount > listed.length && listed.length > 0) {
    lines.push(`… and ${failedCount - listed.length} more failure(s), in the log.`);
  }
  if (stats.quarantined > 0) {
    lines.push(
      `${stats.quarantined} record(s) quarantined: select stream, business_id, reason from quarantine where run_id = '${result.runId}';`,
    );
  }
  return lines.join('\n');
}
