/**
 * `sync_runs.trace_id`: the OpenTelemetry trace of the run, when traces are on
 * (docs/running.md, "Traces"), to go from a run to its trace; null otherwise and for every
 * run before this migration.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sync_runs').addColumn('trace_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sync_runs').dropColumn('trace_id').execute();
}
