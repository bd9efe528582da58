/**
 * What the `sync_stale` rule reads besides `sync_runs` (src/warehouse/sync-runs.ts): the
 * names in `accounts` (docs/alerts.md, "Each kind's exact trigger"; docs/warehouse.md,
 * "accounts"). An account the warehouse knows is checked even when no credential names
 * it any more; the rule itself is src/alerts/sync-health.ts's.
 */
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

/** Every account the warehouse holds, by name. */
export async function knownAccountNames(db: Kysely<Database>): Promise<string[]> {
  const rows = await db.selectFrom('accounts').select('name').execute();
  return rows.map((row) => row.name);
}
