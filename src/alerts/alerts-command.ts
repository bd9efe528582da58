/**
 * `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table: kind,
 * business id and name, what changed, when, and per configured sink whether it took the
 * alert (`slack: sent`, `webhook: pending`), with the attempts and the last error.
 */
import type { Config } from '../config/index.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../warehouse/open.ts';
import { oneLine, whatChanged } from './messages.ts';
import { type AlertForDelivery, recentAlerts } from './outbox.ts';

export interface AlertsCommandOptions {
  pending?: boolean;
  limit: number;
}

export type AlertListRow = AlertForDelivery & {
  deliveredAt: Date | null;
  lastError: string | null;
};

function minute(at: Date | null): string {
  return at ? `${at.toISOString().slice(0, 16).replace('T', ' ')}Z` : '';
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

/** Per configured sink: `sent` or `pending`; with none, the alert is only logged. */
function delivery(row: AlertListRow, sinks: readonly string[]): string {
  if (sinks.length === 0)
    return row.deliveredAt ? `sent ${minute(row.deliveredAt)}` : 'no sink (log only)';
  return sinks
    .map((sink) => `${sink}: ${row.deliveredSinks.includes(sink) ? 'sent' : 'pending'}`)
    .join(', ');
}

export function renderAlerts(
  rows: readonly AlertListRow[],
  options: { pending: boolean; sinks: readonly string[] },
): string {
  if (rows.length === 0) return options.pending ? 'No pending alerts.\n' : 'No alerts.\n';
  const table = renderTable(
    ['kind', 'business', 'what changed', 'detected', 'delivery', 'attempts', 'last error'],
    rows.map((row) => [
      row.kind,
      row.businessId === null
        ? ''
        : `${row.businessId} ${oneLine(row.businessName ?? '', 32)}`.trim(),
      oneLine(whatChanged(row), 70),
      minute(row.detectedAt),
      delivery(row, options.sinks),
      row.attempts,
      oneLine(row.lastError, 60),
    ]),
  );
  return `${table}\n`;
}

/** The sink names the configuration sets up, without building the sinks. */
export function configuredSinkNames(config: Config): string[] {
  const names: string[] = [];
  if (config.alertSlackWebhookUrl) names.push('slack');
  if (config.alertWebhookUrl) names.push('webhook');
  return names;
}

export async function runAlertsCommand(
  config: Config,
  options: AlertsCommandOptions,
): Promise<number> {
  // Only reads: a missing embedded database is an error, never created by looking.
  const warehouse = await openConfiguredWarehouse(config, 'read');
  try {
    await requireCurrentSchema(warehouse);
    const pending = options.pending === true;
    const rows = await recentAlerts(warehouse.db, { pending, limit: options.limit });
    process.stdout.write(renderAlerts(rows, { pending, sinks: configuredSinkNames(config) }));
    return 0;
  } finally {
    await warehouse.close();
  }
}
