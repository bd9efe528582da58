/** What the parts of one run share: its options, counts, clock, log and stop switch. */
import type { LimitFunction } from 'p-limit';
import type { CallOptions } from '../api/client.ts';
import type { Credential, RejectedRecord } from '../api/index.ts';
import type { Logger } from '../log.ts';
import { type RawCapture, writeRawReads } from '../raw/capture.ts';
import { quarantineRecords } from '../warehouse/write/quarantine.ts';
import type { InFlight } from './in-flight.ts';
import type { ObservationClock } from './observation-clock.ts';
import type { Stream, SyncOptions, SyncProgress } from './options.ts';
import type { RunStats } from './stats.ts';

export interface RunContext {
  options: SyncOptions;
  runId: string;
  stats: RunStats;
  streams: Set<Stream>;
  /** Observation time for a credential's records (rank day = its UTC date). */
  now: ObservationClock;
  log: Logger;
  progress: SyncProgress;
  report: () => void;
  /** Ends the run `failed` (the first error wins): the warehouse is gone. */
  fail(error: Error): void;
  /** True once the run failed or its signal stopped it: no new business starts. */
  isStopped(): boolean;
  writeReferenceOnce(credential: Credential): Promise<void>;
  /** The run-wide limit on businesses in flight, across credentials. */
  businessSlot: LimitFunction;
  /** Holds the run's upstream answers until they are written (src/raw/capture.ts). */
  raw: RawCapture | undefined;
  /** Every upstream call of the run takes these: its signal aborts them when the run stops. */
  call: CallOptions;
  /** Upstream calls in flight (`track` each), for the `still working` line. */
  inFlight: InFlight;
  /** The run's keywords marked gone so far: one taken over later in the run counts moved. */
  keywordsGone: Set<string>;
  /**
   * The business ids each credential's list answered this run, by credential name, added
   * as the lists arrive (credentials run side by side; absent until the first): a business
   * another credential lists has moved there, and the credential it left does not archive
   * it (src/sync/credential.ts).
   */
  listedBusinesses?: Map<string, ReadonlySet<number>>;
}

/**
 * The credential's reads not written with a business (list, reference, polls), each at its
 * own observation time: the business list as soon as it is read (so that a run killed
 * later still replays the businesses it committed), the rest once the credential is done.
 */
export async function keepAccountReads(context: RunContext, credential: Credential): Promise<void> {
  const reads = context.raw?.takeAccount(credential.name) ?? [];
  try {
    await writeRawReads(context.options.warehouse.db, { runId: context.runId }, reads);
  } catch (error) {
    context.log.warn({ credential: credential.name, err: error }, 'raw zone: reads not kept');
  }
}

/** Quarantines records a read refused, and counts them in the run's stats. */
export async function quarantineRejected(
  context: RunContext,
  credential: Credential,
  stream: string,
  rejected: RejectedRecord[],
  businessId: number | null = null,
): Promise<void> {
  if (rejected.length === 0) return;
  const count = await quarantineRecords(
    context.options.warehouse.db,
    context.runId,
    rejected.map((record) => ({
      accountName: credential.name,
      businessId,
      stream,
      location: record.location,
      reason: record.reason,
      payload: record.payload,
    })),
  );
  context.stats.quarantined += count;
}
