/**
 * Where alerts go: a Slack incoming webhook (a readable line per alert) and a generic JSON
 * POST signed like our own webhooks (`X-Service-Signature: sha256=<hex HMAC>`) with an
 * `Idempotency-Key` (the alert's dedupe_key), so a receiver can drop the repeat that
 * at-least-once delivery allows. A sink resolves when the receiver answered 2xx and
 * throws otherwise.
 */
import { request } from 'undici';
import { type Config, ConfigError } from '../config.ts';
import type { AlertForDelivery } from './alert-store.ts';
import { SIGNATURE_HEADER, signBody } from './signature.ts';

export type SinkName = 'slack' | 'webhook';

export interface AlertSink {
  name: SinkName;
  send(alert: AlertForDelivery, signal?: AbortSignal): Promise<void>;
}

export class SinkError extends Error {
  readonly code = 'ALERT_SINK_FAILED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SinkError';
  }
}

/** A receiver has 10 s to answer: long enough for Slack on a bad day, short enough to move on. */
const SINK_TIMEOUT_MS = 10_000;

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

function businessLabel(alert: AlertForDelivery): string {
  return alert.businessName ?? `business ${alert.businessId}`;
}

/** Slack's mrkdwn needs `&`, `<` and `>` escaped in text it should not read as markup. */
function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Alert kinds (alerts.kind). */
export const REVIEW_RESPONSE_FAILED_KIND = 'review_response_failed';

/** The first 200 characters of a response, on one line, for a message. */
function excerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** The Slack text of a review response request that ended `Failed`. */
function slackReviewResponseFailed(alert: AlertForDelivery): { text: string } {
  const request = alert.responseRequest;
  const site = alert.siteName ? ` on *${slackEscape(alert.siteName)}*` : '';
  const author = request?.reviewAuthor ? ` by ${slackEscape(request.reviewAuthor)}` : '';
  const lines = [
    `:x: A response to a review${author}${site} for *${slackEscape(businessLabel(alert))}* *failed* to post` +
      (alert.previousStatus ? ` (was ${slackEscape(alert.previousStatus)})` : '') +
      '.',
  ];
  if (request) lines.push(`Response: "${slackEscape(excerpt(request.content))}"`);
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

/** The Slack message: one readable paragraph per alert. */
export function slackMessage(alert: AlertForDelivery): { text: string } {
  if (alert.kind === REVIEW_RESPONSE_FAILED_KIND) return slackReviewResponseFailed(alert);
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

/** The body of the generic JSON alert webhook (documented in docs/operations.md). */
export function alertWebhookBody(alert: AlertForDelivery): Record<string, unknown> {
  if (alert.kind === REVIEW_RESPONSE_FAILED_KIND) {
    const request = alert.responseRequest;
    return {
      kind: alert.kind,
      alert_id: alert.alertId,
      dedupe_key: alert.dedupeKey,
      account_name: alert.accountName,
      business: { id: alert.businessId, name: alert.businessName },
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
      detected_at: alert.detectedAt.toISOString(),
      run_id: alert.runId,
    };
  }
  return {
    kind: alert.kind,
    alert_id: alert.alertId,
    dedupe_key: alert.dedupeKey,
    account_name: alert.accountName,
    business: { id: alert.businessId, name: alert.businessName },
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
    detected_at: alert.detectedAt.toISOString(),
    run_id: alert.runId,
  };
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<void> {
  const timeout = AbortSignal.timeout(SINK_TIMEOUT_MS);
  let status: number;
  let text = '';
  try {
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      headersTimeout: SINK_TIMEOUT_MS,
      bodyTimeout: SINK_TIMEOUT_MS,
    });
    status = response.statusCode;
    text = (await response.body.text()).slice(0, 200);
  } catch (cause) {
    throw new SinkError(`no answer (${(cause as Error).message})`, { cause });
  }
  if (status < 200 || status > 299) {
    throw new SinkError(`HTTP ${status}${text ? `: ${text.replace(/\s+/g, ' ').trim()}` : ''}`);
  }
}

export function slackSink(url: string): AlertSink {
  return {
    name: 'slack',
    send: (alert, signal) => post(url, JSON.stringify(slackMessage(alert)), {}, signal),
  };
}

export function jsonWebhookSink(url: string, secret: string): AlertSink {
  return {
    name: 'webhook',
    send: (alert, signal) => {
      const body = JSON.stringify(alertWebhookBody(alert));
      return post(
        url,
        body,
        { [SIGNATURE_HEADER]: signBody(secret, body), 'idempotency-key': alert.dedupeKey },
        signal,
      );
    },
  };
}

/** The sinks the configuration names; none is fine (alerts stay in the table). */
export function alertSinksFromConfig(config: Config): AlertSink[] {
  const sinks: AlertSink[] = [];
  if (config.alertSlackWebhookUrl) sinks.push(slackSink(config.alertSlackWebhookUrl));
  if (config.alertWebhookUrl) {
    if (!config.alertWebhookSecret) {
      throw new ConfigError(
        'ALERT_WEBHOOK_URL is set but ALERT_WEBHOOK_SECRET is not. Alerts sent to the webhook ' +
          'are signed (X-Service-Signature), so set the secret the receiver verifies with.',
      );
    }
    sinks.push(jsonWebhookSink(config.alertWebhookUrl, config.alertWebhookSecret));
  }
  return sinks;
}
