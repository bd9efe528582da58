/** What a sync run takes: its streams, limits and hooks, and how the configuration sets them. */
import type { AlertRules } from '../alerts/rules.ts';
import type { ApiClient, Credential } from '../api/index.ts';
import { type Config, credentialOrigin, DEFAULTS } from '../config/index.ts';
import type { Logger } from '../log.ts';
import type { Stream } from '../streams/index.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import type { Ticker } from './in-flight.ts';
import type { SyncProgress } from './progress.ts';
import type { Shard } from './shard.ts';

/**
 * What a run can fetch: the stream descriptors' names (src/streams/index.ts). `businesses`
 * is the full profile read; the list is always read.
 */
export { STREAMS, type Stream } from '../streams/index.ts';
export type { SyncProgress } from './progress.ts';

/**
 * Defaults of `businessConcurrency` and `overallBusinessConcurrency`: those of
 * SYNC_ACCOUNT_CONCURRENCY and SYNC_CONCURRENCY, which set both (docs/configuration.md).
 */
export const DEFAULT_BUSINESS_CONCURRENCY = DEFAULTS.syncAccountConcurrency;
export const DEFAULT_OVERALL_BUSINESS_CONCURRENCY = DEFAULTS.syncConcurrency;

/**
 * How long a stopped run (SIGTERM) lets the business transactions in flight commit before
 * it records itself `interrupted` and returns. A business's write takes well under a
 * second; 15 s fits in Kubernetes' default 30 s termination grace with room to record.
 */
export const DEFAULT_STOP_GRACE_MS = 15_000;

export interface SyncOptions {
  warehouse: Warehouse;
  api: ApiClient;
  credentials: readonly Credential[];
  logger: Logger;
  streams?: readonly Stream[];
  shard?: Shard;
  /**
   * Only these businesses (of the listed ones), e.g. the one a command just wrote. The
   * others are neither fetched nor archived, and the account's `last_synced_at` stays.
   */
  businessIds?: readonly number[];
  trigger?: string;
  /**
   * Stops the run: no new business starts, upstream requests in flight are aborted (their
   * businesses are not written), business transactions in flight get `stopGraceMs` to
   * commit, and the run is recorded `interrupted`.
   */
  signal?: AbortSignal;
  /** Ends the grace at once (a second SIGTERM): the run is still recorded `interrupted`. */
  stopNow?: AbortSignal;
  /** Default DEFAULT_STOP_GRACE_MS. */
  stopGraceMs?: number;
  /** The clock and timer of the `still working` line (src/sync/in-flight.ts); the system's by default. */
  ticker?: Ticker;
  /** Milliseconds between `still working` lines; default STILL_WORKING_EVERY_MS. */
  stillWorkingEveryMs?: number;
  /**
   * The run's clock: observation times and rank days. By default each credential's
   * upstream clock (its responses' `Date`), else the local clock; see
   * src/sync/observation-clock.ts.
   */
  now?: (credential?: Credential) => Date;
  /**
   * A business's own observation time, when the caller knows it better than `now`: replay
   * (src/replay/replay.ts) gives each business the time it was kept with, so businesses can
   * be replayed side by side. Undefined falls back to `now`.
   */
  businessObservedAt?: (credential: Credential, businessId: number) => Date | undefined;
  /**
   * Syncs only the listed businesses it accepts; the others are left as they are and still
   * count as listed (not archived). Replay: the businesses a kept run committed.
   */
  businessFilter?: (businessId: number) => boolean;
  /**
   * Called when a business's write failed (its transaction rolled back): `replay --in-place`
   * keeps such a business as it was rather than merge a rebuild that misses a night.
   */
  onBusinessError?: (credential: Credential, businessId: number, error: unknown) => void;
  /** Businesses fetched and written at once, per credential (default 8). */
  businessConcurrency?: number;
  /**
   * Businesses fetched and written at once across all credentials (default 16). Each
   * holds a database connection while it writes, so the pool is sized from it
   * (`warehousePoolSize` in src/warehouse/driver/open.ts).
   */
  overallBusinessConcurrency?: number;
  /** The alert rules the writers raise under (`config.alertRules`); built-in defaults otherwise. */
  alertRules?: AlertRules;
  /**
   * Parse and write every answer, even one whose body is the one its rows were last built
   * from (docs/warehouse.md, "Answers applied"); `sync --reapply`. Default false.
   */
  reapply?: boolean;
  /** Keep every upstream answer in the raw zone (docs/warehouse.md). Default true. */
  keepRaw?: boolean;
  /** Prune raw zone reads older than this many days when the run ends (RAW_RETENTION_DAYS). */
  rawRetentionDays?: number;
  onProgress?: (progress: SyncProgress) => void;
  /**
   * Where a credential came from (`credentialOrigin` in src/config/load.ts): a credential
   * whose token is refused names it, so the user knows what to fix.
   */
  credentialOrigin?: (name: string) => string;
}

/** The options a run takes from the configuration; every caller of runSync starts from them. */
export type ConfiguredSyncOptions = Required<
  Pick<SyncOptions, 'alertRules' | 'businessConcurrency' | 'overallBusinessConcurrency'>
> &
  Pick<SyncOptions, 'rawRetentionDays' | 'credentialOrigin'>;

/**
 * The configuration's part of a run: the alert rules, and the business limits from
 * SYNC_ACCOUNT_CONCURRENCY (per credential) and SYNC_CONCURRENCY (across credentials), the
 * same limits the API client keeps on requests (docs/configuration.md, "Limits").
 */
export function syncOptionsFromConfig(config: Config): ConfiguredSyncOptions {
  return {
    alertRules: config.alertRules,
    businessConcurrency: config.syncAccountConcurrency,
    overallBusinessConcurrency: config.syncConcurrency,
    credentialOrigin: (name) => credentialOrigin(config, name),
    // 0 keeps every read.
    ...(config.rawRetentionDays ? { rawRetentionDays: config.rawRetentionDays } : {}),
  };
}
