/**
 * Everything a reader of the warehouse sees (docs/warehouse.md): every documented table
 * and every BI view, row by row, in a stable order, for comparing a replayed schema with
 * the live one. Left out, as the replay contract says: the runs themselves (`sync_runs`,
 * every `run_id`), generated identities (and the series ids that point at them), when a
 * row was written rather than observed (`quarantined_at`), and alert delivery state.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/warehouse/database.ts';
import { CONTRACT_TABLES } from '../helpers/contract-tables.ts';
import type { TestWarehouse } from '../helpers/database.ts';
import { BI_VIEWS } from '../warehouse/views/view-outputs.ts';

const LEFT_OUT = new Set([
  'run_id',
  'last_run_id',
  'series_id',
  'alert_id',
  'quarantined_at',
  // When the warehouse wrote a row, not when the upstream was observed.
  'created_at',
  'updated_at',
  'delivered_at',
  'attempts',
  'last_error',
  'next_attempt_at',
  'claimed_at',
  'claimed_by',
  // The two ages of v_review_response_sla run to now().
  'oldest_unanswered_age_hours',
  'average_unanswered_age_hours',
]);

// `rank_months` (migration 0030) and `visibility_months` (0033) are read as BI reads them:
// through the views `rank_history` and `visibility_days`, the tables they pack, so the
// content compares with what was stored before them (the two tables of `rank_months`,
// migration 0040, as one: which of them holds a month row is not content).
const PACKED: Readonly<Record<string, string>> = {
  rank_months_past: 'rank_history',
  visibility_months: 'visibility_days',
};
const RELATIONS = [
  ...CONTRACT_TABLES.filter((t) => t !== 'sync_runs' && t !== 'rank_months_current').map(
    (t) => PACKED[t] ?? t,
  ),
  'rank_observations',
  ...BI_VIEWS,
];

// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
export async function documentedContent(db: Kysely<any>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const relation of RELATIONS) {
    const { rows: columns } = await sql<{ column_name: string; is_identity: string }>`
      select column_name, is_identity from information_schema.columns
      where table_schema = current_schema() and table_name = ${relation}
      order by ordinal_position`.execute(db);
    const kept = columns.filter((c) => c.is_identity !== 'YES' && !LEFT_OUT.has(c.column_name));
    if (kept.length === 0) throw new Error(`${relation} has no columns in this schema`);
    const { rows } = await sql<{ row: string }>`
      select row_to_json(t)::text as row
      from (select ${sql.join(kept.map((c) => sql.ref(c.column_name)))} from ${sql.table(relation)}) t
      order by 1`.execute(db);
    out[relation] = rows.map((r) => r.row);
  }
  return out;
}

/** Runs `read` with the current schema set to `schema`, on one connection of the warehouse. */
export async function inSchema<T>(
  warehouse: TestWarehouse,
  schema: string,
  read: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return warehouse.db.connection().execute(async (db) => {
    const { rows } = await sql<{ path: string }>`show search_path`.execute(db);
    await sql`set search_path to ${sql.id(schema)}`.execute(db);
    try {
      return await read(db);
    } finally {
      await sql.raw(`set search_path to ${rows[0]?.path ?? 'public'}`).execute(db);
    }
  });
}
