/**
 * What the sandbox's routes share while it runs (src/sandbox/server.ts): the world, the
 * fault settings, the body cache, the clock and the counts, in one object the routes read
 * and write, so that `stats/reset` and `RunningSandbox.resetStats` replace the same stats.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../log.ts';
import type { BodyCache } from './body-cache.ts';
import type { FaultState } from './faults.ts';
import { today, type World } from './world.ts';

/**
 * The sandbox's time: added latency, a dripped body's ticks and the pauses between webhook
 * delivery attempts wait on `sleep`; the rate limit's buckets, the time of day in each
 * answer's `Date` and a webhook event's time read `now`. A test gives a clock it moves by
 * hand, so that it can hold a request and release it by moving the time, and assert the
 * order of what happens rather than how long it took (docs/development.md, "The test
 * suite"). The same shape as the API client's clock, but the sandbox's own: the sandbox is
 * a separate program, written from the spec, and imports nothing of the client.
 */
export interface SandboxClock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface SandboxCredential {
  name: string;
  /** Everything before `/api/v2`. */
  baseUrl: string;
  authToken: string;
  userEmail: string;
}

export interface SandboxStats {
  requests: number;
  /** Operation name → outcome (`ok`, `auth_failure`, `not_found`, `validation`, `429`, ...) → count. */
  byOperation: Record<string, Record<string, number>>;
  malformedRecordsServed: number;
}

export interface SandboxState {
  world: World;
  faults: FaultState;
  cache: BodyCache;
  clock: SandboxClock;
  logger: Logger;
  stats: SandboxStats;
  /** How many webhook events `webhooks/emit` has made: the next event's number. */
  webhookEventsEmitted: number;
  /** Connections a `hang` fault holds open: closing the sandbox cuts them. */
  hanging: Set<Socket>;
  /** One per account; known once the sandbox listens. */
  credentials: SandboxCredential[];
}

export function emptyStats(): SandboxStats {
  return { requests: 0, byOperation: {}, malformedRecordsServed: 0 };
}

/**
 * The HTTP `Date` of every answer follows the sandbox clock (its day, at the time of day
 * `clock` reads: the wall clock's, unless a test gives one), as a real upstream's follows
 * its own: a sync keys rank days by the upstream's date, so `clock/advance` + `sync`
 * records a new day of history. It is read as the answer goes out, after any added
 * latency, not as the request arrives: an answer held across the sandbox's midnight
 * carries the new day with the new day's data (docs/running.md, "Which day a sync
 * records").
 */
export function answerDate(state: Pick<SandboxState, 'world' | 'clock'>): string {
  const timeOfDay = state.clock.now() % 86_400_000;
  return new Date(Date.parse(`${today(state.world)}T00:00:00Z`) + timeOfDay).toUTCString();
}

/** The clock moved on by whole days. */
export function advanceDays(world: World, days: number): void {
  if (!Number.isInteger(days) || days < 0) {
    throw new RangeError('days must be a whole number of at least 0.');
  }
  world.day += days;
}
