/**
 * One sync per warehouse at a time.
 *
 * PostgreSQL: a session-level `pg_try_advisory_lock` on a connection taken from the
 * pool and held until release, so the lock dies with the process (a crashed pod never
 * leaves it behind). The key includes the current schema, so warehouses in different
 * schemas of one database do not exclude each other.
 *
 * PGlite is embedded in this process, so an in-process guard is enough. (Holding
 * Kysely's one PGlite connection instead would block every other query.)
 */
import type { Kysely } from 'kysely';
import { poolOf, type Warehouse } from './connection.ts';
import type { Database } from './database.ts';

export interface SyncLock {
  release(): Promise<void>;
}

const DEFAULT_KEY = 'listings-sync';
const heldInProcess = new WeakMap<Kysely<Database>, Set<string>>();

/** The lock, or null when another holder has it. */
export async function tryAcquireSyncLock(
  warehouse: Warehouse,
  key: string = DEFAULT_KEY,
): Promise<SyncLock | null> {
  const pool = poolOf(warehouse.db);
  if (warehouse.kind === 'postgres' && pool) {
    const client = await pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        // hashtextextended: a stable 64-bit key from the text.
        `select pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 0)) as locked`,
        [key],
      );
      if (!rows[0]?.locked) {
        client.release();
        return null;
      }
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    let released = false;
    return {
      async release() {
        if (released) return;
        released = true;
        try {
          await client.query(
            `select pg_advisory_unlock(hashtextextended(current_schema() || ':' || $1, 0))`,
            [key],
          );
          client.release();
        } catch (error) {
          // Destroying the connection ends the session, which releases the lock anyway.
          client.release(error as Error);
        }
      },
    };
  }

  let held = heldInProcess.get(warehouse.db);
  if (!held) {
    held = new Set();
    heldInProcess.set(warehouse.db, held);
  }
  if (held.has(key)) return null;
  held.add(key);
  const set = held;
  return {
    async release() {
      set.delete(key);
    },
  };
}
