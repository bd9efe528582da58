/**
 * What the client's modules share: the state behind an `ApiClient` handle, one call as an
 * operation describes it, and the options a caller adds to it. The jobs that read this
 * state each have a module: `pools.ts`, `transport.ts` (the request), `limits.ts` (limiters,
 * spacing, the 429 pause), `retry-loop.ts` (attempts), `error-mapping.ts` (an exchange
 * into a value or an ApiError), `redaction.ts` and `stats.ts`.
 */
import type { LimitFunction } from 'p-limit';
import type { Dispatcher } from 'undici';
import type { ProxySettings } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import type { AnswerBounds } from '../bounds.ts';
import type { EnvelopeOptions } from '../schemas.ts';
import type { OperationName } from './errors.ts';
import type { AccountState } from './limits.ts';
import type { Clock, RetryPolicy } from './retry.ts';
import type { ApiStats } from './stats.ts';
import type { ResponseObserver, Timeouts } from './transport.ts';

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
