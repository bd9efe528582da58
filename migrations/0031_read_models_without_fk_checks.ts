/**
 * The read models the sync writes in a business's transaction beside the rows they are
 * derived from, `visibility_days`, `listing_fixes` (migration 0019) and `review_backlog`
 * (0021), no longer carry a foreign key to `businesses`, as 0013 did for the other derived
 * rows: PostgreSQL checked each inserted row's business, one look-up per row, in the
 * transaction that had just written that business (docs/warehouse.md, "Changes").
 *
 * The cascade is kept: deleting a business still deletes them, in 0013's statement-level
 * trigger on `businesses` (`businesses_delete_versions`), which now deletes these rows
 * too. No column or row changes; `down` restores the keys and 0013's trigger body.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

const TABLES = ['visibility_days', 'listing_fixes', 'review_backlog'] as const;

function cascade(tables: readonly string[]) {
  const deletes = ['business_versions', ...tables]
    .map((t) => `delete from ${t} c using gone where c.business_id = gone.business_id;`)
    .join('\n        ');
  return sql.raw(`create or replace function businesses_delete_versions() returns trigger
    language plpgsql as $$
      begin
        ${deletes}
        return null;
      end $$`);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    const { rows } = await sql<{ name: string }>`
      select conname as name from pg_constraint
      where conrelid = ${table}::regclass and contype = 'f'`.execute(db);
    for (const { name } of rows) {
      await sql`alter table ${sql.table(table)} drop constraint ${sql.id(name)}`.execute(db);
    }
  }
  await sql`${cascade(TABLES)}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`${cascade([])}`.execute(db);
  for (const table of TABLES) {
    await sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_business_id_fkey`)}
      foreign key (business_id) references businesses (business_id) on delete cascade`.execute(db);
  }
}
