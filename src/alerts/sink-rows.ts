/**
 * `alert_sinks` (docs/warehouse.md, "alert_sinks"; docs/alerts.md, "A sink added later"):
 * every SQL statement on the table. One row per sink name, written the first time a
 * dispatcher runs with it; what a new sink does with the older alerts is src/alerts'
 * (src/alerts/outbox.ts, `recordSinksSeen`).
 */
import type { ColumnType, Kysely } from 'kysely';
import type { Database, Db, Timestamp } from '../warehouse/database.ts';

type Backlog = AlertSinksTable['backlog'];

/**
 * Inserts a row for each sink not seen before, at `at`; returns those inserted. A sink
 * seen before keeps its row. Inside the caller's transaction, a second dispatcher that
 * inserts the same sink meanwhile waits on the row.
 */
export async function insertNewSinks(
  db: Db,
  sinks: readonly { name: string; backlog: Backlog }[],
  at: Date,
): Promise<{ sink: string; backlog: Backlog }[]> {
  if (sinks.length === 0) return [];
  return db
    .insertInto('alert_sinks')
    .values(
      sinks.map((sink) => ({
        sink: sink.name,
        first_seen_at: at,
        backlog: sink.backlog,
      })),
    )
    .onConflict((oc) => oc.column('sink').doNothing())
    .returning(['sink', 'backlog'])
    .execute();
}

/** Records how many older alerts a sink was marked as skipping when first seen. */
export async function setSinkSkipped(db: Db, sink: string, skipped: number): Promise<void> {
  await db.updateTable('alert_sinks').set({ skipped }).where('sink', '=', sink).execute();
}

/** Every sink ever seen, oldest first (what `listings-sync alerts` says of each). */
export async function sinksSeen(
  db: Kysely<Database>,
): Promise<{ sink: string; firstSeenAt: Date; backlog: Backlog; skipped: number }[]> {
  const rows = await db
    .selectFrom('alert_sinks')
    .select(['sink', 'first_seen_at', 'backlog', 'skipped'])
    .orderBy('first_seen_at')
    .orderBy('sink')
    .execute();
  return rows.map((row) => ({
    sink: row.sink,
    firstSeenAt: row.first_seen_at,
    backlog: row.backlog,
    skipped: row.skipped,
  }));
}

/**
 * Migration 0018: one row per sink name, written the first time a dispatcher runs with it
 * (docs/warehouse.md, "alert_sinks").
 */
export interface AlertSinksTable {
  sink: string;
  first_seen_at: Timestamp;
  /** ALERT_BACKLOG when the sink was first seen. */
  backlog: 'skip' | 'send';
  /** How many alerts raised before it were marked as skipping it. */
  skipped: ColumnType<number, number | undefined, number>;
}

declare module '../warehouse/database.ts' {
  interface Database {
    alert_sinks: AlertSinksTable;
  }
}
