/**
 * Opens the warehouse: a `pg` pool when a database URL is given, an embedded PGlite
 * otherwise (in a data directory, or in memory). Both answer with the same JS values:
 * int8 and numeric as numbers, date as a `YYYY-MM-DD` string, timestamptz as a Date.
 *
 * PostgreSQL connections are bounded in time (`DatabaseTimeouts`): a database that stops
 * answering (its processes frozen, a network that drops packets) fails the statement in
 * flight with an error naming the bound and its setting, instead of hanging the process
 * with its sync lock held. PGlite runs inside the process and needs none of them.
 *
 * Its parts, each a module of this folder: the time limits (timeouts.ts), the errors in
 * words (database-errors.ts), the values' parsers (type-parsers.ts), the pool's client
 * (preparing-client.ts) and the embedded warehouse's Kysely (pglite/kysely.ts).
 */
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import {
  isUnreadableUrl,
  redactUrl,
  UNREADABLE_DATABASE_URL,
  withoutDatabaseUrl,
} from '../../log.ts';
import type { Database } from '../database.ts';
import {
  connectAdvice,
  DatabaseUnreachableError,
  describeDatabaseError,
} from './database-errors.ts';
import { lockDataDir } from './pglite/lock.ts';
import { preparingClientOf } from './preparing-client.ts';
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS, queryTimeoutMs } from './timeouts.ts';
import { pgliteParsers, pgTypes } from './type-parsers.ts';

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
  let kyselyOf: (pglite: PGlite) => Kysely<Database>;
  try {
    // Loaded here, not with this module: a warehouse on a server never needs them.
    const [{ PGlite }, { pgliteStartOptions }, { pgliteKysely }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('./pglite/options.ts'),
      import('./pglite/kysely.ts'),
    ]);
    kyselyOf = pgliteKysely;
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
  const db = kyselyOf(pglite);
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

async function ping(db: Kysely<Database>): Promise<void> {
  await db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
}
