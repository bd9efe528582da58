/**
 * Volume drops (docs/warehouse.md, "How removals work"): a read that would remove most of
 * a business's rows of a stream is held, and its removals apply only when the next run
 * sees the same drop. `businesses.removals_held` records, per stream, the drop being held
 * (the run that held it, when, the stored and answered counts); null when none is. It
 * lives on the business row because every business write locks and reads that row
 * already, so knowing what is held costs no statement.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('businesses').addColumn('removals_held', 'jsonb').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('businesses').dropColumn('removals_held').execute();
}
