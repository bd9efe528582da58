/**
 * What a run has in flight, and how it shows it is alive when nothing completes: every
 * `everyMs` a `still working` log line (businesses done of total, upstream requests in
 * flight, how long the oldest has waited), so a run held by one slow answer says so
 * rather than going quiet (docs/configuration.md, "Limits").
 */
import type { Logger } from '../log.ts';
import type { SyncProgress } from './progress.ts';

/** The time and the repeating timer the `still working` line runs on; injectable for tests. */
export interface Ticker {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called. */
  every(ms: number, tick: () => void): () => void;
}

export const systemTicker: Ticker = {
  now: () => performance.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

/** Seconds between `still working` lines: a stall shows within a minute, a healthy run is not flooded. */
export const STILL_WORKING_EVERY_MS = 30_000;

/** Upstream requests of a run in flight, by start time. */
export class InFlight {
  readonly #started = new Set<{ at: number }>();
  readonly #ticker: Ticker;
  constructor(ticker: Ticker) {
    this.#ticker = ticker;
  }

  /** Counts `promise` in flight until it settles. */
  track<T>(promise: Promise<T>): Promise<T> {
    const entry = { at: this.#ticker.now() };
    this.#started.add(entry);
    return promise.finally(() => this.#started.delete(entry));
  }

  get count(): number {
    return this.#started.size;
  }

  /** Seconds the oldest request in flight has waited; 0 when none is. */
  oldestSeconds(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const { at } of this.#started) oldest = Math.min(oldest, at);
    return Number.isFinite(oldest) ? Math.round((this.#ticker.now() - oldest) / 1000) : 0;
  }
}

/** Starts the `still working` line; returns its stop. */
export function startStillWorking(
  ticker: Ticker,
  everyMs: number,
  inFlight: InFlight,
  progress: SyncProgress,
  log: Logger,
): () => void {
  return ticker.every(everyMs, () => {
    const requests = inFlight.count;
    const oldestSeconds = inFlight.oldestSeconds();
    log.info(
      {
        businessesDone: progress.businessesDone,
        businessesTotal: progress.businessesTotal,
        requestsInFlight: requests,
        oldestRequestSeconds: oldestSeconds,
      },
      `still working: ${progress.businessesDone} of ${progress.businessesTotal} businesses done, ` +
        `${requests} requests in flight, oldest for ${oldestSeconds} s`,
    );
  });
}
