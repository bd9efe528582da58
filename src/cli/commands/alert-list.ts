/**
 * `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table: kind,
 * business id and name, what changed, when, and per configured sink whether it took the
 * alert (`slack: sent`, `webhook: pending`, `slack: skipped (raised before sink slack was
 * added)`), with the attempts and the last error; under it, how many alerts each sink
 * skips (docs/alerts.md, "A sink added later"). `alerts test` posts one test message to
 * each configured sink and reports each answer; `alerts send-backlog` makes skipped alerts
 * due again, `alerts skip-backlog` skips what is pending. The command itself is
 * src/cli/commands/alerts.ts.
 */

import { oneLine, whatChanged } from '../../alerts/messages.ts';
import type { AlertForDelivery, BacklogPolicy } from '../../alerts/outbox.ts';
import { SinkError } from '../../alerts/post.ts';
import type { AlertSink } from '../../alerts/sinks.ts';
import type { Config } from '../../config/index.ts';
import { renderTable } from '../../text-table.ts';

export type AlertListRow = AlertForDelivery & {
  deliveredAt: Date | null;
  lastError: string | null;
};

function minute(at: Date | null): string {
  return at ? `${at.toISOString().slice(0, 16).replace('T', ' ')}Z` : '';
}

/**
 * What became of the alert for one sink. `skipsBacklog`: the sink has not run yet and
 * ALERT_BACKLOG=skip, so at its first pass it skips every alert open then.
 */
function sinkState(row: AlertListRow, sink: string, skipsBacklog = false): string {
  if (row.deliveredSinks.includes(sink)) return 'sent';
  if (row.skippedSinks.includes(sink)) return `skipped (raised before sink ${sink} was added)`;
  // Closed without this sink: a sink added since, or an alert replay added closed.
  if (row.deliveredAt) return 'not sent';
  return skipsBacklog ? `will skip (raised before sink ${sink} first runs)` : 'pending';
}

/**
 * Per configured sink: `sent`, `pending`, `will skip (…)`, `skipped (…)` or `not sent`;
 * with none, the alert is only logged, unless a sink configured before skipped it.
 */
function delivery(
  row: AlertListRow,
  sinks: readonly string[],
  skipsBacklog: ReadonlySet<string>,
): string {
  if (sinks.length === 0) {
    if (row.skippedSinks.length > 0 && row.deliveredSinks.length === 0) {
      return row.skippedSinks.map((sink) => `${sink}: ${sinkState(row, sink)}`).join(', ');
    }
    return row.deliveredAt ? `sent ${minute(row.deliveredAt)}` : 'no sink (log only)';
  }
  return sinks.map((sink) => `${sink}: ${sinkState(row, sink, skipsBacklog.has(sink))}`).join(', ');
}

/** What `alerts --pending` says where no sink is configured: alerts are only logged. */
export const NO_SINK_PENDING =
  'no sink configured: nothing is pending (alerts are only logged; set ALERT_SLACK_WEBHOOK_URL, ' +
  'or ALERT_WEBHOOK_URL with ALERT_WEBHOOK_SECRET, to deliver them).\n';

/**
 * The configured sinks no dispatcher has run with yet (no `alert_sinks` row): what each
 * will do at its first pass with the alerts open now, under ALERT_BACKLOG.
 */
export interface NewSinks {
  backlog: BacklogPolicy;
  /** Sink name → the open alerts it has neither taken nor skipped. */
  open: Readonly<Record<string, number>>;
}

function newSinkLines(fresh: NewSinks | undefined): string {
  if (!fresh) return '';
  return Object.keys(fresh.open)
    .sort()
    .map((sink) => {
      const n = fresh.open[sink] ?? 0;
      const alerts = `${n} open ${n === 1 ? 'alert' : 'alerts'}`;
      return fresh.backlog === 'skip'
        ? `Sink ${sink} has not run yet: at its first pass it skips the ${alerts} raised before it ` +
            `(ALERT_BACKLOG=skip; \`listings-sync alerts send-backlog --sink ${sink}\` sends them then).\n`
        : `Sink ${sink} has not run yet: at its first pass it takes the ${alerts} (ALERT_BACKLOG=send).\n`;
    })
    .join('');
}

/** A sink's `alert_sinks` row: when it was first configured and what it did with the backlog. */
export interface SinkSeenRow {
  sink: string;
  firstSeenAt: Date;
  backlog: BacklogPolicy;
  skipped: number;
}

/**
 * One line per sink that skips alerts now: when it was added, how many, and the command
 * that sends them.
 */
function backlogLines(seen: readonly SinkSeenRow[], skipped: Readonly<Record<string, number>>) {
  const added = new Map(seen.map((row) => [row.sink, row.firstSeenAt]));
  return Object.keys(skipped)
    .sort()
    .filter((sink) => (skipped[sink] ?? 0) > 0)
    .map((sink) => {
      const n = skipped[sink] ?? 0;
      const at = added.get(sink);
      return (
        `Skipped by ${sink}${at ? ` (added ${minute(at)})` : ''}: ${n} ${n === 1 ? 'alert' : 'alerts'}; ` +
        `\`listings-sync alerts send-backlog --sink ${sink}\` sends them.\n`
      );
    })
    .join('');
}

export function renderAlerts(
  rows: readonly AlertListRow[],
  options: {
    pending: boolean;
    sinks: readonly string[];
    /** The `alert_sinks` rows, and how many alerts each sink skips now. */
    seen?: readonly SinkSeenRow[];
    skipped?: Readonly<Record<string, number>>;
    /** The configured sinks not run yet, and what their first pass does. */
    fresh?: NewSinks;
  },
): string {
  const footer =
    backlogLines(options.seen ?? [], options.skipped ?? {}) + newSinkLines(options.fresh);
  const skipsBacklog = new Set(
    options.fresh?.backlog === 'skip' ? Object.keys(options.fresh.open) : [],
  );
  if (rows.length === 0) {
    return `${options.pending ? 'No pending alerts.' : 'No alerts.'}\n${footer}`;
  }
  const table = renderTable(
    ['kind', 'business', 'what changed', 'detected', 'delivery', 'attempts', 'last error'],
    rows.map((row) => [
      row.kind,
      row.businessId === null
        ? ''
        : `${row.businessId} ${oneLine(row.businessName ?? '', 32)}`.trim(),
      oneLine(whatChanged(row), 70),
      minute(row.detectedAt),
      delivery(row, options.sinks, skipsBacklog),
      row.attempts,
      oneLine(row.lastError, 60),
    ]),
  );
  return `${table}\n${footer}`;
}

/** The sink names the configuration sets up, without building the sinks. */
export function configuredSinkNames(config: Config): string[] {
  const names: string[] = [];
  if (config.alertSlackWebhookUrl) names.push('slack');
  if (config.alertWebhookUrl) names.push('webhook');
  return names;
}

/** The answer of one sink to `listings-sync alerts test`. */
export interface SinkTestResult {
  sink: string;
  /** Where it went: the URL's origin alone (Slack carries its secret in the path). */
  target: string;
  ok: boolean;
  /** The receiver's HTTP status; null when it never answered. */
  status: number | null;
  /** Why it failed, with no part of the URL but its origin. */
  error: string | null;
}

/** The URL's origin: what may be printed of a sink's address. */
export function sinkOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(unreadable URL)';
  }
}

/**
 * Posts one test message to each sink, all at once, and reports each answer. `urls` are
 * the sinks' addresses by name, used only to keep them out of the report.
 */
export async function sendTestAlerts(
  sinks: readonly AlertSink[],
  urls: Readonly<Record<string, string>>,
  at: Date,
): Promise<SinkTestResult[]> {
  return Promise.all(
    sinks.map(async (sink): Promise<SinkTestResult> => {
      const url = urls[sink.name] ?? '';
      const target = sinkOrigin(url);
      if (!sink.sendTest) {
        return { sink: sink.name, target, ok: false, status: null, error: 'cannot send a test' };
      }
      try {
        const status = await sink.sendTest(at);
        return { sink: sink.name, target, ok: true, status, error: null };
      } catch (error) {
        const status = error instanceof SinkError ? (error.status ?? null) : null;
        return {
          sink: sink.name,
          target,
          ok: false,
          status,
          error: withoutUrl((error as Error).message, url),
        };
      }
    }),
  );
}

/** `text` with `url`, and its path, replaced by the origin (an error may quote either). */
function withoutUrl(text: string, url: string): string {
  if (!url) return text;
  let out = text.split(url).join(sinkOrigin(url));
  try {
    const { pathname, search } = new URL(url);
    const tail = `${pathname}${search}`;
    if (tail.length > 1) out = out.split(tail).join('/[REDACTED]');
  } catch {
    // An unreadable URL was never sent.
  }
  return out;
}

/** One line per sink: `slack (https://hooks.slack.com): ok, HTTP 200`. */
export function renderTestResults(results: readonly SinkTestResult[]): string {
  return results
    .map((r) => {
      const head = `${r.sink} (${r.target}): ${r.ok ? 'ok' : 'failed'}`;
      if (r.ok) return `${head}, HTTP ${r.status}\n`;
      // A SinkError of a receiver that answered already starts with `HTTP <status>`.
      return `${head}, ${r.error ?? (r.status === null ? 'no answer' : `HTTP ${r.status}`)}\n`;
    })
    .join('');
}

/** The sinks' addresses by name, to keep out of what `alerts test` prints. */
export function configuredSinkUrls(config: Config): Record<string, string> {
  const urls: Record<string, string> = {};
  if (config.alertSlackWebhookUrl) urls['slack'] = config.alertSlackWebhookUrl;
  if (config.alertWebhookUrl) urls['webhook'] = config.alertWebhookUrl;
  return urls;
}
