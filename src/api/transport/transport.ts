/**
 * One HTTP exchange with the upstream, on the dispatcher `pools.ts` holds for its origin
 * (whose connect, headers and body timeouts and body limit apply): a total time per
 * request, the `upstream.request` span, and the observers that see every answer. What an
 * exchange means is `error-mapping.ts`'s job.
 *
 * Secrets: `auth_token` and `user_email` are added here, to the query string only, and
 * nothing this module logs contains a URL with its query or the credential's values.
 */
import { readFileSync } from 'node:fs';
import type { Credential } from '../../config/index.ts';
import { DEFAULTS } from '../../config/index.ts';
import { inSpan } from '../../tracing.ts';
import { accountFor } from './limits.ts';
import { poolFor } from './pools.ts';
import type { ClientState, Timeouts, UpstreamCall } from './state.ts';

export type { ObservedResponse, ResponseObserver } from './state.ts';

// Upstream reads are small JSON documents; 10 s to connect and 30 s to answer are generous
// for a healthy upstream and short enough that a hung socket cannot stall a nightly run.
export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };
/** LISTINGS_MAX_BODY_BYTES's default, 16 MiB (why: src/config/settings.ts). */
export const DEFAULT_MAX_BODY_BYTES = DEFAULTS.upstreamMaxBodyBytes;
/** LISTINGS_REQUEST_TIMEOUT_SECONDS's default, two minutes (why: src/config/settings.ts). */
export const DEFAULT_REQUEST_TIMEOUT_MS = DEFAULTS.upstreamRequestTimeoutMs;

const USER_AGENT = `listings-sync/${readPackageVersion()} (+https://github.com/listings-sync)`;

function readPackageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** One HTTP exchange: a response with its body text, or a transport error. */
export type Exchange = { startedAt: number } & (
  | { kind: 'response'; status: number; retryAfter: string | string[] | undefined; text: string }
  | { kind: 'transport'; error: unknown }
);

/** undici's code for a body over `maxResponseSize`. */
export const BODY_TOO_LARGE = 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
/** The code of the error an exchange fails with past requestTimeoutMs. */
export const TOTAL_TIMEOUT = 'LISTINGS_REQUEST_TIMEOUT';

function totalTimeoutError(ms: number): Error {
  return Object.assign(new Error(`the request took longer than ${ms} ms in all`), {
    code: TOTAL_TIMEOUT,
  });
}

/** The `code` of a Node or undici error, when it has one. */
export function errorCodeOf(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

/**
 * The path of a call with its ids as `{id}` (a span's `url.template`): never a query, and
 * no business, review or request id, so spans group by route.
 */
export function templatedPath(path: string): string {
  return path
    .split('/')
    .map((segment, i, all) =>
      i > 0 && /^(businesses|reviews|keywords|requests|responses|countries)$/.test(all[i - 1] ?? '')
        ? segment.replace(/^[^.]+/, '{id}')
        : segment,
    )
    .join('/');
}

/** One attempt of a call in its `upstream.request` span; `waitedMs` is the backoff before it. */
export function sendAttempt(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  attempt: number,
  waitedMs: number,
  signal: AbortSignal | undefined,
): Promise<Exchange> {
  const attributes = {
    'listings.operation': call.operation,
    'listings.credential': credential.name,
    'http.request.method': call.method,
    'url.template': templatedPath(call.path),
    'listings.attempt': attempt,
    'listings.retry_wait_ms': waitedMs,
  };
  return inSpan('upstream.request', attributes, async (span) => {
    const exchange = await exchangeOnce(state, credential, call, attempt, signal);
    if (exchange.kind === 'response') {
      span.setAttribute('http.response.status_code', exchange.status);
    } else {
      span.setAttribute('error.type', errorCodeOf(exchange.error) ?? 'error');
    }
    return exchange;
  });
}

async function exchangeOnce(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  attempt: number,
  signal: AbortSignal | undefined,
): Promise<Exchange> {
  signal?.throwIfAborted();
  const base = new URL(credential.baseUrl);
  const pathPrefix = base.pathname.replace(/\/+$/, '');
  const query = new URLSearchParams({
    ...call.query,
    auth_token: credential.authToken,
    user_email: credential.userEmail,
  });
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    accept: 'application/json',
  };
  let body: string | undefined;
  if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers['content-type'] = 'application/json';
  }
  const pool = poolFor(state, base.origin);
  const started = performance.now();
  const startedAt = state.clock.now();
  state.stats.requests += 1;
  // The whole exchange, body included, within requestTimeoutMs of the real clock (undici's
  // own timeouts are on it too); aborting the request's signal also ends its body.
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(totalTimeoutError(state.requestTimeoutMs)),
    state.requestTimeoutMs,
  );
  const logged = { operation: call.operation, credential: credential.name, method: call.method };
  try {
    const response = await pool.request({
      // A pool knows its origin; an agent (the proxy's, or replay's) is told it.
      origin: base.origin,
      method: call.method,
      path: `${pathPrefix}/api/v2${call.path}?${query.toString()}`,
      headers,
      body: body ?? null,
      signal: signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal,
    });
    const text = await response.body.text();
    // The answer's own Date first: an observer stamping the read (the raw zone) reads it.
    const date = response.headers['date'];
    const upstreamMs = typeof date === 'string' ? Date.parse(date) : Number.NaN;
    if (Number.isFinite(upstreamMs)) {
      accountFor(state, credential).upstreamDate = { upstreamMs, localMs: Date.now() };
    }
    const status = response.statusCode;
    for (const observe of state.observers) {
      const { operation, method, path } = call;
      observe({
        credential,
        operation,
        method,
        path,
        query: call.query ?? {},
        attempt,
        status,
        text,
      });
    }
    const durationMs = Math.round(performance.now() - started);
    state.logger.debug(
      { ...logged, path: call.path, status, attempt, durationMs },
      'upstream response',
    );
    return {
      startedAt,
      kind: 'response',
      status,
      retryAfter: response.headers['retry-after'],
      text,
    };
  } catch (error) {
    const durationMs = Math.round(performance.now() - started);
    state.logger.debug(
      { ...logged, path: call.path, attempt, errorCode: errorCodeOf(error), durationMs },
      'upstream request failed',
    );
    const timedOut = deadline.signal.aborted && !signal?.aborted;
    return { startedAt, kind: 'transport', error: timedOut ? deadline.signal.reason : error };
  } finally {
    clearTimeout(timer);
  }
}
