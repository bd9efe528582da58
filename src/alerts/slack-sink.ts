/**
 * The Slack incoming-webhook sink: by default one digest per account and run (counts per
 * kind, the worst alerts with links, "and N more"), or one message per alert.
 */

import type { Dispatcher } from 'undici';
import { digestMessages, slackMessage, testSlackMessage } from './messages.ts';
import type { BacklogPolicy } from './outbox.ts';
import { postJson } from './post.ts';
import { type AlertSink, DEFAULT_SINK_TIMEOUT_MS } from './sinks.ts';

export interface SlackSinkOptions {
  mode?: 'digest' | 'each';
  /** Alerts listed by name in a digest. */
  worst?: number;
  timeoutMs?: number;
  /** Where the POSTs go through: the proxy's agent (`deliveryDispatcher`), or direct. */
  dispatcher?: Dispatcher | undefined;
  /** ALERT_BACKLOG: what it does with the alerts raised before it was first configured. */
  backlog?: BacklogPolicy;
}

export function slackSink(url: string, options: SlackSinkOptions = {}): AlertSink {
  const mode = options.mode ?? 'digest';
  const timeoutMs = options.timeoutMs ?? DEFAULT_SINK_TIMEOUT_MS;
  return {
    name: 'slack',
    grouping: mode === 'digest' ? 'group' : 'each',
    ...(options.backlog ? { backlog: options.backlog } : {}),
    async send(alerts, signal) {
      const messages =
        mode === 'digest'
          ? digestMessages(alerts, { worst: options.worst ?? 10 })
          : alerts.map(slackMessage);
      for (const message of messages) {
        await postJson(
          url,
          JSON.stringify(message),
          {},
          { timeoutMs, signal, dispatcher: options.dispatcher },
        );
      }
    },
    sendTest(at, signal) {
      return postJson(
        url,
        JSON.stringify(testSlackMessage(at)),
        {},
        { timeoutMs, signal, dispatcher: options.dispatcher },
      );
    },
  };
}
