/**
 * `listings-sync replay --in-place` (docs/operations.md, "Raw zone and replay"): the live
 * schema rebuilt from its raw zone. Under the sync lock (no sync runs meanwhile), the
 * replay builds a fresh schema beside the live one, `<live>_rebuild`; one transaction then
 * carries over what no replay rebuilds and swaps the schemas by name:
 *
 * - the raw zone and the run history (`raw_bodies`, `raw_reads`, `sync_runs`) as they
 *   were, and every `run_id` the replay wrote pointed back at the kept run it replayed;
 * - what no sync reads from the upstream: `webhook_events`, `social_post_boosts`,
 *   `review_response_requests` and their events;
 * - alert delivery: a recomputed alert the live schema also had keeps its delivery state;
 *   one it did not have (a past night's, newly raised) is closed undelivered, so no sink
 *   hears of old news;
 * - `<live>` becomes `<live>_before_replay` (kept for the operator to check and drop), and
 *   `<live>_rebuild` becomes `<live>`.
 *
 * Readers see the old schema until the transaction commits and the new one after: BI
 * never sees half. Writers of the carried-over tables (webhook intake, the dispatcher)
 * wait for the commit, so nothing they write is lost with the old schema.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { AlertRules } from '../alerts/rules.ts';
import type { Logger } from '../log.ts';
import type { Warehouse } from '../warehouse/connection.ts';
import type { Database } from '../warehouse/database.ts';
import { tryAcquireSyncLock } from '../warehouse/sync-lock.ts';
import {
  currentSchema,
  type ReplayProgress,
  type ReplayResult,
  replay,
  SCHEMA_NAME,
} from './replay.ts';
import { NIGHTLY_LOCK_KEY } from './run.ts';

export interface InPlaceOptions {
  warehouse: Warehouse;
  /** PostgreSQL: the live warehouse's URL, to open the schema built beside it. */
  databaseUrl?: string;
  alertRules?: AlertRules;
  logger: Logger;
  onProgress?: (progress: ReplayProgress) => void;
}

export interface InPlaceResult extends ReplayResult {
  /** The live schema, rebuilt. */
  schema: string;
  /** Where the schema it replaced is kept. */
  kept: string;
}

/** A sync holds the lock: the rebuild would miss what it writes. */
export class ReplayLockedError extends Error {
  readonly code = 'SYNC_LOCKED';
}

/** Tables the replay does not rebuild, copied from the live schema as they are (parents first). */
export const CARRIED_OVER = [
  'sync_runs',
  'raw_bodies',
  'raw_reads',
  'webhook_events',
  'social_post_boosts',
  'review_response_requests',
  'review_response_request_events',
] as const;

/** Alert delivery state, kept by `dedupe_key` (the columns the warehouse has of these). */
const DELIVERY_COLUMNS = [
  'delivered_at',
  'delivered_sinks',
  'attempts',
  'last_error',
  'next_attempt_at',
  'claimed_at',
  'claimed_by',
];

export const NOT_DELIVERED_NOTE = 'recomputed by replay --in-place for a past night; not delivered';

/** The schema built beside `live`, and the name the replaced schema is kept under. */
export function inPlaceSchemas(live: string): { build: string; kept: string } {
  return { build: `${live}_rebuild`, kept: `${live}_before_replay` };
}

async function schemaExists(db: Kysely<Database>, schema: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_namespace where nspname = ${schema}`.execute(db);
  return (rows[0]?.n ?? 0) > 0;
}

export async function replayInPlace(options: InPlaceOptions): Promise<InPlaceResult> {
  const { warehouse, logger } = options;
  const db = warehouse.db;
  const live = await currentSchema(db);
  const { build, kept } = inPlaceSchemas(live);
  for (const name of [build, kept]) {
    if (!SCHEMA_NAME.test(name)) {
      throw new Error(
        `replay --in-place needs the schema name "${name}" beside the live "${live}", ` +
          'and that is not a plain lower-case name of at most 63 characters.',
      );
    }
  }
  if (await schemaExists(db, kept)) {
    throw new Error(
      `Schema "${kept}" is left from an earlier replay --in-place. Drop it once you no longer ` +
        `need it (DROP SCHEMA ${kept} CASCADE) and run again.`,
    );
  }
  if (await schemaExists(db, build)) {
    throw new Error(
      `Schema "${build}" exists; replay --in-place builds there. Drop it (DROP SCHEMA ${build} CASCADE) and run again.`,
    );
  }
  const lock = await tryAcquireSyncLock(warehouse, { exclusive: [NIGHTLY_LOCK_KEY] });
  if (!lock) {
    throw new ReplayLockedError(
      `A sync is running against schema "${live}" (it holds the sync lock); replay --in-place ` +
        'would miss what it writes, so it did not start. Wait for the sync to finish and run again.',
    );
  }
  try {
    let result: ReplayResult;
    try {
      result = await replay({
        warehouse,
        ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
        into: build,
        ...(options.alertRules ? { alertRules: options.alertRules } : {}),
        logger,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
    } catch (error) {
      await sql`drop schema if exists ${sql.id(build)} cascade`.execute(db);
      throw error;
    }
    try {
      await db.transaction().execute((trx) => swap(trx, live, build, kept, result.runIds));
    } catch (error) {
      await sql`drop schema if exists ${sql.id(build)} cascade`.execute(db);
      throw error;
    }
    logger.info({ schema: live, kept }, 'replay --in-place swapped the rebuilt schema in');
    return { ...result, schema: live, kept };
  } finally {
    await lock.release();
  }
}

interface Column {
  column_name: string;
  is_identity: string;
  is_generated: string;
}

async function columnsOf(trx: Transaction<Database>, schema: string, table: string) {
  const { rows } = await sql<Column>`
    select column_name, is_identity, is_generated from information_schema.columns
    where table_schema = ${schema} and table_name = ${table}
    order by ordinal_position`.execute(trx);
  return rows;
}

async function swap(
  trx: Transaction<Database>,
  live: string,
  build: string,
  kept: string,
  runIds: ReadonlyMap<string, string>,
): Promise<void> {
  // Writers of what is carried over wait from here to the commit; readers do not.
  await sql`lock table ${sql.join(
    [...CARRIED_OVER, 'alerts'].map((t) => sql.id(live, t)),
  )} in share row exclusive mode`.execute(trx);

  // Every run id the replay wrote names the kept run it replayed.
  const { rows: runColumns } = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
      join information_schema.tables t
        on t.table_schema = c.table_schema and t.table_name = c.table_name
     where c.table_schema = ${build} and t.table_type = 'BASE TABLE'
       and c.column_name in ('run_id', 'last_run_id')
     order by 1, 2`.execute(trx);
  const pairs = [...runIds];
  if (pairs.length > 0) {
    const mapping = sql`(values ${sql.join(
      pairs.map(([replayed, original]) => sql`(${replayed}::uuid, ${original}::uuid)`),
    )}) as m(replayed, original)`;
    for (const { table_name, column_name } of runColumns) {
      if ((CARRIED_OVER as readonly string[]).includes(table_name)) continue;
      await sql`update ${sql.id(build, table_name)} t set ${sql.id(column_name)} = m.original
        from ${mapping} where t.${sql.id(column_name)} = m.replayed`.execute(trx);
    }
  }

  // What the replay does not rebuild: the live schema's rows, as they are.
  for (const table of [...CARRIED_OVER].reverse()) {
    await sql`delete from ${sql.id(build, table)}`.execute(trx);
  }
  for (const table of CARRIED_OVER) {
    const columns = (await columnsOf(trx, build, table)).filter((c) => c.is_generated !== 'ALWAYS');
    const list = sql.join(columns.map((c) => sql.id(c.column_name)));
    await sql`insert into ${sql.id(build, table)} (${list}) overriding system value
      select ${list} from ${sql.id(live, table)}`.execute(trx);
    for (const identity of columns.filter((c) => c.is_identity === 'YES')) {
      await sql`select setval(
          pg_get_serial_sequence(${`"${build}"."${table}"`}, ${identity.column_name}),
          coalesce((select max(${sql.id(identity.column_name)}) from ${sql.id(build, table)}), 0) + 1,
          false)`.execute(trx);
    }
  }

  // Alert delivery: as it was for the alerts the live schema had; old news closed.
  const alertColumns = new Set((await columnsOf(trx, build, 'alerts')).map((c) => c.column_name));
  const delivery = DELIVERY_COLUMNS.filter((c) => alertColumns.has(c));
  await sql`update ${sql.id(build, 'alerts')} n set ${sql.join(
    delivery.map((c) => sql`${sql.id(c)} = o.${sql.id(c)}`),
  )} from ${sql.id(live, 'alerts')} o where o.dedupe_key = n.dedupe_key`.execute(trx);
  await sql`update ${sql.id(build, 'alerts')} n
       set delivered_at = now(), last_error = ${NOT_DELIVERED_NOTE}
     where n.delivered_at is null
       and not exists (select 1 from ${sql.id(live, 'alerts')} o where o.dedupe_key = n.dedupe_key)`.execute(
    trx,
  );

  await sql`alter schema ${sql.id(live)} rename to ${sql.id(kept)}`.execute(trx);
  await sql`alter schema ${sql.id(build)} rename to ${sql.id(live)}`.execute(trx);
}
