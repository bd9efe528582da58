/**
 * The upstream client: `createApiClient` and the call every operation makes. The jobs
 * under a call each have a module: `pools.ts` (a keep-alive undici pool per origin, or an
 * agent behind the HTTP proxy), `transport.ts` (the request, its total timeout and span),
 * `limits.ts` (requests in flight overall and per credential, the requests-per-second
 * cap, the 429 pause), `retry-loop.ts` and `retry.ts` (attempts, and their policy),
 * `error-mapping.ts` (the envelope and the upstream's message texts into a value or an
 * ApiError), `redaction.ts` (what of an answer an error may quote) and `stats.ts` (the
 * counters). What one answer may bring is `bounds.ts`, handed to each operation's parse.
 *
 * Secrets: `auth_token` and `user_email` are added to the query string only, and nothing
 * the client logs or throws contains a URL with its query or the credential's values.
 */
import pLimit from 'p-limit';
import type { Dispatcher } from 'undici';
import type { Credential, ProxySettings } from '../config/index.ts';
import { type Config, DEFAULTS } from '../config/index.ts';
import { type Logger, silentLogger } from '../log.ts';
import { AnswerUnchanged } from './answer-unchanged.ts';
import { type AnswerBounds, answerBoundsOf, resolveAnswerBounds } from './bounds.ts';
import { idSegment } from './path-segments.ts';
import { ApiError, type OperationName } from './transport/errors.ts';
import { accountFor } from './transport/limits.ts';
import {
  type Clock,
  type RetryPolicy,
  resolveRetryPolicy,
  systemClock,
} from './transport/retry.ts';
import { runWithRetries } from './transport/retry-loop.ts';
import {
  type ApiClient,
  type CallOptions,
  type ClientState,
  clientFor,
  stateOf,
  type UpstreamCall,
} from './transport/state.ts';
import { type ApiStats, countOutcome, emptyStats, snapshotStats } from './transport/stats.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_TIMEOUTS,
  type ResponseObserver,
} from './transport/transport.ts';

export { type ProxySettings, proxyFromEnvironment } from '../config/index.ts';
export { AnswerUnchanged } from './answer-unchanged.ts';
export { idSegment, textSegment } from './path-segments.ts';
export type { ApiClient, CallOptions, HttpMethod, UpstreamCall } from './transport/state.ts';
export type { ApiStats } from './transport/stats.ts';
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ObservedResponse,
  type ResponseObserver,
  templatedPath,
} from './transport/transport.ts';

export interface ApiClientOptions {
  /** Requests in flight overall. Default 16. */
  concurrency?: number;
  /** Requests in flight per credential. Default 8. */
  accountConcurrency?: number;
  /** Optional cap on requests started per second per credential. */
  requestsPerSecond?: number;
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
  /**
   * The largest response body accepted, in bytes; a larger one fails its call with
   * RESPONSE_TOO_LARGE as soon as the limit is crossed (nothing past it is buffered).
   * Default DEFAULT_MAX_BODY_BYTES; the configuration's LISTINGS_MAX_BODY_BYTES.
   */
  maxBodyBytes?: number;
  /**
   * The longest one request may take in all, headers and body, in milliseconds: undici's
   * body timeout only measures silence, so a body dripped a byte a second never trips it.
   * Past it the call fails with TIMEOUT and is not retried (the same answer would drip
   * again). Default DEFAULT_REQUEST_TIMEOUT_MS; LISTINGS_REQUEST_TIMEOUT_SECONDS.
   */
  requestTimeoutMs?: number;
  /** What one answer may bring (src/api/bounds.ts); DEFAULT_ANSWER_BOUNDS by default. */
  bounds?: Partial<AnswerBounds>;
  retry?: Partial<RetryPolicy>;
  logger?: Logger;
  /** The time the limiter and backoff read and wait on; the wall clock by default. */
  clock?: Clock;
  /**
   * Where requests go instead of a pool per origin: `replay` answers from the raw zone
   * (src/raw/replay.ts). Not closed by `close()`.
   */
  dispatcher?: Dispatcher;
  /**
   * An HTTP proxy for upstream requests (docs/deploy.md, "Behind an HTTP proxy"): the
   * standard `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` values. Unset, requests go direct.
   */
  proxy?: ProxySettings;
}

// The settings' defaults (SYNC_CONCURRENCY, SYNC_ACCOUNT_CONCURRENCY; src/config/settings.ts).
const DEFAULT_CONCURRENCY = DEFAULTS.syncConcurrency;
const DEFAULT_ACCOUNT_CONCURRENCY = DEFAULTS.syncAccountConcurrency;

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}.`);
  }
  return value;
}

/** The client a command runs with: the limits from the configuration (docs/configuration.md, "Limits"). */
export function createConfiguredApiClient(config: Config, logger: Logger): ApiClient {
  return createApiClient({
    concurrency: config.syncConcurrency,
    accountConcurrency: config.syncAccountConcurrency,
    requestsPerSecond: config.syncRequestsPerSecond,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    requestTimeoutMs: config.upstreamRequestTimeoutMs,
    bounds: answerBoundsOf(config),
    logger,
    proxy: config.proxy,
  });
}

export function createApiClient(options: ApiClientOptions = {}): ApiClient {
  const concurrency = positiveInteger('concurrency', options.concurrency, DEFAULT_CONCURRENCY);
  if (
    options.requestsPerSecond !== undefined &&
    !(options.requestsPerSecond > 0 && Number.isFinite(options.requestsPerSecond))
  ) {
    throw new RangeError(
      `requestsPerSecond must be a positive number, got ${options.requestsPerSecond}.`,
    );
  }
  const state: ClientState = {
    policy: resolveRetryPolicy(options.retry),
    timeouts: { ...DEFAULT_TIMEOUTS, ...options.timeouts },
    maxBodyBytes: positiveInteger('maxBodyBytes', options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES),
    requestTimeoutMs: positiveInteger(
      'requestTimeoutMs',
      options.requestTimeoutMs,
      DEFAULT_REQUEST_TIMEOUT_MS,
    ),
    bounds: resolveAnswerBounds(options.bounds),
    accountConcurrency: positiveInteger(
      'accountConcurrency',
      options.accountConcurrency,
      DEFAULT_ACCOUNT_CONCURRENCY,
    ),
    requestsPerSecond: options.requestsPerSecond,
    logger: options.logger ?? silentLogger(),
    clock: options.clock ?? systemClock,
    global: pLimit(concurrency),
    pools: new Map(),
    proxy: options.proxy,
    accounts: new Map(),
    stats: emptyStats(),
    closed: false,
    dispatcher: options.dispatcher,
    observers: new Set(),
  };
  return clientFor(state);
}

/**
 * Calls `observer` with every response the client receives from now on (each attempt,
 * error answers included); returns the function that stops it. An observer must not
 * throw: it runs inside the exchange.
 */
export function observeResponses(client: ApiClient, observer: ResponseObserver): () => void {
  const { observers } = stateOf(client);
  observers.add(observer);
  return () => observers.delete(observer);
}

/**
 * What of this client shapes what a sync writes: the answer bounds and the body limit. A
 * run records them (`sync_runs.settings`) so that its replay parses with the same ones.
 */
export interface AnswerSettings {
  bounds: AnswerBounds;
  maxBodyBytes: number;
}

export function answerSettings(client: ApiClient): AnswerSettings {
  const state = stateOf(client);
  return { bounds: { ...state.bounds }, maxBodyBytes: state.maxBodyBytes };
}

/** A snapshot of the client's counters. */
export function apiStats(client: ApiClient): ApiStats {
  return snapshotStats(stateOf(client).stats);
}

/**
 * The upstream's clock for this credential now: its latest response's `Date` header moved
 * on by the time elapsed here since. Undefined before any answer with a readable `Date`.
 * Whether to believe it is the sync's decision (src/sync/observation-clock.ts,
 * docs/running.md, "Which day a sync records").
 */
export function upstreamNow(client: ApiClient, credential: Credential): Date | undefined {
  const seen = accountFor(stateOf(client), credential).upstreamDate;
  return seen ? new Date(seen.upstreamMs + (Date.now() - seen.localMs)) : undefined;
}

/**
 * Run one operation: limits, the HTTP exchange, retries for reads, envelope, parse,
 * counters. Resolves to the parsed value or rejects with an ApiError (or the signal's
 * reason when the caller aborts, or AnswerUnchanged when `options.unchanged` says so).
 */
export async function callUpstream<T>(
  client: ApiClient,
  credential: Credential,
  call: UpstreamCall<T>,
  options: CallOptions = {},
): Promise<T> {
  const state = stateOf(client);
  const { signal } = options;
  let outcome = 'ok';
  try {
    const value = await runWithRetries(state, credential, call, options);
    return value;
  } catch (error) {
    if (error instanceof AnswerUnchanged) {
      // A successful read, only not parsed.
    } else if (error instanceof ApiError) {
      outcome = error.code;
      state.logger.debug(
        { operation: call.operation, credential: credential.name, code: error.code, err: error },
        'upstream call failed',
      );
    } else {
      outcome = signal?.aborted ? 'aborted' : 'error';
    }
    throw error;
  } finally {
    countOutcome(state.stats, call.operation, outcome);
  }
}

/** A read of one business, as the stream descriptors' `fetch` and the commands call it. */
export type BusinessRead<T> = (
  client: ApiClient,
  credential: Credential,
  businessId: number,
  options?: CallOptions,
) => Promise<T>;

/**
 * An operation that reads one business: `GET /businesses/{id}<rest>.json` (with `query`),
 * about `for business {id}` (and `aside`, in parentheses), its answer parsed by `parse`: the
 * shape of every per-business read of docs/upstream.md.
 */
export function businessRead<T>(
  operation: OperationName,
  rest: string,
  parse: UpstreamCall<T>['parse'],
  { query, aside }: { query?: Record<string, string>; aside?: string } = {},
): BusinessRead<T> {
  return (client, credential, businessId, options) =>
    callUpstream(
      client,
      credential,
      {
        operation,
        method: 'GET',
        path: `/businesses/${idSegment('businessId', businessId)}${rest}.json`,
        ...(query && { query }),
        subject: `for business ${businessId}${aside ? ` (${aside})` : ''}`,
        parse,
      },
      options,
    );
}
