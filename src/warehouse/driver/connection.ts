/**
 * Opens the warehouse: a `pg` pool when a database URL is given, an embedded PGlite
 * otherwise (in a data directory, or in memory). Both answer with the same JS values:
 * int8 and numeric as numbers, date as a `YYYY-MM-DD` string, timestamptz as a Date.
 *
 * PostgreSQL connections are bounded in time (`DatabaseTimeouts`): a database that stops
 * answering (its processes frozen, a network that drops packets) fails the statement in
 * flight with an error naming the bound and its setting, instead of hanging the process
 * with its sync lock held. PGlite runs inside the process and needs none of them.
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import { finished } from 'node:stream/promises';
import type { PGlite } from '@electric-sql/pglite';
import { type Driver, Kysely, PGliteDialect, PGliteDriver, PostgresDialect } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { DEFAULTS } from '../../config/index.ts';
import { ListingsSyncError } from '../../errors.ts';
import {
  isUnreadableUrl,
  redactUrl,
  UNREADABLE_DATABASE_URL,
  withoutDatabaseUrl,
} from '../../log.ts';
import type { Database } from '../database.ts';
import { lockDataDir } from './pglite/lock.ts';

export interface Warehouse {
  db: Kysely<Database>;
  kind: 'postgres' | 'pglite';
  close(): Promise<void>;
}

export interface OpenWarehouseOptions {
  /** postgres:// URL; when absent, the embedded PGlite is used. */
  databaseUrl?: string;
  /** PGlite data directory; `memory://` (or `memory: true`) keeps it in memory. */
  pgliteDataDir?: string;
  memory?: boolean;
  /**
   * A PGlite data directory dumped with `dumpDataDir()`, to start from instead of an
   * empty cluster: tests load one migrated template rather than run initdb each time.
   */
  loadDataDir?: Blob;
  /** Comma-separated schema names for every connection (tests use a schema per file). */
  searchPath?: string;
  /** Postgres pool size; the default suits the sync's per-business transactions. */
  poolSize?: number;
  /** PostgreSQL time limits; DEFAULT_DATABASE_TIMEOUTS where not given. */
  timeouts?: Partial<DatabaseTimeouts>;
}

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

/** The errors pg raises for its own client-side limits, by message. */
const QUERY_READ_TIMEOUT = /Query read timeout/;
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
function connectAdvice(error: unknown, url: URL): string {
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

// Type OIDs, from pg_type.
const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;
const INT8_ARRAY = 1016;
const NUMERIC_ARRAY = 1231;
const TEXT_ARRAY = 1009;

/** Ids are below 2^53 upstream, so a JS number is exact and friendlier than a bigint. */
const toNumber = (value: string): number => Number(value);

/** pg's own parser for any type OID (its typings only list the scalar built-ins). */
const defaultParser = pg.types.getTypeParser as (
  oid: number,
  format?: 'text' | 'binary',
) => (value: string) => unknown;

/** The pg driver's parsers, adjusted to match PGlite's (and ours). */
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format === 'binary') return defaultParser(oid, 'binary');
    if (oid === INT8 || oid === NUMERIC) return toNumber;
    // pg parses a date as local midnight; keep it a calendar day, as PGlite does below.
    if (oid === DATE) return (value: string) => value;
    if (oid === INT8_ARRAY || oid === NUMERIC_ARRAY) {
      const parseTextArray = defaultParser(TEXT_ARRAY, 'text');
      return (value: string) =>
        (parseTextArray(value) as (string | null)[]).map((item) =>
          item === null ? null : Number(item),
        );
    }
    return defaultParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

/** PGlite already returns safe int8 values as numbers; numeric and date need the same treatment as pg. */
export const pgliteParsers = {
  [INT8]: toNumber,
  [NUMERIC]: toNumber,
  [DATE]: (value: string) => value,
};

/**
 * Named prepared statements: PostgreSQL parses and plans an unnamed statement every time
 * it runs, and the sync runs the same few dozen statement texts for every business (about
 * 20 per business in a first sync, 2 for a business whose answers all read as applied;
 * docs/benchmarks.md). A statement with parameters whose text was seen before runs under a name,
 * so each connection parses it once. The names are bounded: a text seen once is only
 * remembered (in a set cleared when full), and past `MAX_NAMED_STATEMENTS` texts the rest
 * run unnamed, so statements whose text varies cannot grow the server's memory.
 * Statements without parameters (migrations' DDL, multi-statement scripts) never do.
 */
const MAX_NAMED_STATEMENTS = 200;
const MAX_SEEN_ONCE = 2000;

/**
 * The names of one pool's statements. Per pool, not per process: a process that opens
 * several warehouses (replay's scratch schema beside the live one, `warehouse copy`'s two,
 * a test run's many) gives each its own budget, so one cannot use up another's names.
 */
class StatementNames {
  readonly #names = new Map<string, string>();
  readonly #seenOnce = new Set<string>();

  nameOf(text: string): string | undefined {
    const name = this.#names.get(text);
    if (name !== undefined || this.#names.size >= MAX_NAMED_STATEMENTS) return name;
    if (!this.#seenOnce.has(text)) {
      if (this.#seenOnce.size >= MAX_SEEN_ONCE) this.#seenOnce.clear();
      this.#seenOnce.add(text);
      return undefined;
    }
    this.#seenOnce.delete(text);
    const named = `ls_${this.#names.size + 1}`;
    this.#names.set(text, named);
    return named;
  }
}

/**
 * `copy <table> (<columns>) from stdin`, sent through Kysely with its rows (COPY's text
 * format) as the one parameter: `copyRows` in bulk-write.ts. Kysely has no other way to a
 * transaction's own connection, and the COPY must run in the business's transaction.
 */
const COPY_FROM_STDIN = /^copy [^;]+ from stdin$/;

/**
 * A pg client that runs repeated parameterised statements as named prepared ones, and
 * a `COPY … FROM STDIN` given its rows as the one parameter (`copyFromStdin`).
 */
class PreparingClient extends pg.Client {
  /** The pool's names (set on the pool's own subclass, `preparingClientOf`). */
  protected get statementNames(): StatementNames {
    throw new Error('PreparingClient is used through preparingClientOf()');
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg's query() is a dozen overloads
  override query(...args: any[]): any {
    const [text, values, callback] = args;
    if (
      typeof text === 'string' &&
      Array.isArray(values) &&
      values.length > 0 &&
      callback === undefined
    ) {
      if (values.length === 1 && typeof values[0] === 'string' && COPY_FROM_STDIN.test(text)) {
        return this.#copyFromStdin(text, values[0]);
      }
      const name = this.statementNames.nameOf(text);
      if (name !== undefined) return super.query({ name, text, values });
    }
    // biome-ignore lint/suspicious/noExplicitAny: as above
    return (super.query as any)(...args);
  }

  /**
   * One `COPY … FROM STDIN` through pg-copy-streams: the statement, then (once the server
   * answers CopyInResponse) the whole payload as one CopyData message and CopyDone. It
   * settles at ReadyForQuery, or with the server's error (a unique violation, 23505, that
   * the caller answers by writing its business again without COPY: warehouse/write/snapshot.ts).
   * pg's `query_timeout` covers it as any query: the stream offers the callback that pg
   * wraps with its timer, and fails with pg's "Query read timeout".
   */
  async #copyFromStdin(text: string, payload: string): Promise<pg.QueryResult> {
    const copy = super.query(copyFrom(text));
    // pg tells the stream of a connection lost after it settled too (below): heard, ignored.
    copy.on('error', () => {});
    copy.end(payload);
    try {
      await finished(copy);
    } catch (error) {
      if (error instanceof Error && QUERY_READ_TIMEOUT.test(error.message)) {
        // pg leaves a query it gave up on in flight, and the stream would act on an answer
        // that came late (its CopyInResponse) with its connection already let go: a
        // TypeError thrown in the socket's reader, which ends the process. So the
        // connection is cut, with this error, and the pool replaces it. Cut once the
        // transaction's rollback is queued behind the COPY, so that the rollback fails
        // with this error too: Kysely reports the rollback's error, and this one names
        // the bound (describeDatabaseError).
        const socket = this.connection.stream;
        setImmediate(() => socket.destroy(error));
        // Until then the pool must not lend it again: a query queued behind the abandoned
        // COPY would wait for it and then fail with this error. Released with an error, the
        // pool drops the client instead of keeping it idle (the pool sets `release` on each
        // checkout, so this lasts until that one ends).
        const checkout = this as unknown as { release?: (error?: unknown) => void };
        const release = checkout.release;
        if (release) checkout.release = (reason?: unknown) => release(reason || error);
      }
      throw error;
    }
    return { command: 'COPY', rowCount: copy.rowCount, rows: [], oid: 0, fields: [] };
  }
}

/** The client class of one pool: a PreparingClient with the pool's own statement names. */
function preparingClientOf(): typeof PreparingClient {
  const names = new StatementNames();
  return class extends PreparingClient {
    protected override get statementNames(): StatementNames {
      return names;
    }
  };
}

const SEARCH_PATH = /^[A-Za-z_][A-Za-z0-9_$]*(,[A-Za-z_][A-Za-z0-9_$]*)*$/;

function checkSearchPath(searchPath: string): string {
  const compact = searchPath.replace(/\s+/g, '');
  if (!SEARCH_PATH.test(compact)) {
    throw new Error(
      `The search path "${searchPath}" is not a comma-separated list of plain schema names.`,
    );
  }
  return compact;
}

/** What `sync-lock.ts` needs beyond Kysely: the pg pool, to hold one connection for a lock. */
const pools = new WeakMap<Kysely<Database>, pg.Pool>();

/** The pg pool behind a postgres warehouse; undefined for PGlite. */
export function poolOf(db: Kysely<Database>): pg.Pool | undefined {
  return pools.get(db);
}

const timeoutsByDb = new WeakMap<Kysely<Database>, DatabaseTimeouts>();

/** The time limits of a postgres warehouse; undefined for PGlite, which has none. */
export function timeoutsOf(db: Kysely<Database>): DatabaseTimeouts | undefined {
  return timeoutsByDb.get(db);
}

/**
 * `url` with `-c search_path=…` last in its `options` parameter. pg lets a URL's own
 * parameters override the pool's, so a DATABASE_URL that names a search path
 * (`?options=-c search_path=public`) would otherwise send a schema opened beside it (the
 * replay's) to the URL's schema instead; the last `-c` of a setting wins.
 */
function withSearchPath(url: string, searchPath: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const own = parsed.searchParams.get('options');
  if (own === null) return url;
  parsed.searchParams.set('options', `${own} -c search_path=${searchPath}`);
  return parsed.toString();
}

export async function openWarehouse(options: OpenWarehouseOptions): Promise<Warehouse> {
  const searchPath =
    options.searchPath === undefined ? undefined : checkSearchPath(options.searchPath);
  if (options.databaseUrl) {
    // pg would split such a URL elsewhere and echo pieces of the password as a host.
    if (isUnreadableUrl(options.databaseUrl)) {
      throw new DatabaseUnreachableError(undefined, UNREADABLE_DATABASE_URL);
    }
    const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
    const readTimeout = queryTimeoutMs(timeouts);
    // Every socket the pool opens, so that close() can cut them when the server does not
    // answer the goodbye (a frozen server never closes its side).
    const sockets = new Set<net.Socket>();
    const pool = new pg.Pool({
      Client: preparingClientOf(),
      connectionString: searchPath
        ? withSearchPath(options.databaseUrl, searchPath)
        : options.databaseUrl,
      max: options.poolSize ?? 10,
      types: pgTypes,
      // A startup parameter, so every connection has it, including the one a sync lock
      // holds outside Kysely.
      options: searchPath ? `-c search_path=${searchPath}` : undefined,
      connectionTimeoutMillis: timeouts.connectMs,
      ...(timeouts.statementMs > 0 && {
        statement_timeout: timeouts.statementMs,
        idle_in_transaction_session_timeout: timeouts.statementMs,
        query_timeout: readTimeout,
      }),
      ...(timeouts.lockMs > 0 && { lock_timeout: timeouts.lockMs }),
      stream: () => {
        const socket = new net.Socket();
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        return socket;
      },
    });
    // A connection that dies (server restart, network cut) must not crash the process:
    // pg emits 'error' on the pool for an idle client and on the client itself for one
    // in use (a transaction, the sync lock), and an unheard 'error' ends Node. The query
    // in flight still rejects with the error, and the pool replaces the connection.
    pool.on('error', () => {});
    pool.on('connect', (client) => {
      client.on('error', () => {});
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    pools.set(db, pool);
    timeoutsByDb.set(db, timeouts);
    const close = async () => {
      // pg ends a connection by waiting for the server to close it; past the connect
      // timeout the sockets are cut, so a frozen server cannot keep the process alive.
      const cut = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, timeouts.connectMs);
      try {
        await db.destroy();
      } finally {
        clearTimeout(cut);
      }
    };
    try {
      await ping(db);
    } catch (error) {
      await close();
      const cause = withoutDatabaseUrl(error, options.databaseUrl);
      throw new DatabaseUnreachableError(
        redactUrl(options.databaseUrl),
        `${describeDatabaseError(cause, timeouts)}${connectAdvice(cause, new URL(options.databaseUrl))}`,
        { cause },
      );
    }
    return { db, kind: 'postgres', close };
  }

  const memory =
    options.memory === true ||
    options.pgliteDataDir === undefined ||
    options.pgliteDataDir === 'memory://';
  let releaseDir = () => {};
  if (!memory && options.pgliteDataDir) {
    mkdirSync(options.pgliteDataDir, { recursive: true });
    releaseDir = lockDataDir(options.pgliteDataDir);
  }
  let pglite: PGlite;
  try {
    // Loaded here, not with this module: a warehouse on a server never needs them.
    const [{ PGlite }, { pgliteStartOptions }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('./pglite/options.ts'),
    ]);
    pglite = await PGlite.create({
      dataDir: memory ? undefined : options.pgliteDataDir,
      parsers: pgliteParsers,
      ...pgliteStartOptions(memory ? undefined : options.pgliteDataDir, options.loadDataDir),
    });
  } catch (error) {
    releaseDir();
    throw error;
  }
  if (searchPath) await pglite.query(`SET search_path TO ${searchPath}`);
  const db = pgliteKysely(pglite);
  return {
    db,
    kind: 'pglite',
    close: async () => {
      try {
        await db.destroy();
        if (!pglite.closed) await pglite.close();
      } finally {
        releaseDir();
      }
    },
  };
}

/**
 * Kysely's PGlite driver begins a transaction inside PGlite's own `transaction()` and
 * waits for its callback to start: on a closed instance that call rejects before the
 * callback runs, so the wait never ends and the rejection goes unheard (the process's
 * unhandled rejection). A closed warehouse fails the transaction instead, as a closed
 * pg pool does.
 */
class ClosedAwarePGliteDriver extends PGliteDriver {
  readonly #pglite: PGlite;
  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
  }
  override async beginTransaction(
    ...args: Parameters<PGliteDriver['beginTransaction']>
  ): Promise<void> {
    if (this.#pglite.closed) throw new Error('PGlite is closed');
    return super.beginTransaction(...args);
  }
}

class ClosedAwarePGliteDialect extends PGliteDialect {
  readonly #pglite: PGlite;
  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
  }
  override createDriver(): Driver {
    return new ClosedAwarePGliteDriver(this.#pglite);
  }
}

/** The Kysely instance of an open PGlite, as every embedded warehouse has it. */
export function pgliteKysely(pglite: PGlite): Kysely<Database> {
  return new Kysely<Database>({ dialect: new ClosedAwarePGliteDialect(pglite) });
}

async function ping(db: Kysely<Database>): Promise<void> {
  await db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
}
