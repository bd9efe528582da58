/**
 * `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table: kind,
 * business id and name, what changed, when, and per configured sink whether it took the
 * alert (`slack: sent`, `webhook: pending`), with the attempts and the last error. The
 * command itself is src/cli/commands/alerts.ts.
 */
import { renderTable } from '../command/table.ts';
import type { Config } from '../config/index.ts';
import { oneLine, whatChanged } from './messages.ts';
import type { AlertForDelivery } from './outbox.ts';

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
