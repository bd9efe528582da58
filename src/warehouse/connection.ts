/**
 * Opens the warehouse: a `pg` pool when a database URL is given, an embedded PGlite
 * otherwise (in a data directory, or in memory). Both answer with the same JS values:
 * int8 and numeric as numbers, date as a `YYYY-MM-DD` string, timestamptz as a Date.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import pg from 'pg';
import { redactUrl, withoutDatabaseUrl } from '../log.ts';
import type { Database } from './database.ts';
import { lockDataDir } from './pglite-lock.ts';

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
  /** Comma-separated schema names for every connection (tests use a schema per file). */
  searchPath?: string;
  /** Postgres pool size; the default suits the sync's per-business transactions. */
  poolSize?: number;
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
const pgliteParsers = {
  [INT8]: toNumber,
  [NUMERIC]: toNumber,
  [DATE]: (value: string) => value,
};

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

export async function openWarehouse(options: OpenWarehouseOptions): Promise<Warehouse> {
  const searchPath =
    options.searchPath === undefined ? undefined : checkSearchPath(options.searchPath);
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      types: pgTypes,
      // A startup parameter, so every connection has it, including the one a sync lock
      // holds outside Kysely.
      options: searchPath ? `-c search_path=${searchPath}` : undefined,
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
    try {
      await ping(db);
    } catch (error) {
      await db.destroy();
      const cause = withoutDatabaseUrl(error, options.databaseUrl);
      throw new Error(
        `The warehouse database at ${redactUrl(options.databaseUrl)} cannot be reached: ${cause.message}`,
        { cause },
      );
    }
    return { db, kind: 'postgres', close: () => db.destroy() };
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
    pglite = await PGlite.create({
      dataDir: memory ? undefined : options.pgliteDataDir,
      parsers: pgliteParsers,
    });
  } catch (error) {
    releaseDir();
    throw error;
  }
  if (searchPath) await pglite.query(`SET search_path TO ${searchPath}`);
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
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
