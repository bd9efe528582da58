/**
 * The generic JSON sink: a POST signed like our own webhooks (`X-Service-Signature:
 * sha256=<hex HMAC-SHA256(secret, raw body)>`) with an `Idempotency-Key`, so a receiver
 * can drop the repeat that at-least-once delivery allows. One event per alert (the key is
 * its dedupe_key), or in `batch` mode one `{ alerts: [...] }` per account and run (the key
 * is a hash of the dedupe keys it carries).
 */
import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { SIGNATURE_HEADER, signBody } from '../webhook-signature.ts';
import { alertWebhookBody, testWebhookBody } from './messages.ts';
import type { BacklogPolicy } from './outbox.ts';
import { postJson } from './post.ts';
import { type AlertSink, DEFAULT_SINK_TIMEOUT_MS } from './sinks.ts';

export interface WebhookSinkOptions {
  mode?: 'each' | 'batch';
  timeoutMs?: number;
  /** Where the POSTs go through: the proxy's agent (`deliveryDispatcher`), or direct. */
  dispatcher?: Dispatcher | undefined;
  /** ALERT_BACKLOG: what it does with the alerts raised before it was first configured. */
  backlog?: BacklogPolicy;
}

export function jsonWebhookSink(
  url: string,
  secret: string,
  options: WebhookSinkOptions = {},
): AlertSink {
  const timeoutMs = options.timeoutMs ?? DEFAULT_SINK_TIMEOUT_MS;
  const backlog = options.backlog ? { backlog: options.backlog } : {};
  const post = (body: string, key: string, signal?: AbortSignal) =>
    postJson(
      url,
      body,
      { [SIGNATURE_HEADER]: signBody(secret, body), 'idempotency-key': key },
      { timeoutMs, signal, dispatcher: options.dispatcher },
    );
  const sendTest = (at: Date, signal?: AbortSignal) => {
    const body = testWebhookBody(at);
    return post(JSON.stringify(body), String(body['dedupe_key']), signal);
  };
  const sink = { name: 'webhook' as const, ...backlog, sendTest };
  if (options.mode === 'batch') {
    return {
      ...sink,
      grouping: 'group',
      async send(alerts, signal) {
        const keys = alerts.map((alert) => alert.dedupeKey).sort();
        const key = `batch:${createHash('sha256').update(keys.join('\n')).digest('hex')}`;
        await post(JSON.stringify({ alerts: alerts.map(alertWebhookBody) }), key, signal);
      },
    };
  }
  return {
    ...sink,
    grouping: 'each',
    async send(alerts, signal) {
      for (const alert of alerts) {
        await post(JSON.stringify(alertWebhookBody(alert)), alert.dedupeKey, signal);
      }
    },
  };
}
