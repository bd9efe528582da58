/** The table printed at the end of a sync: what happened to each credential and table. */
import type { SyncResult } from './run.ts';

export function renderTable(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join(
    '\n',
  );
}

export function renderSyncSummary(result: SyncResult): string {
  const { stats } = result;
  const parts: string[] = [];
  parts.push(
    `Sync ${result.status} in ${stats.seconds}s (run ${result.runId}): ` +
      `${stats.businesses.synced} of ${stats.businesses.inShard} businesses synced, ` +
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
    parts.push(
      renderTable(
        ['table', 'inserted', 'updated', 'unchanged', 'deleted'],
        tables.map(([name, c]) => [name, c.inserted, c.updated, c.unchanged, c.deleted]),
      ),
    );
  }
  if (result.error) parts.push(`Problems: ${result.error}`);
  return `${parts.join('\n\n')}\n`;
}
