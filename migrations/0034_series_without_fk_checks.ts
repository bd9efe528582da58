/**
 * The rows the sync derives per business that still carried a foreign key to `businesses`,
 * `rank_series` (migration 0005), `listing_accuracy_days` (0001) and `business_answers`
 * (0014), no longer do, as 0013 and 0031 did for the other derived rows: PostgreSQL
 * checked each inserted row's business, one look-up per row (a first sync of 500
 * businesses inserts about 45,000 rank series, each checked against the business its own
 * transaction had just written; docs/benchmarks.md, "Where a first sync's CPU goes").
 *
 * The cascade is kept: deleting a business still deletes these rows, through a
 * statement-level trigger of its own on `businesses` (beside 0013's, which another
 * migration may redefine), and a rank series deleted that way still takes its months and
 * latest row with it (0013's trigger on `rank_series`). No column or row changes; `down`
 * restores the keys and drops the trigger.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

const TABLES = ['rank_series', 'listing_accuracy_days', 'business_answers'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    const { rows } = await sql<{ name: string }>`
      select conname as name from pg_constraint
      where conrelid = ${table}::regclass and contype = 'f'`.execute(db);
    for (const { name } of rows) {
      await sql`alter table ${sql.table(table)} drop constraint ${sql.id(name)}`.execute(db);
    }
  }
  const deletes = TABLES.map(
    (t) => `delete from ${t} c using gone where c.business_id = gone.business_id;`,
  ).join('\n        ');
  await sql
    .raw(`create function businesses_delete_series() returns trigger language plpgsql as $$
      begin
        ${deletes}
        return null;
      end $$`)
    .execute(db);
  await sql
    .raw(`create trigger businesses_delete_series after delete on businesses
      referencing old table as gone
      for each statement execute function businesses_delete_series()`)
    .execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger businesses_delete_series on businesses`.execute(db);
  await sql`drop function businesses_delete_series()`.execute(db);
  for (const table of TABLES) {
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_business_id_fkey`)}
      foreign key (business_id) references businesses (business_id) on delete cascade`.execute(db);
  }
}
