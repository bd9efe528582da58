/**
 * What the client suites against the sandbox share (client-against-sandbox.ts,
 * answer-bounds.test.ts): clients with tiny retry delays, closed together when a suite
 * ends, and the ApiError a call must fail with.
 */
import type { ApiClientOptions } from '../../src/api/client.ts';
import { ApiError, createApiClient } from '../../src/api/index.ts';

/** Tiny delays: the policy's shape is under test, not its wall-clock defaults. */
export const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 10 };

type ApiClient = ReturnType<typeof createApiClient>;

/** `client(options)` makes a client with FAST_RETRY (unless overridden); `closeAll()` closes every one made. */
export function clientPool(): {
  client(options?: ApiClientOptions): ApiClient;
  closeAll(): Promise<void>;
} {
  const clients: ApiClient[] = [];
  return {
    client(options = {}) {
      const api = createApiClient({ ...options, retry: { ...FAST_RETRY, ...options.retry } });
      clients.push(api);
      return api;
    },
    async closeAll() {
      await Promise.all(clients.splice(0).map((c) => c.close()));
    },
  };
}

/** The ApiError `promise` rejects with; a success or any other error fails the test. */
export async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof ApiError)) {
    throw new Error(
      `expected an ApiError, got ${outcome === undefined ? 'success' : String(outcome)}`,
    );
  }
  return outcome;
}
