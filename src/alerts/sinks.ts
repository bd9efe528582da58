/**
 * Where alerts go. Each sink takes either one alert per message (`each`) or a group per
 * message (`group`: the alerts of one account and run), as its mode in the rules file
 * says; the dispatcher groups, the sink renders and posts. A sink resolves when the
 * receiver answered 2xx and throws otherwise.
 */
import { DEFAULTS } from '../config/index.ts';
import type { AlertForDelivery, BacklogPolicy } from './outbox.ts';

export type SinkName = 'slack' | 'webhook';

export interface AlertSink {
  name: SinkName;
  /** `each`: one message per alert; `group`: one message per account and run. */
  grouping: 'each' | 'group';
  /**
   * What it does, the first time it is configured, with the alerts raised before
   * (ALERT_BACKLOG; docs/alerts.md, "A sink added later"). The configuration's default is
   * `skip`; a sink built without it (a test, a library caller) sends them, as before.
   */
  backlog?: BacklogPolicy;
  send(alerts: readonly AlertForDelivery[], signal?: AbortSignal): Promise<void>;
  /**
   * Posts one clearly marked test message (`listings-sync alerts test`), signed like the
   * real ones; resolves with the receiver's 2xx status and throws a `SinkError` otherwise.
   * The sinks the configuration builds have it.
   */
  sendTest?(at: Date, signal?: AbortSignal): Promise<number>;
}

/** ALERT_SINK_TIMEOUT_SECONDS's default, 10 s (why: src/config/settings.ts). */
export const DEFAULT_SINK_TIMEOUT_MS = DEFAULTS.alertSinkTimeoutMs;
