/** The sinks the configuration names, in the modes the rules file chooses. */
import { type Config, ConfigError } from '../config/index.ts';
import { deliveryDispatcher } from './post.ts';
import type { AlertSink } from './sinks.ts';
import { slackSink } from './slack-sink.ts';
import { jsonWebhookSink } from './webhook-sink.ts';

/** The sinks the configuration names; none is fine (alerts stay in the table and the log). */
export function alertSinksFromConfig(config: Config): AlertSink[] {
  const sinks: AlertSink[] = [];
  const timeoutMs = config.alertSinkTimeoutMs;
  const dispatcher =
    config.alertSlackWebhookUrl || config.alertWebhookUrl
      ? deliveryDispatcher(config.proxy)
      : undefined;
  const modes = config.alertRules.sinks;
  if (config.alertSlackWebhookUrl) {
    sinks.push(
      slackSink(config.alertSlackWebhookUrl, {
        mode: modes.slack.mode,
        worst: modes.slack.worst,
        timeoutMs,
        dispatcher,
        backlog: config.alertBacklog,
      }),
    );
  }
  if (config.alertWebhookUrl) {
    if (!config.alertWebhookSecret) {
      throw new ConfigError(
        'ALERT_WEBHOOK_URL is set but ALERT_WEBHOOK_SECRET is not. Alerts sent to the webhook ' +
          'are signed (X-Service-Signature), so set the secret the receiver verifies with.',
      );
    }
    sinks.push(
      jsonWebhookSink(config.alertWebhookUrl, config.alertWebhookSecret, {
        mode: modes.webhook.mode,
        timeoutMs,
        dispatcher,
        backlog: config.alertBacklog,
      }),
    );
  }
  return sinks;
}
