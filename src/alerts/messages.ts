/**
 * What alerts say: a one-line summary per alert (`listings-sync alerts`, digests, the
 * log), the Slack text of one alert, the Slack digest of many, and the JSON body of the
 * signed webhook (documented in docs/alerts.md). Pure functions of
 * the alerts as read from the outbox.
 */
import { kindEntry, kindSeverity } from './kinds/index.ts';
import {
  businessLabel,
  detectedLine,
  isWebLink,
  oneLine,
  type SlackMessage,
  slackEscape,
  wrongFields,
} from './message-text.ts';
import type { AlertForDelivery } from './outbox.ts';

export { businessLabel, oneLine, type SlackMessage, wrongFields };

/**
 * Slack truncates a message's text after 40,000 characters and advises staying under
 * 4,000 for readability; a digest stops adding lines before 3,500 so it never comes close.
 */
const SLACK_TEXT_LIMIT = 3_500;

/** What changed, in a few words, for any kind (its entry's `summary`): the column of `listings-sync alerts`. */
export function whatChanged(alert: AlertForDelivery): string {
  const entry = kindEntry(alert.kind);
  return entry ? entry.summary(alert) : `${alert.previousStatus ?? ''} → ${alert.status}`;
}

/** The link a reader follows for an alert, when there is one. */
export function alertLink(alert: AlertForDelivery): string | null {
  const link =
    alert.listing?.liveLink ?? alert.review?.permalink ?? alert.responseRequest?.reviewPermalink;
  return isWebLink(link) ? link : null;
}

function icon(kind: string): string {
  return kindEntry(kind)?.icon ?? ':bell:';
}

/** The Slack message of one alert (the `each` mode). */
export function slackMessage(alert: AlertForDelivery): SlackMessage {
  const own = kindEntry(alert.kind)?.slack;
  if (own) return own(alert);
  const label = businessLabel(alert);
  const lines = [
    `${icon(alert.kind)} ${label ? `*${slackEscape(label)}*: ` : ''}${slackEscape(whatChanged(alert))}`,
  ];
  const link = alertLink(alert);
  if (link) lines.push(`<${link}|Open>`);
  lines.push(detectedLine(alert));
  return { text: lines.join('\n') };
}

/** Most urgent first, then the newest. */
function worstFirst(a: AlertForDelivery, b: AlertForDelivery): number {
  return (
    kindSeverity(a.kind) - kindSeverity(b.kind) ||
    b.detectedAt.getTime() - a.detectedAt.getTime() ||
    a.alertId - b.alertId
  );
}

/** The digest's key: one message per account and run (alerts raised outside a run: per account). */
export function digestGroupKey(alert: AlertForDelivery): string {
  return `${alert.accountName ?? ''}\u0000${alert.runId ?? ''}`;
}

/** Alerts in groups of one account and run, in first-seen order. */
export function groupForDigest(alerts: readonly AlertForDelivery[]): AlertForDelivery[][] {
  const groups = new Map<string, AlertForDelivery[]>();
  for (const alert of alerts) {
    const key = digestGroupKey(alert);
    const group = groups.get(key);
    if (group) group.push(alert);
    else groups.set(key, [alert]);
  }
  return [...groups.values()];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * One Slack message about alerts of one account and run: the counts per kind, the worst
 * `worst` alerts (the worst of each kind, then the worst of the rest; most urgent kind
 * first, newest first) each on a line with its link, and "and N more". Lines that would
 * take the text past `SLACK_TEXT_LIMIT` are counted in "more" instead.
 */
export function slackDigest(
  alerts: readonly AlertForDelivery[],
  options: { worst: number },
): SlackMessage {
  const first = alerts[0];
  if (!first) return { text: '' };
  const counts = new Map<string, number>();
  for (const alert of alerts) counts.set(alert.kind, (counts.get(alert.kind) ?? 0) + 1);
  const summary = [...counts.entries()]
    .sort(([a], [b]) => kindSeverity(a) - kindSeverity(b))
    .map(([kind, n]) => {
      const [one, many] = kindEntry(kind)?.label ?? [kind, kind];
      return plural(n, one, many);
    })
    .join(', ');
  const scope = [
    first.accountName ? `account *${slackEscape(first.accountName)}*` : null,
    first.runId ? `run ${first.runId.slice(0, 8)}` : null,
  ]
    .filter(Boolean)
    .join(', ');
  const header = `:bell: *${plural(alerts.length, 'alert')}*${scope ? ` for ${scope}` : ''}: ${summary}.`;
  const lines = [header];
  let length = header.length;
  const sorted = [...alerts].sort(worstFirst);
  // The worst of each kind first, so a flood of one kind cannot hide another; then the rest.
  const leaders = new Map<string, AlertForDelivery>();
  for (const alert of sorted) if (!leaders.has(alert.kind)) leaders.set(alert.kind, alert);
  const chosen = [...leaders.values(), ...sorted.filter((a) => leaders.get(a.kind) !== a)]
    .slice(0, options.worst)
    .sort(worstFirst);
  let listed = 0;
  // Room for the "and N more" line, however many digits N has.
  const reserve = 40;
  for (const alert of chosen) {
    const label = businessLabel(alert);
    const link = alertLink(alert);
    const text = slackEscape(oneLine(`${label ? `${label}: ` : ''}${whatChanged(alert)}`, 300));
    const line = `• ${icon(alert.kind)} ${link ? `<${link}|${text}>` : text}`;
    if (length + 1 + line.length > SLACK_TEXT_LIMIT - reserve) break;
    lines.push(line);
    length += 1 + line.length;
    listed += 1;
  }
  const more = alerts.length - listed;
  if (more > 0) lines.push(`…and ${more} more (\`listings-sync alerts\` lists them all).`);
  return { text: lines.join('\n') };
}

/**
 * The Slack messages a set of alerts makes in the digest mode: one per account and run.
 * The demo prints how many its days would send.
 */
export function digestMessages(
  alerts: readonly AlertForDelivery[],
  options: { worst: number } = { worst: 10 },
): SlackMessage[] {
  return groupForDigest(alerts).map((group) => slackDigest(group, options));
}

/** The body of the signed JSON webhook for one alert (docs/alerts.md). */
export function alertWebhookBody(alert: AlertForDelivery): Record<string, unknown> {
  const base = {
    kind: alert.kind,
    alert_id: alert.alertId,
    dedupe_key: alert.dedupeKey,
    account_name: alert.accountName,
    business: alert.businessId === null ? null : { id: alert.businessId, name: alert.businessName },
    summary: whatChanged(alert),
    details: alert.details,
    detected_at: alert.detectedAt.toISOString(),
    run_id: alert.runId,
  };
  return { ...base, ...kindEntry(alert.kind)?.webhook?.(alert) };
}

/** `kind` of the test message `listings-sync alerts test` sends; never a row of `alerts`. */
export const TEST_ALERT_KIND = 'test';

const TEST_SUMMARY =
  'Test alert from listings-sync (`listings-sync alerts test`): alerts reach this receiver. ' +
  'Nothing changed; no action needed.';

/** The Slack text `listings-sync alerts test` posts. */
export function testSlackMessage(at: Date): SlackMessage {
  return { text: `:white_check_mark: *TEST* ${TEST_SUMMARY} Sent ${at.toISOString()}.` };
}

/**
 * The webhook body `listings-sync alerts test` posts: the fields of a real alert's body that
 * a receiver routes on, `kind` set to `test`, and `test: true`.
 */
export function testWebhookBody(at: Date): Record<string, unknown> {
  return {
    kind: TEST_ALERT_KIND,
    test: true,
    alert_id: null,
    dedupe_key: `test:${at.toISOString()}`,
    account_name: null,
    business: null,
    summary: TEST_SUMMARY,
    details: {},
    detected_at: at.toISOString(),
    run_id: null,
  };
}
