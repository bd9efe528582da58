/**
 * The report's window and scope (docs/running.md, "The report"): the connection its queries
 * share, the days of collected history (mostly from the read models `rank_latest` and
 * `listing_accuracy_days`: docs/warehouse.md, "Rank history" and "Read models"), the
 * business asked for (`businesses`), and the scope every report-* module filters by. The report's other queries are grouped by what
 * they read: report/queries/kpis.ts, report/queries/scorecard.ts, report/queries/ranks.ts, report/queries/listings.ts and
 * report/queries/reviews.ts.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database, Db } from '../../warehouse/database.ts';

/** The UTC days a report shows, and the business it is about (none: the whole warehouse). */
export interface ReportWindow {
  firstDay: string;
  lastDay: string;
  businessId: number | undefined;
}

/**
 * A filter on a business id column: `true` when no business is chosen, so one template
 * serves both scopes.
 */
export type ReportScope = (column: string) => RawBuilder<unknown>;

export function reportScope(businessId: number | undefined): ReportScope {
  return (column: string) =>
    businessId === undefined ? sql`true` : sql`${sql.ref(column)} = ${businessId}`;
}

/** The window's first and last day as SQL dates. */
export function windowBounds(window: ReportWindow): {
  windowStart: RawBuilder<unknown>;
  windowEnd: RawBuilder<unknown>;
} {
  return {
    windowStart: sql`${window.firstDay}::date`,
    windowEnd: sql`${window.lastDay}::date`,
  };
}

/**
 * A daily view's rows summed per day over the window and scope, in day order: `day` as
 * `YYYY-MM-DD`, then `sums`, the select list's aggregates over the view's columns.
 */
export async function sumDailyView<T>(
  db: Db,
  window: ReportWindow,
  view: 'v_listing_accuracy_daily' | 'v_review_daily',
  sums: RawBuilder<unknown>,
): Promise<T[]> {
  const scope = reportScope(window.businessId);
  const { windowStart, windowEnd } = windowBounds(window);
  const { rows } = await sql<T>`
      select to_char(day, 'YYYY-MM-DD') as day, ${sums}
      from ${sql.table(view)} d
      where d.day between ${windowStart} and ${windowEnd} and ${scope('d.business_id')}
      group by day order by day`.execute(db);
  return rows;
}

/**
 * Runs `read` on one connection with `jit` off: the report's queries are many and short,
 * and on PostgreSQL the JIT compiler costs each of them more than it saves (PGlite has no
 * JIT provider; the setting is harmless there).
 */
export async function onReportConnection<T>(
  db: Kysely<Database>,
  read: (connection: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (connection) => {
    await sql`set jit = off`.execute(connection);
    try {
      return await read(connection);
    } finally {
      await sql`reset jit`.execute(connection);
    }
  });
}

/**
 * The first and the latest UTC day with any collected data (null each when the warehouse
 * holds none). Read from the read models (`rank_latest`, `listing_accuracy_days`, indexed
 * by day), not from a year of rank history.
 */
export async function collectedDays(
  db: Db,
): Promise<{ first: string | null; last: string | null }> {
  const { rows } = await sql<{ first: string | null; last: string | null }>`
      select
        to_char(least(
          (select min(day) from listing_accuracy_days),
          (select min((observed_at at time zone 'UTC')::date) from listing_status_history)
        ), 'YYYY-MM-DD') as first,
        to_char(greatest(
          (select max(observed_on) from rank_latest),
          (select max(day) from listing_accuracy_days),
          (select max((observed_at at time zone 'UTC')::date) from listing_status_history),
          (select max((last_synced_at at time zone 'UTC')::date) from accounts)
        ), 'YYYY-MM-DD') as last`.execute(db);
  return { first: rows[0]?.first ?? null, last: rows[0]?.last ?? null };
}

/** The stored business's name, archived or not; undefined when the warehouse has no such id. */
export async function businessNameOf(db: Db, businessId: number): Promise<string | undefined> {
  const { rows } = await sql<{
    name: string;
  }>`select name from businesses where business_id = ${businessId}`.execute(db);
  return rows[0]?.name;
}

/** The database's `now()`: the end of the scorecard's 90 days when it has no rows to carry it. */
export async function databaseNow(db: Db): Promise<Date | undefined> {
  const { rows } = await sql<{ now: Date }>`select now()`.execute(db);
  return rows[0]?.now;
}

/**
 * Whether there is anything to report: no business and no rank day means a sync never ran
 * (or loaded nothing), and `listings-sync report` refuses the empty warehouse.
 */
export async function warehouseIsEmpty(db: Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ any: boolean }>`
    select exists (select 1 from businesses) or exists (select 1 from rank_observations) as any`.execute(
    db,
  );
  return !rows[0]?.any;
}
