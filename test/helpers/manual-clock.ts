/**
 * A clock for the API client that moves only when the test says so: sleeps wait until
 * `advance()` reaches their deadline. The requests themselves still travel over real
 * sockets; only the client's own waits (backoff, Retry-After pauses, rate spacing) are
 * taken off the wall clock.
 */
import type { Clock } from '../../src/api/retry.ts';

interface Sleeper {
  until: number;
  resolve: () => void;
}

export interface ManualClock extends Clock {
  /** Every wait asked for, in milliseconds, in order (zeros included). */
  readonly sleeps: number[];
  /** Sleeps not yet over. */
  pending(): number;
  /** Moves the time on, waking every sleep whose deadline it reaches. */
  advance(ms: number): void;
  /** Moves the time to the earliest pending deadline; false when nothing sleeps. */
  advanceToNext(): boolean;
}

/** Starts at a whole second, so HTTP dates (one-second resolution) come out exact. */
export function manualClock(start = Date.parse('2026-01-01T00:00:00Z')): ManualClock {
  let now = start;
  const sleepers: Sleeper[] = [];
  const sleeps: number[] = [];
  const wake = () => {
    for (const sleeper of [...sleepers]) {
      if (sleeper.until <= now) {
        sleepers.splice(sleepers.indexOf(sleeper), 1);
        sleeper.resolve();
      }
    }
  };
  return {
    sleeps,
    now: () => now,
    sleep(ms, signal) {
      sleeps.push(ms);
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (ms <= 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const sleeper: Sleeper = {
          until: now + ms,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          sleepers.splice(sleepers.indexOf(sleeper), 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        sleepers.push(sleeper);
      });
    },
    pending: () => sleepers.length,
    advance(ms) {
      now += ms;
      wake();
    },
    advanceToNext() {
      if (sleepers.length === 0) return false;
      now = Math.min(...sleepers.map((s) => s.until));
      wake();
      return true;
    },
  };
}

/**
 * Settles `promise`, moving the clock to the next deadline whenever the client has
 * nothing else to do than sleep (real I/O gets a turn of the event loop in between).
 */
export async function settleWith<T>(clock: ManualClock, promise: Promise<T>): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => {});
  while (!settled) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!settled && clock.pending() > 0) clock.advanceToNext();
  }
  return watched;
}
