/**
 * What a sink does with the alerts raised before it was configured (ALERT_BACKLOG;
 * docs/alerts.md, "A sink added later"):
 *
 * - `alert_sinks`: one row per sink name (`slack`, `webhook`) the first time a dispatcher
 *   runs with it: when (`first_seen_at`), what ALERT_BACKLOG said then (`backlog`: `skip`
 *   or `send`), and how many older alerts it skipped. The row is never rewritten, so a
 *   restart, a second replica or a later change of ALERT_BACKLOG does not change the
 *   decision, and a sink removed and added back is not new.
 * - `alerts.skipped_sinks`: the sinks that will not get the alert because it was raised
 *   before they were configured (the counterpart of `delivered_sinks`). An alert that no
 *   configured sink is left to take is closed as the replay closes old news: `delivered_at`
 *   set, `delivered_sinks` without the sink, and `last_error` saying why it was not sent.
 *
 * No existing row changes: `skipped_sinks` is `[]` for every alert until a sink is first
 * seen under `skip`.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('alert_sinks')
    .addColumn('sink', 'text', (c) => c.primaryKey())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('backlog', 'text', (c) => c.notNull().check(sql`backlog in ('skip', 'send')`))
    .addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('alerts')
    .addColumn('skipped_sinks', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('alerts').dropColumn('skipped_sinks').execute();
  await db.schema.dropTable('alert_sinks').execute();
}
