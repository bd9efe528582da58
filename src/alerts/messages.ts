/**
 * What alerts say: a one-line summary per alert (`listings-sync alerts`, digests, the
 * log), the Slack text of one alert, the Slack digest of many, and the JSON body of the
 * signed webhook (documented in docs/alerts.md). Pure functions of
 * the alerts as read from the outbox.
 */
import type { JsonValue } from '../warehouse/database.ts';
import {
  isAlertKind,
  KIND_SEVERITY,
  LISTING_BROKEN_AGAIN,
  LISTING_INACCURATE,
  LOW_RATING_REVIEW,
  RANK_DROP,
  REVIEW_RESPONSE_FAILED,
  SYNC_FAILED,
  SYNC_STALE,
  VOLUME_DROP,
} from './kinds.ts';
import type { AlertForDelivery } from './outbox.ts';

export interface SlackMessage {
  text: string;
}

/**
 * Slack truncates a message's text after 40,000 characters and advises staying under
 * 4,000 for readability; a digest stops adding lines before 3,500 so it never comes close.
 */
export const SLACK_TEXT_LIMIT = 3_500;

/** Which of name, phone and address the directory has wrong (a `false` _valid flag). */
export function wrongFields(alert: AlertForDelivery): string[] {
  const listing = alert.listing;
  if (!listing) return [];
  const wrong: string[] = [];
  if (listing.nameValid === false) wrong.push('name');
  if (listing.phoneValid === false) wrong.push('phone');
  if (listing.addressValid === false) wrong.push('address');
  return wrong;
}

export function businessLabel(alert: AlertForDelivery): string {
  if (alert.businessId === null) return alert.accountName ? `account ${alert.accountName}` : '';
  return alert.businessName ?? `business ${alert.businessId}`;
}

/** Slack's mrkdwn needs `&`, `<` and `>` escaped in text it should not read as markup. */
function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One line, at most `max` characters. */
export function oneLine(text: string | null | undefined, max: number): string {
  if (!text) return '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function detail(alert: AlertForDelivery, key: string): JsonValue | undefined {
  return alert.details[key];
}

function rankText(value: JsonValue | undefined): string {
  return typeof value === 'number' ? `#${value}` : 'not ranked';
}

/** What changed, in a few words, for any kind: the column of `listings-sync alerts`. */
export function whatChanged(alert: AlertForDelivery): string {
  switch (alert.kind) {
    case LISTING_INACCURATE: {
      const wrong = wrongFields(alert);
      return (
        `${alert.siteName ?? 'a directory'}: ${alert.previousStatus ?? '(first seen)'} → ${alert.status}` +
        (wrong.length ? ` (wrong: ${wrong.join(', ')})` : '')
      );
    }
    case LISTING_BROKEN_AGAIN: {
      const days = detail(alert, 'daysSinceFix');
      const fixedAt = detail(alert, 'fixedAt');
      return (
        `${alert.siteName ?? 'a directory'}: Inaccurate again` +
        (typeof days === 'number'
          ? ` ${days} ${days === 1 ? 'day' : 'days'} after its fix`
          : ' after its fix') +
        (typeof fixedAt === 'string' ? ` (${fixedAt.slice(0, 10)})` : '')
      );
    }
    case RANK_DROP: {
      const week = detail(alert, 'weekAgoRank');
      return (
        `"${alert.keyword ?? ''}" on ${alert.siteName ?? ''}: ${rankText(detail(alert, 'previousRank'))} → ${rankText(detail(alert, 'rank'))}` +
        (week !== undefined ? ` (7 days before: ${rankText(week)})` : '')
      );
    }
    case LOW_RATING_REVIEW: {
      const rating = detail(alert, 'rating');
      const author = detail(alert, 'author');
      return `${rating}★ review on ${alert.siteName ?? 'a site'}${typeof author === 'string' && author ? ` by ${author}` : ''}`;
    }
    case REVIEW_RESPONSE_FAILED:
      return `response on ${alert.siteName ?? 'a site'}: ${alert.previousStatus ?? '?'} → Failed`;
    case SYNC_FAILED: {
      const error = detail(alert, 'error');
      return `run ${alert.runId ?? ''} ended ${alert.status}${typeof error === 'string' && error ? `: ${oneLine(error, 80)}` : ''}`;
    }
    case SYNC_STALE: {
      const last = detail(alert, 'lastSuccessAt');
      return `no successful run since ${typeof last === 'string' ? last : 'serve started (never)'}`;
    }
    case VOLUME_DROP: {
      const stream = detail(alert, 'stream');
      return (
        `${typeof stream === 'string' ? stream : 'a stream'}: ${detail(alert, 'stored') ?? alert.previousStatus} stored, ` +
        `${detail(alert, 'answered') ?? alert.status} answered; removals held until the next run confirms them`
      );
    }
    default:
      return `${alert.previousStatus ?? ''} → ${alert.status}`;
  }
}

/** The link a reader follows for an alert, when there is one. */
export function alertLink(alert: AlertForDelivery): string | null {
  const link =
    alert.listing?.liveLink ?? alert.review?.permalink ?? alert.responseRequest?.reviewPermalink;
  return link && /^https?:\/\//i.test(link) ? link : null;
}

/** The Slack text of a review response request that ended `Failed`. */
function slackReviewResponseFailed(alert: AlertForDelivery): SlackMessage {
  const request = alert.responseRequest;
  const site = alert.siteName ? ` on *${slackEscape(alert.siteName)}*` : '';
  const author = request?.reviewAuthor ? ` by ${slackEscape(request.reviewAuthor)}` : '';
  const lines = [
    `:x: A response to a review${author}${site} for *${slackEscape(businessLabel(alert))}* *failed* to post` +
      (alert.previousStatus ? ` (was ${slackEscape(alert.previousStatus)})` : '') +
      '.',
  ];
  if (request) lines.push(`Response: "${slackEscape(oneLine(request.content, 200))}"`);
  const link = request?.reviewPermalink;
  if (link && /^https?:\/\//i.test(link)) lines.push(`<${link}|View the review>`);
  lines.push(
    'The upstream will not accept another response to this review through the API; post it on the site itself.',
  );
  lines.push(
    `Request ${slackEscape(request?.requestId ?? alert.dedupeKey)}` +
      (request ? `, review ${request.reviewId}` : '') +
      `, business ${alert.businessId}` +
      (alert.accountName ? `, account ${slackEscape(alert.accountName)}` : '') +
      `, detected ${alert.detectedAt.toISOString()}`,
  );
  return { text: lines.join('\n') };
}

function slackListingInaccurate(alert: AlertForDelivery): SlackMessage {
  const site = alert.siteName ?? 'a directory';
  const wrong = wrongFields(alert);
  const lines = [
    `:warning: *${slackEscape(businessLabel(alert))}* is now *${slackEscape(alert.status)}* on *${slackEscape(site)}*` +
      (alert.previousStatus ? ` (was ${slackEscape(alert.previousStatus)})` : ' (first seen)'),
    wrong.length
      ? `Wrong on the directory: ${wrong.join(', ')}.`
      : 'The directory did not say which field is wrong.',
  ];
  const link = alert.listing?.liveLink;
  if (link && /^https?:\/\//i.test(link)) lines.push(`<${link}|View the live listing>`);
  lines.push(
    `Business ${alert.businessId}` +
      (alert.accountName ? `, account ${slackEscape(alert.accountName)}` : '') +
      `, detected ${alert.detectedAt.toISOString()}`,
  );
  return { text: lines.join('\n') };
}

const KIND_ICON: Record<string, string> = {
  [LISTING_INACCURATE]: ':warning:',
  [LISTING_BROKEN_AGAIN]: ':repeat:',
  [RANK_DROP]: ':chart_with_downwards_trend:',
  [LOW_RATING_REVIEW]: ':star:',
  [REVIEW_RESPONSE_FAILED]: ':x:',
  [SYNC_FAILED]: ':rotating_light:',
  [SYNC_STALE]: ':hourglass:',
  [VOLUME_DROP]: ':arrow_down_small:',
};

/** The Slack message of one alert (the `each` mode). */
export function slackMessage(alert: AlertForDelivery): SlackMessage {
  if (alert.kind === REVIEW_RESPONSE_FAILED) return slackReviewResponseFailed(alert);
  if (alert.kind === LISTING_INACCURATE) return slackListingInaccurate(alert);
  const label = businessLabel(alert);
  const lines = [
    `${KIND_ICON[alert.kind] ?? ':bell:'} ${label ? `*${slackEscape(label)}*: ` : ''}${slackEscape(whatChanged(alert))}`,
  ];
  const link = alertLink(alert);
  if (link) lines.push(`<${link}|Open>`);
  lines.push(
    [
      alert.businessId !== null ? `Business ${alert.businessId}` : null,
      alert.accountName ? `account ${slackEscape(alert.accountName)}` : null,
      `detected ${alert.detectedAt.toISOString()}`,
    ]
      .filter(Boolean)
      .join(', '),
  );
  return { text: lines.join('\n') };
}

/** Most urgent first, then the newest. */
function worstFirst(a: AlertForDelivery, b: AlertForDelivery): number {
  const severity = (kind: string) => (isAlertKind(kind) ? KIND_SEVERITY[kind] : 99);
  return (
    severity(a.kind) - severity(b.kind) ||
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

const KIND_LABEL: Record<string, [string, string]> = {
  [LISTING_INACCURATE]: ['listing newly Inaccurate', 'listings newly Inaccurate'],
  [LISTING_BROKEN_AGAIN]: ['listing broken again', 'listings broken again'],
  [RANK_DROP]: ['rank drop', 'rank drops'],
  [LOW_RATING_REVIEW]: ['low-rated review', 'low-rated reviews'],
  [REVIEW_RESPONSE_FAILED]: ['failed review response', 'failed review responses'],
  [SYNC_FAILED]: ['failed sync', 'failed syncs'],
  [SYNC_STALE]: ['stale account', 'stale accounts'],
  [VOLUME_DROP]: ['held volume drop', 'held volume drops'],
};

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
    .sort(
      ([a], [b]) =>
        (isAlertKind(a) ? KIND_SEVERITY[a] : 99) - (isAlertKind(b) ? KIND_SEVERITY[b] : 99),
    )
    .map(([kind, n]) => {
      const [one, many] = KIND_LABEL[kind] ?? [kind, kind];
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
    const line = `• ${KIND_ICON[alert.kind] ?? ':bell:'} ${link ? `<${link}|${text}>` : text}`;
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
  if (alert.kind === REVIEW_RESPONSE_FAILED) {
    const request = alert.responseRequest;
    return {
      ...base,
      review_response: {
        request_id: request?.requestId ?? null,
        review_id: request?.reviewId ?? null,
        site_name: alert.siteName,
        review_author: request?.reviewAuthor ?? null,
        review_permalink: request?.reviewPermalink ?? null,
        content: request?.content ?? null,
        submitted_at: request ? request.submittedAt.toISOString() : null,
        previous_status: alert.previousStatus,
        status: alert.status,
      },
    };
  }
  if (alert.kind === LISTING_INACCURATE) {
    return {
      ...base,
      listing: {
        id: alert.listingId,
        site_name: alert.siteName,
        previous_status: alert.previousStatus,
        status: alert.status,
        wrong_fields: wrongFields(alert),
        name_valid: alert.listing?.nameValid ?? null,
        phone_valid: alert.listing?.phoneValid ?? null,
        address_valid: alert.listing?.addressValid ?? null,
        live_link: alert.listing?.liveLink ?? null,
      },
    };
  }
  if (alert.kind === RANK_DROP) {
    return { ...base, rank: { keyword: alert.keyword, site: alert.siteName } };
  }
  if (alert.kind === VOLUME_DROP) {
    return {
      ...base,
      volume_drop: {
        stream: detail(alert, 'stream') ?? null,
        stored: detail(alert, 'stored') ?? null,
        answered: detail(alert, 'answered') ?? null,
      },
    };
  }
  if (alert.kind === LOW_RATING_REVIEW) {
    return {
      ...base,
      review: {
        id: alert.review?.reviewId ?? null,
        site_name: alert.siteName,
        rating: alert.review?.rating ?? null,
        author_name: alert.review?.authorName ?? null,
        permalink: alert.review?.permalink ?? null,
      },
    };
  }
  return base;
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
