/**
 * Where requests go: a keep-alive undici pool per upstream origin, with the connect,
 * headers and body timeouts and the body limit; an agent behind an HTTP proxy
 * (docs/configuration.md, "An HTTP proxy"); or the caller's dispatcher (replay).
 */
import { type Dispatcher, EnvHttpProxyAgent, Pool } from 'undici';
import type { ClientState } from './state.ts';

// Keep idle sockets for a while: a sync fires bursts of requests at one origin.
const KEEP_ALIVE_MS = 10_000;

/** The dispatcher for `origin`, made on first use; `close()` closes those made here. */
export function poolFor(state: ClientState, origin: string): Dispatcher {
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
