/**
 * A PostgreSQL warehouse's time limits (docs/configuration.md, "Limits"): what each bounds,
 * their defaults, and how long the client waits past the server's own statement timeout.
 */
import { DEFAULTS } from '../../config/index.ts';

/**
 * Time limits of a PostgreSQL warehouse, in milliseconds (the configuration's
 * DATABASE_CONNECT_TIMEOUT_MS, DATABASE_STATEMENT_TIMEOUT_MS, DATABASE_LOCK_TIMEOUT_MS).
 */
export interface DatabaseTimeouts {
  /** Opening a connection, or waiting for a free one in the pool. */
  connectMs: number;
  /**
   * One statement, enforced by the server (`statement_timeout`); a transaction left idle
   * this long is ended by the server too (`idle_in_transaction_session_timeout`). The
   * client gives up waiting for an answer a margin later (`query_timeout`), which is what
   * ends a wait on a server that does not answer at all. 0: no limit (a long migration).
   */
  statementMs: number;
  /** Waiting for a row or table lock (`lock_timeout`). 0: no limit. */
  lockMs: number;
}

// The values the configuration defaults to (src/config/settings.ts).
export const DEFAULT_DATABASE_TIMEOUTS: Readonly<DatabaseTimeouts> = Object.freeze({
  connectMs: DEFAULTS.databaseConnectTimeoutMs,
  statementMs: DEFAULTS.databaseStatementTimeoutMs,
  lockMs: DEFAULTS.databaseLockTimeoutMs,
});

/**
 * How long after the server's statement timeout the client stops waiting: long enough for
 * the server's own cancellation (57014) to arrive first, so a slow statement reads as slow
 * and only a silent server reads as gone. At most 5 s, at least 100 ms.
 */
export function queryTimeoutMs(timeouts: DatabaseTimeouts): number {
  if (timeouts.statementMs === 0) return 0;
  return (
    timeouts.statementMs + Math.min(5_000, Math.max(100, Math.floor(timeouts.statementMs / 2)))
  );
}
