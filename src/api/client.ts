/**
 * The transport under every operation: a keep-alive undici pool per upstream origin, the
 * limits (requests in flight overall and per credential, an optional requests-per-second
 * cap, a credential-wide pause after a 429, a total time per request), retries of reads by
 * the policy in `retry.ts`, the envelope and error mapping, the bounds on what one answer
 * may bring (`bounds.ts`, handed to each operation's parse), and the counters.
 *
 * Secrets: `auth_token` and `user_email` are added here, to the query string only, and
 * nothing this module logs or throws contains a URL with its query or the credential's
 * values; snippets of upstream bodies are scrubbed and cut short.
 */
import { readFileSync } from 'node:fs';
import pLimit, { type LimitFunction } from 'p-limit';
import { type Dispatcher, EnvHttpProxyAgent, Pool } from 'undici';
import { ZodError } from 'zod';
import { type Config, DEFAULTS } from '../config/index.ts';
import { type Logger, REDACTED, redactText, silentLogger } from '../log.ts';
import { inSpan } from '../tracing.ts';
import { type AnswerBounds, AnswerOverBound, resolveAnswerBounds } from './bounds.ts';
import {
  ApiError,
  type ApiErrorCode,
  codeForMessage,
  isPermanentMessageCode,
  type OperationName,
} from './errors.ts';
import {
  backoffDelayMs,
  type Clock,
  isRetryableErrorCode,
  isRetryableStatus,
  parseRetryAfter,
  type RetryPolicy,
  resolveRetryPolicy,
  systemClock,
  TIMEOUT_ERROR_CODES,
} from './retry.ts';
import { describeIssues, type EnvelopeOptions, readEnvelope } from './schemas.ts';
import type { Credential, RejectedRecord } from './types.ts';

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

/** The standard proxy variables, as curl and undici read them. */
export interface ProxySettings {
  httpProxy?: string | undefined;
  httpsProxy?: string | undefined;
  noProxy?: string | undefined;
}

/**
 * The proxy settings in an environment: the lowercase variable wins over the uppercase
 * one, as curl reads them. Undefined when neither proxy variable is set.
 */
export function proxyFromEnvironment(env: NodeJS.ProcessEnv): ProxySettings | undefined {
  const read = (name: string) => env[name.toLowerCase()] || env[name] || undefined;
  const settings = {
    httpProxy: read('HTTP_PROXY'),
    httpsProxy: read('HTTPS_PROXY'),
    noProxy: read('NO_PROXY'),
  };
  return settings.httpProxy || settings.httpsProxy ? settings : undefined;
}

/**
 * One upstream answer as received, for the raw zone (src/raw/capture.ts): the operation,
 * its path and query under /api/v2 (never `auth_token` or `user_email`, which are added
 * after), the attempt, the HTTP status and the body text.
 */
export interface ObservedResponse {
  credential: Credential;
  operation: OperationName;
  method: string;
  path: string;
  query: Readonly<Record<string, string>>;
  attempt: number;
  status: number;
  text: string;
}

export type ResponseObserver = (response: ObservedResponse) => void;

/** A client: pools, limiters and counters. Pass it to the operation functions. */
export interface ApiClient {
  /** Close the connection pools; calls made afterwards fail. */
  close(): Promise<void>;
}

export interface ApiStats {
  /** HTTP requests sent, retries included. */
  requests: number;
  /** Attempts repeated after a retryable failure. */
  retries: number;
  /** operation → outcome (`ok`, an error code, or `aborted`) → calls. */
  byOperation: Record<string, Record<string, number>>;
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * For a read: true when a successful (2xx) body is one whose rows the caller already
   * holds (src/warehouse/business-answers.ts). The call then rejects with
   * `AnswerUnchanged`, the body not parsed; its `parse()` parses it when needed after all.
   */
  unchanged?: (text: string) => boolean | Promise<boolean>;
}

/**
 * Not a failure: the read answered a body the caller holds the rows of (`unchanged`), so
 * it was not parsed. `parse()` reads it as the call would have (and throws as it would).
 */
export class AnswerUnchanged<T = unknown> {
  readonly parse: () => T;
  constructor(parse: () => T) {
    this.parse = parse;
  }
}

// The settings' defaults (SYNC_CONCURRENCY, SYNC_ACCOUNT_CONCURRENCY; src/config/settings.ts).
const DEFAULT_CONCURRENCY = DEFAULTS.syncConcurrency;
const DEFAULT_ACCOUNT_CONCURRENCY = DEFAULTS.syncAccountConcurrency;
// Upstream reads are small JSON documents; 10 s to connect and 30 s to answer are generous
// for a healthy upstream and short enough that a hung socket cannot stall a nightly run.
const DEFAULT_TIMEOUTS = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };
/** LISTINGS_MAX_BODY_BYTES's default, 16 MiB (why: src/config/settings.ts). */
export const DEFAULT_MAX_BODY_BYTES = DEFAULTS.upstreamMaxBodyBytes;
/** LISTINGS_REQUEST_TIMEOUT_SECONDS's default, two minutes (why: src/config/settings.ts). */
export const DEFAULT_REQUEST_TIMEOUT_MS = DEFAULTS.upstreamRequestTimeoutMs;
// Keep idle sockets for a while: a sync fires bursts of requests at one origin.
const KEEP_ALIVE_MS = 10_000;
/** Upstream body text quoted in errors is cut to this length. */
const SNIPPET_CHARS = 200;

const USER_AGENT = `listings-sync/${readPackageVersion()} (+https://github.com/listings-sync)`;

function readPackageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

interface AccountState {
  limit: LimitFunction;
  /** No request of this credential starts before this time (after a 429). */
  blockedUntil: number;
  /** The earliest start of the next request under the requests-per-second cap. */
  nextSlotAt: number;
  /**
   * Spacing learned from 429s (additive-increase, multiplicative-decrease, in reverse):
   * doubled by each 429, shrunk by each success, so that after a pause the queued calls
   * of a rate-limited credential trickle out instead of colliding again all at once.
   */
  learnedSpacingMs: number;
  /** When the last 429 was taken into account; 429s of requests sent before it are not. */
  lastRateLimitAt: number;
  /** The upstream's clock at its latest answer (its `Date` header), and ours then. */
  upstreamDate?: { upstreamMs: number; localMs: number };
}

// A 429 starts the learned spacing at 50 ms (20 requests/s) and doubles it up to 2 s;
// each success takes 10 % off, and under 5 ms it is dropped.
const SPACING_START_MS = 50;
const SPACING_MAX_MS = 2_000;
const SPACING_DECAY = 0.9;
const SPACING_FLOOR_MS = 5;

interface ClientState {
  policy: Readonly<RetryPolicy>;
  timeouts: typeof DEFAULT_TIMEOUTS;
  maxBodyBytes: number;
  requestTimeoutMs: number;
  bounds: Readonly<AnswerBounds>;
  accountConcurrency: number;
  requestsPerSecond: number | undefined;
  logger: Logger;
  clock: Clock;
  global: LimitFunction;
  pools: Map<string, Dispatcher>;
  proxy: ProxySettings | undefined;
  accounts: Map<string, AccountState>;
  stats: ApiStats;
  closed: boolean;
  dispatcher: Dispatcher | undefined;
  observers: Set<ResponseObserver>;
}

const clientStates = new WeakMap<ApiClient, ClientState>();

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
    bounds: {
      keywordsPerBusiness: config.upstreamMaxKeywordsPerBusiness,
      sitesPerKeyword: config.upstreamMaxSitesPerKeyword,
      rankSeriesPerBusiness: config.upstreamMaxRankSeriesPerBusiness,
      reviewsPerAnswer: config.upstreamMaxReviewsPerAnswer,
      listingsPerAnswer: config.upstreamMaxListingsPerAnswer,
    },
    logger,
    proxy: proxyFromEnvironment(process.env),
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
    stats: { requests: 0, retries: 0, byOperation: {} },
    closed: false,
    dispatcher: options.dispatcher,
    observers: new Set(),
  };
  const client: ApiClient = {
    async close() {
      state.closed = true;
      const pools = [...state.pools.values()];
      state.pools.clear();
      await Promise.all(pools.map((pool) => pool.close()));
    },
  };
  clientStates.set(client, state);
  return client;
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
  const { stats } = stateOf(client);
  const byOperation: ApiStats['byOperation'] = {};
  for (const [operation, outcomes] of Object.entries(stats.byOperation)) {
    byOperation[operation] = { ...outcomes };
  }
  return { requests: stats.requests, retries: stats.retries, byOperation };
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

function stateOf(client: ApiClient): ClientState {
  const state = clientStates.get(client);
  if (!state) throw new TypeError('Not an API client: create one with createApiClient().');
  return state;
}

function poolFor(state: ClientState, origin: string): Dispatcher {
  if (state.dispatcher) return state.dispatcher;
  let pool = state.pools.get(origin);
  if (!pool) {
    const options = {
      connections: state.global.concurrency,
      keepAliveTimeout: KEEP_ALIVE_MS,
      connectTimeout: state.timeouts.connectMs,
      headersTimeout: state.timeouts.headersMs,
      bodyTimeout: state.timeouts.bodyMs,
      // undici counts the bytes as they arrive and fails the request past the limit
      // (UND_ERR_RES_EXCEEDED_MAX_SIZE), so a huge body never reaches the heap.
      maxResponseSize: state.maxBodyBytes,
    };
    // Behind a proxy the same limits apply to each tunnelled connection; NO_PROXY hosts
    // go direct through the agent's own pool.
    pool = state.proxy
      ? new EnvHttpProxyAgent({ ...options, ...state.proxy })
      : new Pool(origin, options);
    state.pools.set(origin, pool);
  }
  return pool;
}

function accountFor(state: ClientState, credential: Credential): AccountState {
  const key = `${credential.name}\u0000${credential.baseUrl}`;
  let account = state.accounts.get(key);
  if (!account) {
    account = {
      limit: pLimit(state.accountConcurrency),
      blockedUntil: 0,
      nextSlotAt: 0,
      learnedSpacingMs: 0,
      lastRateLimitAt: 0,
    };
    state.accounts.set(key, account);
  }
  return account;
}

// ---------------------------------------------------------------------------------------
// One call

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What an operation asks of the transport. */
export interface UpstreamCall<T> {
  operation: OperationName;
  method: HttpMethod;
  /** Under `/api/v2`, e.g. `/businesses/42/listings.json`; segments already encoded. */
  path: string;
  query?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** What the call is about, for messages: `for business 42`. */
  subject?: string;
  envelope?: EnvelopeOptions;
  /**
   * Turn the envelope's result into the domain value. A thrown ZodError (or any error)
   * becomes BAD_PAYLOAD, an AnswerOverBound TOO_MANY_RECORDS; an ApiError passes through.
   */
  parse: (result: unknown, body: unknown, bounds: Readonly<AnswerBounds>) => T;
}

/** One HTTP exchange: a response with its body text, or a transport error. */
type Exchange = { startedAt: number } & (
  | { kind: 'response'; status: number; retryAfter: string | string[] | undefined; text: string }
  | { kind: 'transport'; error: unknown }
);

/** A failure of one attempt, and whether another attempt may help. */
interface AttemptFailure {
  error: ApiError;
  /** The reason, as put after "failed: " in the error's message. */
  detail: string;
  retryable: boolean;
  /** Milliseconds the upstream asked us to wait (Retry-After), if it said. */
  retryAfterMs?: number;
}

/**
 * Run one operation: limits, the HTTP exchange, retries for reads, envelope, parse,
 * counters. Resolves to the parsed value or rejects with an ApiError (or the signal's
 * reason when the caller aborts).
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
    const outcomes = state.stats.byOperation[call.operation] ?? {};
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    state.stats.byOperation[call.operation] = outcomes;
  }
}

async function runWithRetries<T>(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<T>,
  options: CallOptions,
): Promise<T> {
  const { signal, unchanged } = options;
  if (state.closed) {
    throw new Error(`The API client is closed; ${call.operation} was not sent.`);
  }
  const account = accountFor(state, credential);
  // Writes are never retried: the upstream has no idempotency keys, a repeat could
  // create a second business or submit a second review response.
  const maxAttempts = call.method === 'GET' ? state.policy.maxAttempts : 1;
  // The backoff waited before this attempt, for its span.
  let waitedMs = 0;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    const exchange = await account.limit(async () => {
      await waitForTurn(state, account, credential, call, signal);
      return state.global(() =>
        inSpan(
          'upstream.request',
          {
            'listings.operation': call.operation,
            'listings.credential': credential.name,
            'http.request.method': call.method,
            'url.template': templatedPath(call.path),
            'listings.attempt': attempt,
            'listings.retry_wait_ms': waitedMs,
          },
          async (span) => {
            const exchange = await exchangeOnce(state, credential, call, attempt, signal);
            if (exchange.kind === 'response') {
              span.setAttribute('http.response.status_code', exchange.status);
            } else {
              span.setAttribute('error.type', errorCodeOf(exchange.error) ?? 'error');
            }
            return exchange;
          },
        ),
      );
    });
    if (
      unchanged &&
      call.method === 'GET' &&
      exchange.kind === 'response' &&
      exchange.status >= 200 &&
      exchange.status < 300 &&
      (await unchanged(exchange.text))
    ) {
      relaxSpacing(account);
      throw new AnswerUnchanged(() => {
        const late = interpret(state, credential, call, exchange, signal);
        if (late.kind === 'value') return late.value;
        throw late.failure.error;
      });
    }
    const result = interpret(state, credential, call, exchange, signal);
    if (result.kind === 'value') {
      relaxSpacing(account);
      return result.value;
    }
    const failure = result.failure;
    if (failure.error.code === 'RATE_LIMITED') {
      // Pause the whole credential: its other calls would only collect more 429s.
      const pause = failure.retryAfterMs ?? backoffDelayMs(state.policy, attempt);
      account.blockedUntil = Math.max(account.blockedUntil, state.clock.now() + pause);
      // Requests already in flight when the last 429 came tell nothing new about the rate.
      if (exchange.startedAt >= account.lastRateLimitAt) {
        account.lastRateLimitAt = state.clock.now();
        account.learnedSpacingMs = Math.min(
          SPACING_MAX_MS,
          Math.max(SPACING_START_MS, account.learnedSpacingMs * 2),
        );
      }
    }
    if (
      failure.retryable &&
      failure.retryAfterMs !== undefined &&
      failure.retryAfterMs > state.policy.maxRetryAfterMs
    ) {
      // Longer than a run waits: fail now, on any attempt, with a code the sync can end
      // the credential's remaining work on (its later calls fail in waitForTurn).
      const asked = Math.ceil(failure.retryAfterMs / 1000);
      const allowed = Math.ceil(state.policy.maxRetryAfterMs / 1000);
      throw new ApiError({
        code: 'PAUSE_TOO_LONG',
        operation: call.operation,
        credentialName: credential.name,
        subject: call.subject,
        detail: `${failure.detail}; the upstream asked this credential to pause for ${asked} s (Retry-After), longer than the ${allowed} s a run waits, so the call gives up`,
        ...(failure.error.status !== undefined && { status: failure.error.status }),
        ...(failure.error.upstreamMessage !== undefined && {
          upstreamMessage: failure.error.upstreamMessage,
        }),
      });
    }
    if (!failure.retryable || attempt >= maxAttempts) throw failure.error;
    const delay = failure.retryAfterMs ?? backoffDelayMs(state.policy, attempt);
    state.stats.retries += 1;
    state.logger.warn(
      {
        operation: call.operation,
        credential: credential.name,
        attempt,
        delayMs: delay,
        code: failure.error.code,
        status: failure.error.status,
      },
      'retrying upstream read',
    );
    await state.clock.sleep(delay, signal);
    waitedMs = delay;
  }
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

function relaxSpacing(account: AccountState): void {
  if (account.learnedSpacingMs === 0) return;
  account.learnedSpacingMs *= SPACING_DECAY;
  if (account.learnedSpacingMs < SPACING_FLOOR_MS) account.learnedSpacingMs = 0;
}

/** Wait out a credential-wide 429 pause and the requests-per-second cap. */
async function waitForTurn(
  state: ClientState,
  account: AccountState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    const blockedFor = account.blockedUntil - state.clock.now();
    if (blockedFor > state.policy.maxRetryAfterMs) {
      throw new ApiError({
        code: 'PAUSE_TOO_LONG',
        operation: call.operation,
        credentialName: credential.name,
        subject: call.subject,
        detail: `the upstream paused this credential (Retry-After) for another ${Math.ceil(blockedFor / 1000)} s, longer than the ${Math.ceil(state.policy.maxRetryAfterMs / 1000)} s a run waits, so the call was not sent`,
      });
    }
    if (blockedFor > 0) {
      await state.clock.sleep(blockedFor, signal);
      continue;
    }
    const spacing = Math.max(
      state.requestsPerSecond === undefined ? 0 : 1000 / state.requestsPerSecond,
      account.learnedSpacingMs,
    );
    if (spacing === 0) return;
    const now = state.clock.now();
    const slot = Math.max(now, account.nextSlotAt);
    account.nextSlotAt = slot + spacing;
    await state.clock.sleep(slot - now, signal);
    // A 429 may have landed while we waited for the slot.
    if (account.blockedUntil <= state.clock.now()) return;
  }
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
    for (const observe of state.observers) {
      observe({
        credential,
        operation: call.operation,
        method: call.method,
        path: call.path,
        query: call.query ?? {},
        attempt,
        status: response.statusCode,
        text,
      });
    }
    state.logger.debug(
      {
        operation: call.operation,
        credential: credential.name,
        method: call.method,
        path: call.path,
        status: response.statusCode,
        attempt,
        durationMs: Math.round(performance.now() - started),
      },
      'upstream response',
    );
    return {
      startedAt,
      kind: 'response',
      status: response.statusCode,
      retryAfter: response.headers['retry-after'],
      text,
    };
  } catch (error) {
    state.logger.debug(
      {
        operation: call.operation,
        credential: credential.name,
        method: call.method,
        path: call.path,
        attempt,
        errorCode: errorCodeOf(error),
        durationMs: Math.round(performance.now() - started),
      },
      'upstream request failed',
    );
    const timedOut = deadline.signal.aborted && !signal?.aborted;
    return { startedAt, kind: 'transport', error: timedOut ? deadline.signal.reason : error };
  } finally {
    clearTimeout(timer);
  }
}

/** The code of the error an exchange fails with past requestTimeoutMs. */
const TOTAL_TIMEOUT = 'LISTINGS_REQUEST_TIMEOUT';

function totalTimeoutError(ms: number): Error {
  return Object.assign(new Error(`the request took longer than ${ms} ms in all`), {
    code: TOTAL_TIMEOUT,
  });
}

function errorCodeOf(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

type Interpretation<T> = { kind: 'value'; value: T } | { kind: 'failure'; failure: AttemptFailure };

interface FailureExtras {
  status?: number;
  upstreamMessage?: string;
  messages?: string[];
  cause?: unknown;
  retryAfterMs?: number;
  rejected?: RejectedRecord[];
}

function interpret<T>(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<T>,
  exchange: Exchange,
  signal: AbortSignal | undefined,
): Interpretation<T> {
  const fail = (
    code: ApiErrorCode,
    rawDetail: string,
    retryable: boolean,
    { retryAfterMs, ...extras }: FailureExtras = {},
  ): Interpretation<T> => {
    const detail = scrub(rawDetail, credential);
    const error = new ApiError({
      code,
      operation: call.operation,
      credentialName: credential.name,
      subject: call.subject,
      detail,
      ...extras,
    });
    return {
      kind: 'failure',
      failure: { error, detail, retryable, ...(retryAfterMs !== undefined && { retryAfterMs }) },
    };
  };

  if (exchange.kind === 'transport') {
    if (signal?.aborted) throw signal.reason;
    const errorCode = errorCodeOf(exchange.error);
    if (errorCode === BODY_TOO_LARGE) {
      // Permanent: the same read would bring the same body again.
      return fail(
        'RESPONSE_TOO_LARGE',
        `the response body is larger than ${state.maxBodyBytes} bytes, the limit set by ` +
          'LISTINGS_MAX_BODY_BYTES; raise it if such a body is expected',
        false,
        { cause: scrubbedCause(exchange.error, credential) },
      );
    }
    if (errorCode === TOTAL_TIMEOUT) {
      // Not retried: an answer that drips past the limit would drip again, and each
      // attempt would hold the run that much longer.
      return fail(
        'TIMEOUT',
        `the request took longer than ${state.requestTimeoutMs / 1000} s in all (headers and ` +
          'body), the limit set by LISTINGS_REQUEST_TIMEOUT_SECONDS; it was not retried',
        false,
        { cause: scrubbedCause(exchange.error, credential) },
      );
    }
    const timeout = errorCode !== undefined && TIMEOUT_ERROR_CODES.has(errorCode);
    return fail(
      timeout ? 'TIMEOUT' : 'UPSTREAM_UNAVAILABLE',
      transportDescription(exchange.error, errorCode, state),
      isRetryableErrorCode(state.policy, errorCode),
      { cause: scrubbedCause(exchange.error, credential) },
    );
  }

  const { status, text } = exchange;
  const retryAfterMs = parseRetryAfter(exchange.retryAfter, state.clock.now());
  const statusRetryable = isRetryableStatus(state.policy, status);
  const byStatus = (detail: string, upstreamMessage?: string) =>
    fail(codeForStatus(status), detail, statusRetryable, {
      status,
      ...(upstreamMessage !== undefined && { upstreamMessage }),
      ...(retryAfterMs !== undefined && { retryAfterMs }),
    });

  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    const quoted = `HTTP ${status} with a body that is not JSON: "${snippet(text, credential)}"`;
    if (status >= 400 || statusRetryable) return byStatus(quoted);
    return fail('BAD_PAYLOAD', quoted, false, { status, cause: error });
  }

  const envelope = readEnvelope(body, call.envelope);
  if (envelope.kind === 'failure') {
    // The text is the contract: a known message wins over the HTTP status, and
    // `success: false` is a failure even with HTTP 200.
    const upstreamMessage = scrub(envelope.message, credential);
    const known = codeForMessage(envelope.message);
    if (known && isPermanentMessageCode(known.code)) {
      return fail(known.code, upstreamMessage, false, {
        status,
        upstreamMessage,
        ...(known.messages && { messages: known.messages.map((m) => scrub(m, credential)) }),
      });
    }
    if (status >= 400) return byStatus(upstreamMessage, upstreamMessage);
    return fail('UPSTREAM_ERROR', upstreamMessage, false, { status, upstreamMessage });
  }
  if (status < 200 || status >= 300) {
    return byStatus(`HTTP ${status}: "${snippet(text, credential)}"`);
  }
  if (envelope.kind === 'malformed') {
    return fail(
      'BAD_PAYLOAD',
      `the response was not the expected envelope (${envelope.reason}): "${snippet(text, credential)}"`,
      false,
      { status },
    );
  }
  try {
    return { kind: 'value', value: call.parse(envelope.result, envelope.body, state.bounds) };
  } catch (error) {
    if (error instanceof AnswerOverBound) {
      return fail('TOO_MANY_RECORDS', error.message, false, {
        status,
        rejected: [error.summary],
      });
    }
    if (error instanceof ApiError) {
      return { kind: 'failure', failure: { error, detail: error.message, retryable: false } };
    }
    const reason = error instanceof ZodError ? describeIssues(error) : String(error);
    return fail(
      'BAD_PAYLOAD',
      `the response did not match the expected shape (${reason}): "${snippet(text, credential)}"`,
      false,
      { status, cause: error },
    );
  }
}

/** undici's code for a body over `maxResponseSize`. */
const BODY_TOO_LARGE = 'UND_ERR_RES_EXCEEDED_MAX_SIZE';

/** The code for a failing status when the body names no known error. */
function codeForStatus(status: number): ApiErrorCode {
  if (status === 429) return 'RATE_LIMITED';
  if (status >= 500) return 'UPSTREAM_UNAVAILABLE';
  if (status === 401 || status === 403) return 'AUTH_FAILURE';
  return 'UPSTREAM_ERROR';
}

function transportDescription(
  error: unknown,
  errorCode: string | undefined,
  state: ClientState,
): string {
  switch (errorCode) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `no connection within ${state.timeouts.connectMs} ms (${errorCode})`;
    case 'UND_ERR_HEADERS_TIMEOUT':
      return `no response headers within ${state.timeouts.headersMs} ms (${errorCode})`;
    case 'UND_ERR_BODY_TIMEOUT':
      return `the response body stalled for ${state.timeouts.bodyMs} ms (${errorCode})`;
    default: {
      const message = error instanceof Error ? error.message : String(error);
      return `${message}${errorCode ? ` (${errorCode})` : ''}`;
    }
  }
}

/** Remove the credential's own values and anything secret-shaped from a text. */
function scrub(text: string, credential: Credential): string {
  let out = text;
  for (const secret of [credential.authToken, credential.userEmail]) {
    if (secret) out = out.split(secret).join(REDACTED);
    const encoded = encodeURIComponent(secret);
    if (encoded && encoded !== secret) out = out.split(encoded).join(REDACTED);
  }
  return redactText(out);
}

/** At most SNIPPET_CHARS of a body, on one line, scrubbed. */
function snippet(text: string, credential: Credential): string {
  const oneLine = scrub(text, credential).replace(/\s+/g, ' ').trim();
  return oneLine.length > SNIPPET_CHARS ? `${oneLine.slice(0, SNIPPET_CHARS - 1)}…` : oneLine;
}

/** A transport error as a cause: its message scrubbed, its code kept. */
function scrubbedCause(error: unknown, credential: Credential): unknown {
  if (!(error instanceof Error)) return error;
  const copy = new Error(scrub(error.message, credential));
  copy.name = error.name;
  const code = errorCodeOf(error);
  if (code) Object.assign(copy, { code });
  return copy;
}

// ---------------------------------------------------------------------------------------
// Helpers shared by the operation files

/** A path segment from a numeric id; rejects anything that is not a positive integer. */
export function idSegment(name: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, got ${String(value)}.`);
  }
  return String(value);
}

/** A path segment from a text id (uuid, request id), encoded. */
export function textSegment(name: string, value: string | number): string {
  const text = String(value).trim();
  if (text === '') throw new RangeError(`${name} must not be empty.`);
  return encodeURIComponent(text);
}
