/**
 * How far the demo got, read from its own warehouse (docs/running.md, "The demo"): the
 * first rank day (`rank_observations`, docs/warehouse.md "Rank history"), the demo's
 * runs that finished (`sync_runs`, docs/warehouse.md "sync_runs") and the size of the
 * sandbox it was built from (`businesses`); and the schema the demo loads into, made
 * afresh by `--fresh`.
 */
import { type Kysely, sql } from 'kysely';
import type { Database, Db } from '../warehouse/database.ts';

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

/**
 * The businesses per account of the sandbox the demo was built from, null before any was
 * stored. The sandbox numbers an account's generated businesses `(account + 1) * idSpan +
 * 1 … + n` (src/sandbox/world.ts), so the highest stored number is `n`; a business
 * archived before the first day's sync is never listed on any later day either, so a
 * sandbox of that size serves the same world.
 */
export async function readDemoBusinessesPerAccount(db: Db, idSpan: number): Promise<number | null> {
  const { rows } = await sql<{ n: number | null }>`
    select max(business_id % ${idSpan})::int as n from businesses`.execute(db);
  return rows[0]?.n ?? null;
}

/**
 * Empties the demo's schema (the connection's current one: the demo's own PGlite's
 * `public`, or `listings_demo` in a PostgreSQL) for `listings-sync demo --fresh`: dropped
 * with everything in it and created again, in one transaction (a demo killed meanwhile
 * keeps its old one), so the migrations start from nothing.
 */
export async function recreateCurrentSchema(db: Kysely<Database>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ schema: string | null }>`
      select current_schema() as schema`.execute(trx);
    const schema = rows[0]?.schema;
    if (!schema) throw new Error('the demo warehouse has no current schema');
    await sql`drop schema ${sql.id(schema)} cascade`.execute(trx);
    await sql`create schema ${sql.id(schema)}`.execute(trx);
  });
}
