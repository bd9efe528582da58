/**
 * What a replay needs to read a run as the run read it (docs/operations.md, "Replay"):
 *
 * - `sync_runs.settings`: the settings that shaped the run's writes (the answer bounds and
 *   the body limit of its client), so that its replay parses with the same ones; null for
 *   runs before this migration (their replay uses the defaults);
 * - `raw_reads.uncommitted`: true for a read of a business whose transaction never
 *   committed (the run stopped, or the business failed): kept for `raw show`, never
 *   replayed as written.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sync_runs').addColumn('settings', 'jsonb').execute();
  await db.schema
    .alterTable('raw_reads')
    .addColumn('uncommitted', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('raw_reads').dropColumn('uncommitted').execute();
  await db.schema.alterTable('sync_runs').dropColumn('settings').execute();
}
