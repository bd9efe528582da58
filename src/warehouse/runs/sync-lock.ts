/**
 * One sync per warehouse at a time, and shards of one night side by side.
 *
 * A lock is a set of keys, each taken exclusively or shared. A full run takes the nightly
 * key (`listings-sync:sync`) exclusively; a shard takes that key shared plus its own
 * shard key exclusively. So shards run together, the same shard never twice, and a full
 * run and any shard exclude each other (docs/deploy.md, "Sharding"). Shards of different
 * counts (0/2 beside 0/4) can hold the same business: each business is written under its
 * own transaction-level lock (`lockBusiness` in src/warehouse/tables/businesses.ts).
 *
 * PostgreSQL: session-level `pg_try_advisory_lock` / `pg_try_advisory_lock_shared` on a
 * connection taken from the pool and held until release, so the lock dies with the
 * process (a crashed pod never leaves it behind). The keys include the current schema, so
 * warehouses in different schemas of one database do not exclude each other.
 *
 * PGlite is embedded in this process, so an in-process table of holders is enough (and
 * the data directory's pid lock keeps other processes out), its keys also per schema. Holding Kysely's one PGlite
 * connection instead would block every other query.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../database.ts';
import { poolOf, type Warehouse } from '../driver/connection.ts';

export interface SyncLock {
  release(): Promise<void>;
}

/** The keys a holder takes: every one must be free, or none is taken. */
export interface SyncLockKeys {
  exclusive: readonly string[];
  shared?: readonly string[];
}

const DEFAULT_KEY = 'listings-sync';

interface Hold {
  key: string;
  shared: boolean;
}

function holdsOf(keys: string | SyncLockKeys): Hold[] {
  if (typeof keys === 'string') return [{ key: keys, shared: false }];
  return [
    ...(keys.shared ?? []).map((key) => ({ key, shared: true })),
    ...keys.exclusive.map((key) => ({ key, shared: false })),
  ];
}

// hashtextextended: a stable 64-bit key from the text.
const LOCK_ID = `hashtextextended(current_schema() || ':' || $1, 0)`;

/** The lock, or null when another holder has one of its keys in a conflicting mode. */
export async function tryAcquireSyncLock(
  warehouse: Warehouse,
  keys: string | SyncLockKeys = DEFAULT_KEY,
): Promise<SyncLock | null> {
  const holds = holdsOf(keys);
  const pool = poolOf(warehouse.db);
  if (warehouse.kind === 'postgres' && pool) {
    const client = await pool.connect();
    const taken: Hold[] = [];
    const unlock = async (list: readonly Hold[]) => {
      for (const hold of [...list].reverse()) {
        const fn = hold.shared ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock';
        await client.query(`select ${fn}(${LOCK_ID})`, [hold.key]);
      }
    };
    try {
      for (const hold of holds) {
        const fn = hold.shared ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
        const { rows } = await client.query<{ locked: boolean }>(
          `select ${fn}(${LOCK_ID}) as locked`,
          [hold.key],
        );
        if (!rows[0]?.locked) {
          await unlock(taken);
          client.release();
          return null;
        }
        taken.push(hold);
      }
    } catch (error) {
      // Destroying the connection ends the session, which releases what it took.
      client.release(error as Error);
      throw error;
    }
    let released = false;
    return {
      async release() {
        if (released) return;
        released = true;
        try {
          await unlock(taken);
          client.release();
        } catch (error) {
          client.release(error as Error);
        }
      },
    };
  }

  let table = heldInProcess.get(warehouse.db);
  if (!table) {
    table = new Map();
    heldInProcess.set(warehouse.db, table);
  }
  const held = table;
  // Keyed by the current schema too, as on PostgreSQL: `replay --in-place` holds the live
  // schema's lock while its runs write a schema beside it on the same connection.
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
    warehouse.db,
  );
  const schema = rows[0]?.schema ?? '';
  for (const hold of holds) hold.key = `${schema}:${hold.key}`;
  const free = holds.every(({ key, shared }) => {
    const state = held.get(key);
    if (!state) return true;
    return shared ? !state.exclusive : false;
  });
  if (!free) return null;
  for (const { key, shared } of holds) {
    const state = held.get(key) ?? { exclusive: false, shared: 0 };
    if (shared) state.shared += 1;
    else state.exclusive = true;
    held.set(key, state);
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      for (const { key, shared } of holds) {
        const state = held.get(key);
        if (!state) continue;
        if (shared) state.shared -= 1;
        else state.exclusive = false;
        if (!state.exclusive && state.shared <= 0) held.delete(key);
      }
    },
  };
}

/** Per warehouse: key → whether one holder has it exclusively, and how many share it. */
const heldInProcess = new WeakMap<
  Kysely<Database>,
  Map<string, { exclusive: boolean; shared: number }>
>();
