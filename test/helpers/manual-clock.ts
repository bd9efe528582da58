/**
 * A clock for the API client, or the sandbox, that moves only when the test says so:
 * sleeps wait until `advance()` reaches their deadline. The requests themselves still
 * travel over real sockets; only the client's own waits (backoff, Retry-After pauses, rate
 * spacing) or the sandbox's (latency, a dripped body's ticks) are taken off the wall clock.
 * A sleep's start and end are events a test can await (`sleeping`, `idle`): "the sandbox
 * holds the request" without polling.
 */
import type { Clock } from '../../src/api/transport/retry.ts';

interface Sleeper {
  until: number;
  resolve: () => void;
}

export interface ManualClock extends Clock {
  /** Every wait asked for, in milliseconds, in order (zeros included). */
  readonly sleeps: number[];
  /** Sleeps not yet over. */
  pending(): number;
  /** Resolves once at least `count` sleeps are pending (at once, if they already are). */
  sleeping(count?: number): Promise<void>;
  /** Resolves once no sleep is pending: each woke, or its signal aborted it. */
  idle(): Promise<void>;
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
  const watchers: { ready: (pending: number) => boolean; resolve: () => void }[] = [];
  /** Settles the watchers whose condition the number of pending sleeps now meets. */
  const changed = () => {
    for (const watcher of [...watchers]) {
      if (watcher.ready(sleepers.length)) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.resolve();
      }
    }
  };
  const watch = (ready: (pending: number) => boolean) =>
    new Promise<void>((resolve) => {
      watchers.push({ ready, resolve });
      changed();
    });
  const wake = () => {
    for (const sleeper of [...sleepers]) {
      if (sleeper.until <= now) {
        sleepers.splice(sleepers.indexOf(sleeper), 1);
        sleeper.resolve();
      }
    }
    changed();
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
          changed();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        sleepers.push(sleeper);
        changed();
      });
    },
    pending: () => sleepers.length,
    sleeping: (count = 1) => watch((pending) => pending >= count),
    idle: () => watch((pending) => pending === 0),
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
