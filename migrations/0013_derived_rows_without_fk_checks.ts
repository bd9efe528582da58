/**
 * The history and read-model rows the sync derives from rows it has just written in the
 * same transaction (`business_versions`, `listing_status_history`, `review_versions`,
 * `rank_history`, `rank_latest`) no longer carry a foreign key: PostgreSQL checked each of
 * them row by row against a parent the statement itself had read or written, about
 * 600,000 checks and a fifth of its CPU in a first sync of 1,000 businesses
 * (docs/operations.md, "Benchmark"). The cascade is kept: deleting a parent (a business,
 * a listing, a review, a rank series: an operator's delete; the sync never deletes them)
 * still deletes these rows, through one statement-level trigger per parent table that
 * deletes the children of the rows the statement deleted (a transition table), also when
 * the parent row itself goes by cascade (a business's listings and reviews).
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/** The dropped foreign keys: child table, constraint, and the definition `down` restores. */
const FOREIGN_KEYS = [
  [
    'business_versions',
    'business_versions_business_id_fkey',
    'foreign key (business_id) references businesses (business_id) on delete cascade',
  ],
  [
    'listing_status_history',
    'listing_status_history_listing_fkey',
    'foreign key (business_id, listing_id) references listings (business_id, listing_id) on delete cascade',
  ],
  [
    'review_versions',
    'review_versions_review_id_fkey',
    'foreign key (review_id) references reviews (review_id) on delete cascade',
  ],
  [
    'rank_history',
    'rank_history_series_id_fkey',
    'foreign key (series_id) references rank_series (series_id) on delete cascade',
  ],
  [
    'rank_latest',
    'rank_latest_series_id_fkey',
    'foreign key (series_id) references rank_series (series_id) on delete cascade',
  ],
] as const;

/** Per parent table: its trigger function's name and the deletes it runs (`gone`: the deleted rows). */
const CASCADES = [
  [
    'businesses',
    'businesses_delete_versions',
    'delete from business_versions c using gone where c.business_id = gone.business_id;',
  ],
  [
    'listings',
    'listings_delete_status_history',
    `delete from listing_status_history c using gone
       where c.business_id = gone.business_id and c.listing_id = gone.listing_id;`,
  ],
  [
    'reviews',
    'reviews_delete_versions',
    'delete from review_versions c using gone where c.review_id = gone.review_id;',
  ],
  [
    'rank_series',
    'rank_series_delete_observations',
    `delete from rank_history c using gone where c.series_id = gone.series_id;
     delete from rank_latest c using gone where c.series_id = gone.series_id;`,
  ],
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [table, name] of FOREIGN_KEYS) {
    await sql`alter table ${sql.table(table)} drop constraint ${sql.id(name)}`.execute(db);
  }
  for (const [table, name, deletes] of CASCADES) {
    await sql
      .raw(`create function ${name}() returns trigger language plpgsql as $$
        begin
          ${deletes}
          return null;
        end $$`)
      .execute(db);
    await sql
      .raw(`create trigger ${name} after delete on ${table}
        referencing old table as gone
        for each statement execute function ${name}()`)
      .execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [table, name] of CASCADES) {
    await sql.raw(`drop trigger ${name} on ${table}`).execute(db);
    await sql.raw(`drop function ${name}()`).execute(db);
  }
  for (const [table, name, definition] of FOREIGN_KEYS) {
    await sql.raw(`alter table ${table} add constraint ${name} ${definition}`).execute(db);
  }
}
