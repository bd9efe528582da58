/**
 * Database errors in words a person can act on (docs/running.md): the bound that tripped
 * and its setting, a warehouse that could not be opened and its fix.
 */
import { ListingsSyncError } from '../../errors.ts';
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS, queryTimeoutMs } from './timeouts.ts';

/** The errors pg raises for its own client-side limits, by message. */
export const QUERY_READ_TIMEOUT = /Query read timeout/;
const CONNECT_TIMEOUT = /Connection terminated due to connection timeout/;
/** Waiting for a free connection of the pool: the pool is busy, the database may be fine. */
const POOL_WAIT_TIMEOUT = /timeout exceeded when trying to connect/;

/**
 * A database error in words a person can act on: for a bound that tripped, which bound,
 * its value and its setting; for a warehouse that could not be opened, the reason and its
 * fix (`DatabaseUnreachableError.reason`: the caller names the database); otherwise the
 * error's own message. `timeouts` are those of
 * the warehouse that raised it (timeoutsOf).
 */
export function describeDatabaseError(error: unknown, timeouts?: DatabaseTimeouts): string {
  if (error instanceof DatabaseUnreachableError) return error.reason;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const t = timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  if (QUERY_READ_TIMEOUT.test(message)) {
    return `the database did not answer within ${queryTimeoutMs(t)} ms (DATABASE_STATEMENT_TIMEOUT_MS, ${t.statementMs} ms, plus a margin): it is stopped, overloaded or unreachable`;
  }
  if (CONNECT_TIMEOUT.test(message)) {
    return `no database connection within ${t.connectMs} ms (DATABASE_CONNECT_TIMEOUT_MS)`;
  }
  if (POOL_WAIT_TIMEOUT.test(message)) {
    return `no free connection in the pool within ${t.connectMs} ms (DATABASE_CONNECT_TIMEOUT_MS): every connection was busy`;
  }
  if (code === '57014') {
    return `a statement ran longer than ${t.statementMs} ms and was cancelled (DATABASE_STATEMENT_TIMEOUT_MS)`;
  }
  if (code === '55P03') {
    return `a lock was not granted within ${t.lockMs} ms (DATABASE_LOCK_TIMEOUT_MS)`;
  }
  if (code === '25P03') {
    return `a transaction sat idle longer than ${t.statementMs} ms and the server ended it (DATABASE_STATEMENT_TIMEOUT_MS)`;
  }
  return message;
}

/**
 * A PostgreSQL warehouse that did not answer when opened. `message` names the database
 * (`redactUrl`: the password alone replaced) and the reason; `reason` is the reason alone,
 * with the fix, for a caller that names the database itself (src/warehouse/driver/open.ts).
 */
export class DatabaseUnreachableError extends ListingsSyncError {
  readonly code = 'DATABASE_UNREACHABLE';
  readonly reason: string;
  /** `where` undefined: a URL no part of which may be printed (the reason says why). */
  constructor(where: string | undefined, reason: string, options?: ErrorOptions) {
    super(
      where === undefined
        ? reason
        : `The warehouse database at ${where} cannot be reached: ${reason}`,
      options,
    );
    this.reason = reason;
  }
}

/**
 * What to do about a connection that failed, by the driver's code: the part of
 * DATABASE_URL to correct, or the server to start. Empty for a cause without advice.
 */
export function connectAdvice(error: unknown, url: URL): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  const port = url.port || '5432';
  // PostgreSQL's SQLSTATEs for a refused connection (Appendix A of its manual). The user
  // and database are not repeated: the URL printed before names them, and a word that is
  // also the password would be redacted here.
  if (code === '3D000') {
    return ': create it on that server (`createdb`), or name an existing database in DATABASE_URL';
  }
  if (code === '28P01' || code === '28000') {
    return ": check the user and the password in DATABASE_URL, and the server's pg_hba.conf";
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return `: the host ${url.hostname} is not known; correct the host in DATABASE_URL`;
  }
  if (code === 'ECONNREFUSED') {
    return `: nothing accepts connections at ${url.hostname}:${port}; start the server, or correct the host and port in DATABASE_URL`;
  }
  if (CONNECT_TIMEOUT.test(message)) {
    return `: check that ${url.hostname}:${port} is the server's address and that the network lets it through`;
  }
  return '';
}

/**
 * True for pg's client-side time limits that mean the server did not answer in time: no
 * answer to a query, no connection opened. (A wait for a busy pool is not one of them.)
 */
export function isDatabaseTimeout(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return QUERY_READ_TIMEOUT.test(message) || CONNECT_TIMEOUT.test(message);
}
