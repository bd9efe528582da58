/** `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table. */
import type { Config } from '../config.ts';
import { openConfiguredWarehouse } from '../warehouse/open.ts';
import { type AlertListRow, recentAlerts } from './alert-store.ts';

export interface AlertsCommandOptions {
  pending?: boolean;
  limit: number;
}

function minute(at: Date | null): string {
  return at ? `${at.toISOString().slice(0, 16).replace('T', ' ')}Z` : '';
}

function oneLine(text: string | null, max: number): string {
  if (!text) return '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Text columns left-aligned, `attempts` right-aligned. */
function renderTable(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) =>
        headers[i] === 'attempts' ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join(
    '\n',
  );
}

export function renderAlerts(rows: AlertListRow[], pending: boolean): string {
  if (rows.length === 0) return pending ? 'No pending alerts.\n' : 'No alerts.\n';
  const table = renderTable(
    ['business', 'site', 'previous → status', 'detected', 'delivered', 'attempts', 'last error'],
    rows.map((row) => [
      oneLine(row.businessName ?? String(row.businessId), 40),
      row.siteName ?? '',
      `${row.previousStatus ?? '(first seen)'} → ${row.status}`,
      minute(row.detectedAt),
      row.deliveredAt ? minute(row.deliveredAt) : 'pending',
      row.attempts,
      oneLine(row.lastError, 60),
    ]),
  );
  return `${table}\n`;
}

export async function runAlertsCommand(
  config: Config,
  options: AlertsCommandOptions,
): Promise<number> {
  const warehouse = await openConfiguredWarehouse(config);
  try {
    const rows = await recentAlerts(warehouse.db, {
      pending: options.pending === true,
      limit: options.limit,
    });
    process.stdout.write(renderAlerts(rows, options.pending === true));
    return 0;
  } finally {
    await warehouse.close();
  }
}
