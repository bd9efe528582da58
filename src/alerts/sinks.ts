/**
 * Where alerts go. Each sink takes either one alert per message (`each`) or a group per
 * message (`group`: the alerts of one account and run), as its mode in the rules file
 * says; the dispatcher groups, the sink renders and posts. A sink resolves when the
 * receiver answered 2xx and throws otherwise.
 */
import { DEFAULTS } from '../config/index.ts';
import type { AlertForDelivery } from './outbox.ts';

export type SinkName = 'slack' | 'webhook';

export interface AlertSink {
  name: SinkName;
  /** `each`: one message per alert; `group`: one message per account and run. */
  grouping: 'each' | 'group';
  send(alerts: readonly AlertForDelivery[], signal?: AbortSignal): Promise<void>;
}

/** ALERT_SINK_TIMEOUT_SECONDS's default, 10 s (why: src/config/settings.ts). */
export const DEFAULT_SINK_TIMEOUT_MS = DEFAULTS.alertSinkTimeoutMs;
