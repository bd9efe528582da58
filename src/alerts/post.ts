/**
 * The one HTTP call every sink makes: a JSON POST bounded by a timeout that covers the
 * whole exchange (connect, headers and body), so a receiver that hangs costs at most
 * `timeoutMs`. Resolves with the status on 2xx; throws a `SinkError` otherwise (with the
 * status when the receiver answered).
 */
import { type Dispatcher, EnvHttpProxyAgent, request } from 'undici';
import type { ProxySettings } from '../config/index.ts';
import { ListingsSyncError } from '../errors.ts';

export class SinkError extends ListingsSyncError {
  readonly code = 'ALERT_SINK_FAILED';
  /** The receiver's HTTP status; undefined when it never answered. */
  readonly status: number | undefined;
  constructor(message: string, options?: ErrorOptions & { status?: number }) {
    super(message, options);
    this.status = options?.status;
  }
}

/**
 * The dispatcher deliveries take behind an HTTP proxy (docs/deploy.md, "Behind an HTTP
 * proxy"): an agent for the configured proxy (NO_PROXY hosts go direct); undefined
 * without one (undici's own global agent).
 */
export function deliveryDispatcher(proxy: ProxySettings | undefined): Dispatcher | undefined {
  return proxy ? new EnvHttpProxyAgent({ ...proxy }) : undefined;
}

/** A receiver's answer is read for the error message only: 200 characters say enough. */
const ERROR_BODY_CHARS = 200;

export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: {
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    dispatcher?: Dispatcher | undefined;
  },
): Promise<number> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let status: number;
  let text = '';
  try {
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    status = response.statusCode;
    text = (await response.body.text()).slice(0, ERROR_BODY_CHARS);
  } catch (cause) {
    const stopped = options.signal?.aborted
      ? (options.signal.reason as Error | undefined)
      : undefined;
    const reason = timeout.aborted
      ? `no answer within ${options.timeoutMs / 1000} s (ALERT_SINK_TIMEOUT_SECONDS)`
      : stopped
        ? `no answer before ${stopped.message ?? 'the dispatcher stopped'}`
        : `no answer (${(cause as Error).message})`;
    throw new SinkError(reason, { cause });
  }
  if (status < 200 || status > 299) {
    throw new SinkError(`HTTP ${status}${text ? `: ${text.replace(/\s+/g, ' ').trim()}` : ''}`, {
      status,
    });
  }
  return status;
}
