/**
 * Alerts beyond listings (the rule kinds of `src/alerts`):
 * - `business_id` may be null: `sync_failed` and `sync_stale` are about a run or an
 *   account, not a business;
 * - `keyword` and `review_id` name what a `rank_drop` or `low_rating_review` is about;
 * - `details` (jsonb) holds what changed, for messages and `listings-sync alerts`
 *   (ranks before and after, a review's rating and author, a run's status and error).
 *
 * Never edit this file once it has landed: add a new numbered migration instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('alerts')
    .alterColumn('business_id', (c) => c.dropNotNull())
    .execute();
  await db.schema
    .alterTable('alerts')
    .addColumn('keyword', 'text')
    .addColumn('review_id', 'uuid')
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  // Flap damping looks up the last alert of one listing; the dispatcher pages by alert_id.
  await db.schema
    .createIndex('alerts_listing_idx')
    .on('alerts')
    .columns(['business_id', 'listing_id', 'detected_at'])
    .where(sql.ref('listing_id'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('alerts_listing_idx').execute();
  await db.schema
    .alterTable('alerts')
    .dropColumn('keyword')
    .dropColumn('review_id')
    .dropColumn('details')
    .execute();
  await sql`delete from alerts where business_id is null`.execute(db);
  await db.schema
    .alterTable('alerts')
    .alterColumn('business_id', (c) => c.setNotNull())
    .execute();
}
