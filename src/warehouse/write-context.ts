import type { RemovalCheck } from './held-removals.ts';

/** What every per-business writer needs to know about the write it is part of. */
export interface BusinessWriteContext {
  accountName: string;
  businessId: number;
  runId: string;
  /** The run's observation time: first_seen_at/last_seen_at/history rows use it. */
  observedAt: Date;
  /**
   * Ids (as text) of records read this run but refused and quarantined, per stream. They
   * are still upstream, so their stored rows are kept as they were, not marked gone.
   */
  refused?: RefusedIds;
  /** Whether a stream's gone rows are marked gone now or held (held-removals.ts); absent: now. */
  removals?: RemovalCheck;
  /**
   * Rows new to the business (no stored row has their id) go by one COPY per table rather
   * than the upsert (bulk-write.ts, `copyRows`): PostgreSQL over pg only.
   */
  copyNewRows?: boolean | undefined;
  /**
   * No row of the business was stored before this transaction: no child table holds one
   * of its rows (each references the business, on delete cascade), so the writers take
   * their stored rows as none instead of reading them.
   */
  newBusiness?: boolean | undefined;
}

export interface RefusedIds {
  listings: ReadonlySet<string>;
  reviews: ReadonlySet<string>;
  keywords: ReadonlySet<string>;
}

/** Whether a stored row's id belongs to a record refused this run (see `refused`). */
export function isRefused(
  ctx: BusinessWriteContext,
  stream: keyof RefusedIds,
  id: unknown,
): boolean {
  return ctx.refused?.[stream].has(String(id).toLowerCase()) ?? false;
}
