/**
 * Which answer each stream's rows were last built from (docs/warehouse.md, "Answers
 * applied"): one row per business, the `raw_bodies.body_hash` of each of its reads whose
 * rows the sync last wrote in full (no record quarantined, no removal held), and the write
 * path that wrote them, and for the two streams that write a row per day (listings' daily
 * accuracy counts, ranks) the day they were written for. A read whose body is the one
 * recorded (that day, for those two) is not parsed or written again: the rows already say
 * what it says. Null: not known, the next read is applied.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('business_answers')
    .addColumn('business_id', 'bigint', (c) =>
      c.primaryKey().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('applied_by', 'text', (c) => c.notNull())
    .addColumn('business_hash', 'text')
    .addColumn('listings_hash', 'text')
    .addColumn('listings_on', 'date')
    .addColumn('reviews_hash', 'text')
    .addColumn('socials_hash', 'text')
    .addColumn('rankings_hash', 'text')
    .addColumn('rankings_on', 'date')
    .addColumn('keywords_hash', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('business_answers').execute();
}
