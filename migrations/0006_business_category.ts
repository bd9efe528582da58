/**
 * A business's category: `businesses.sub_category_name`, the only place the upstream
 * names it is operation 4's answer (docs/upstream.md, Fields). The reads (operations 1–3)
 * never serve it, so a sync leaves the column as it is: `api businesses create` sets it,
 * `api businesses update` with a new `sub_category_id` sets it from the `sub_categories`
 * reference table (null when that id is not known there). Null for businesses created
 * outside listings-sync.
 *
 * Never edit this file once it has landed: add the next numbered file instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('businesses').addColumn('sub_category_name', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('businesses').dropColumn('sub_category_name').execute();
}
