/**
 * How far the demo got, read from its own warehouse (docs/running.md, "The demo"): the
 * first rank day (`rank_observations`, docs/warehouse.md "Rank history") and the demo's
 * runs that finished (`sync_runs`, docs/warehouse.md "sync_runs"); and the PostgreSQL
 * schema the demo loads into.
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';

/** Creates the schema when it is missing; an existing one is left as it is. */
export async function createSchemaIfMissing(db: Db, schema: string): Promise<void> {
  await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
}

/**
 * The first day with a rank observation (`YYYY-MM-DD`, null with none), and how many runs
 * of this trigger finished (`succeeded`, `partial` or `failed`; not `interrupted` nor
 * still `running`).
 */
export async function readDemoRunDays(
  db: Db,
  trigger: string,
): Promise<{ first: string | null; finished: number } | undefined> {
  const { rows } = await sql<{ first: string | null; finished: number }>`
    select (select to_char(min(observed_on), 'YYYY-MM-DD') from rank_observations) as first,
           (select count(*)::int from sync_runs
             where trigger = ${trigger}
               and status in ('succeeded', 'partial', 'failed')) as finished`.execute(db);
  return rows[0];
}
