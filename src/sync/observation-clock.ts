/**
 * Which day a sync records (docs/running.md, "Which day a sync records"): the
 * upstream's date, from the `Date` header of the credential's latest response (the
 * client's `upstreamNow`), so a sandbox whose clock has been advanced records its own
 * days. Without a plausible `Date` (absent, before 2000, or more than a day ahead of ours)
 * the local clock.
 */

import type { Credential } from '../api/index.ts';
import { type ApiClient, upstreamNow } from '../api/index.ts';
import type { Logger } from '../log.ts';

/** Ahead of the local clock by more than this, an upstream `Date` is not believed. */
const UPSTREAM_CLOCK_AHEAD_MS = 86_400_000;
/** Nor one before this: no rank history of this service predates it. */
const UPSTREAM_CLOCK_FLOOR_MS = Date.parse('2000-01-01T00:00:00Z');

/**
 * The time to record an observation of this credential's data at: `upstreamNow` when it is
 * plausible (after 2000, at most a day ahead of ours), else the local clock. Every writer
 * of upstream observations (a sync, a review response submitted or read) uses it, so one
 * warehouse never mixes the upstream's days with ours.
 */
export function observationTime(
  client: ApiClient,
  credential: Credential,
): { at: Date; upstream: boolean; seen: Date | undefined } {
  const local = new Date();
  const seen = upstreamNow(client, credential);
  const ms = seen?.getTime();
  if (
    ms !== undefined &&
    ms >= UPSTREAM_CLOCK_FLOOR_MS &&
    ms <= local.getTime() + UPSTREAM_CLOCK_AHEAD_MS
  ) {
    return { at: seen as Date, upstream: true, seen };
  }
  return { at: local, upstream: false, seen };
}

/** A run's clock: the time to record a credential's observations at (no credential: ours). */
export type ObservationClock = (credential?: Credential) => Date;

/**
 * The clock of one run: `fixed` when given (a test, or a command's own clock), else each
 * credential's `observationTime`, warning once per credential that falls back to the
 * local clock.
 */
export function observationClock(
  api: ApiClient,
  fixed: ((credential?: Credential) => Date) | undefined,
  logger: Logger,
): ObservationClock {
  if (fixed) return (credential) => fixed(credential);
  const warned = new Set<string>();
  return (credential) => {
    if (!credential) return new Date();
    const time = observationTime(api, credential);
    if (!time.upstream && !warned.has(credential.name)) {
      warned.add(credential.name);
      logger.warn(
        { credential: credential.name, upstreamDate: time.seen?.toISOString() ?? null },
        'the upstream sent no plausible Date header: rank days follow the local clock',
      );
    }
    return time.at;
  };
}
