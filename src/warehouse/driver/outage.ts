/**
 * The warehouse outage: errors meaning the database itself is gone (stopped, restarting,
 * unreachable), as opposed to one statement failing. A sync stops at the first of them:
 * every business after it would fail the same way.
 */
import { ListingsSyncError } from '../../errors.ts';
import { describeDatabaseError, isDatabaseTimeout } from './database-errors.ts';
import type { DatabaseTimeouts } from './timeouts.ts';

/** PostgreSQL and socket errors meaning the warehouse itself is gone: the run cannot go on. */
const WAREHOUSE_GONE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

/** True when `error` says the database is gone, not that one statement failed. */
export function isWarehouseGone(error: unknown): boolean {
  // No answer within the configured time: the database is stopped or unreachable.
  if (isDatabaseTimeout(error)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && WAREHOUSE_GONE.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection is closed|Client has encountered a connection error|PGlite is closed/i.test(
    message,
  );
}

/** The error a run ends with when the warehouse went away under it. */
export class WarehouseGoneError extends ListingsSyncError {
  readonly code = 'WAREHOUSE_GONE';
  constructor(cause: unknown, timeouts: DatabaseTimeouts | undefined) {
    super(
      `The warehouse stopped answering (${describeDatabaseError(cause, timeouts)}). ` +
        'Businesses committed before this point are kept; run the sync again once the database is back.',
      { cause },
    );
  }
}
