/**
 * What the client's modules share: the state behind an `ApiClient` handle, one call as an
 * operation describes it, the options a caller adds to it, and the shapes the modules
 * hand each other (a credential's limits, an observed answer, a failed attempt). This
 * file imports none of them, so they import in one direction. The jobs that read this
 * state each have a module: `pools.ts`, `transport.ts` (the request), `limits.ts` (limiters,
 * spacing, the 429 pause), `retry-loop.ts` (attempts), `error-mapping.ts` (an exchange
 * into a value or an ApiError), `redaction.ts` and `stats.ts`.
 */
import type { LimitFunction } from 'p-limit';
import type { Dispatcher } from 'undici';
import type { Credential, ProxySettings } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import type { AnswerBounds } from '../bounds.ts';
import type { EnvelopeOptions } from '../schemas.ts';
import type { ApiError, OperationName } from './errors.ts';
import type { Clock, RetryPolicy } from './retry.ts';
import type { ApiStats } from './stats.ts';

/** A client: pools, limiters and counters. Pass it to the operation functions. */
export interface ApiClient {
  /** Close the connection pools; calls made afterwards fail. */
  close(): Promise<void>;
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * For a read: true when a successful (2xx) body is one whose rows the caller already
   * holds (src/warehouse/write/applied-answers.ts). The call then rejects with
   * `AnswerUnchanged`, the body not parsed; its `parse()` parses it when needed after all.
   */
  unchanged?: (text: string) => boolean | Promise<boolean>;
}

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

export interface ClientState {
  policy: Readonly<RetryPolicy>;
  timeouts: Timeouts;
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

/** One credential's limiter, pause and spacing (limits.ts). */
export interface AccountState {
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

/** The transport's timeouts: to connect, for the headers, for the whole body. */
export interface Timeouts {
  connectMs: number;
  headersMs: number;
  bodyMs: number;
}

/** A failure of one attempt, and whether another attempt may help. */
export interface AttemptFailure {
  error: ApiError;
  /** The reason, as put after "failed: " in the error's message. */
  detail: string;
  retryable: boolean;
  /** Milliseconds the upstream asked us to wait (Retry-After), if it said. */
  retryAfterMs?: number;
}

const clientStates = new WeakMap<ApiClient, ClientState>();

/** A handle for `state`: closing it closes the state's pools. */
export function clientFor(state: ClientState): ApiClient {
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

export function stateOf(client: ApiClient): ClientState {
  const state = clientStates.get(client);
  if (!state) throw new TypeError('Not an API client: create one with createApiClient().');
  return state;
}
