/**
 * The retry policy, as data, and the small pure functions that read it. Only reads are
 * retried; the client decides that, this module only answers "is this failure worth
 * another attempt, and after how long".
 */
import { sleep } from '../../sleep.ts';

export interface RetryPolicy {
  /** HTTP statuses worth another attempt. */
  statuses: readonly number[];
  /** Transport error codes (undici and Node) worth another attempt. */
  errorCodes: readonly string[];
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  /** The first backoff ceiling; doubled per attempt. */
  baseDelayMs: number;
  /** The backoff ceiling never grows past this. */
  maxDelayMs: number;
  /**
   * A `Retry-After` longer than this is not waited for: the call gives up at once
   * with PAUSE_TOO_LONG, and so do the credential's later calls within the pause, instead
   * of sleeping for hours inside a nightly run.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  statuses: Object.freeze([429, 500, 502, 503, 504]),
  errorCodes: Object.freeze([
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
    'ECONNRESET',
    'UND_ERR_SOCKET',
    'EPIPE',
    'ECONNREFUSED',
  ]),
  // Five attempts with a 100 ms base and a 5 s cap: at most ~7.5 s of backoff for a read,
  // enough to ride out a restart of the upstream without stalling a run.
  maxAttempts: 5,
  baseDelayMs: 100,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 60_000,
});

export function resolveRetryPolicy(overrides: Partial<RetryPolicy> = {}): Readonly<RetryPolicy> {
  const policy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(
      `retry.maxAttempts must be a positive integer, got ${policy.maxAttempts}.`,
    );
  }
  return Object.freeze(policy);
}

/** Undici's timeout codes; they end as TIMEOUT, other transport codes as UPSTREAM_UNAVAILABLE. */
export const TIMEOUT_ERROR_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

export function isRetryableStatus(policy: RetryPolicy, status: number): boolean {
  return policy.statuses.includes(status);
}

export function isRetryableErrorCode(policy: RetryPolicy, code: string | undefined): boolean {
  return code !== undefined && policy.errorCodes.includes(code);
}

/**
 * Capped exponential backoff with full jitter: a uniform delay in
 * [0, min(maxDelayMs, baseDelayMs · 2^(attempt-1))]. `attempt` is the attempt that failed,
 * from 1. `random` is injectable for tests.
 */
export function backoffDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * `Retry-After` in milliseconds from `now`: delta-seconds or an HTTP date. Undefined when
 * absent or unreadable; never negative.
 */
export function parseRetryAfter(
  value: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * Where the client reads the time and waits: its backoff, its `Retry-After` pauses and its
 * requests-per-second spacing. The wall clock unless a test passes one it moves by hand.
 */
export interface Clock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /** Resolve after `ms`, or reject with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now(), sleep });
