/**
 * Per-sink delivery of alerts: `alerts.delivered_sinks` lists the sinks (`slack`,
 * `webhook`) that have taken an alert, so a retry after one sink failed does not send it
 * again to a sink that already took it. An alert is delivered (`delivered_at`) when every
 * configured sink is in the list.
 *
 * Never edit this file once it has landed: add `0003_….ts` instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('alerts')
    .addColumn('delivered_sinks', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('alerts').dropColumn('delivered_sinks').execute();
}
