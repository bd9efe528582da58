/**
 * The one HTTP call every sink makes: a JSON POST bounded by a timeout that covers the
 * whole exchange (connect, headers and body), so a receiver that hangs costs at most
 * `timeoutMs`. Resolves on 2xx; throws a `SinkError` otherwise.
 */
import { request } from 'undici';

export class SinkError extends Error {
  readonly code = 'ALERT_SINK_FAILED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SinkError';
  }
}

/** A receiver's answer is read for the error message only: 200 characters say enough. */
const ERROR_BODY_CHARS = 200;

export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<void> {
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
    throw new SinkError(`HTTP ${status}${text ? `: ${text.replace(/\s+/g, ' ').trim()}` : ''}`);
  }
}
