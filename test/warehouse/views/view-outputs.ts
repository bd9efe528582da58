/**
 * Every BI view's columns and rows, in a stable order: what a migration must not change.
 * The two ages of v_review_response_sla run to now(), so they are left out.
 */
import { type Kysely, sql } from 'kysely';

export const BI_VIEWS = [
  'v_rank_daily',
  'v_rank_latest',
  'v_listing_accuracy',
  'v_listing_accuracy_daily',
  'v_newly_inaccurate',
  'v_review_daily',
  'v_review_response_sla',
] as const;

/** The local-SEO views of migration 0019 (docs/warehouse.md, "Local-SEO views"). */
export const LOCAL_SEO_VIEWS = [
  'v_visibility_daily',
  'v_listing_fixes',
  'v_listing_field_accuracy_daily',
  'v_review_velocity_weekly',
  'v_location_scorecard',
] as const;

/** Relations whose output a conversion keeps: the views, and `rank_observations` as BI reads it. */
const RELATIONS = [...BI_VIEWS, 'rank_observations'] as const;

const CLOCK_COLUMNS = new Set(['oldest_unanswered_age_hours', 'average_unanswered_age_hours']);
/** Before 0005 the table also held `observed_at` and `run_id`, which the view no longer has. */
const RANK_OBSERVATION_COLUMNS = new Set(['business_id', 'keyword', 'site', 'observed_on', 'rank']);

export interface RelationOutput {
  columns: string[];
  rows: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: any schema's database will do
export async function viewOutputs(db: Kysely<any>): Promise<Record<string, RelationOutput>> {
  const out: Record<string, RelationOutput> = {};
  for (const relation of RELATIONS) {
    const { rows: columns } = await sql<{ column_name: string; data_type: string }>`
      select column_name, data_type from information_schema.columns
      where table_schema = current_schema() and table_name = ${relation}
      order by ordinal_position`.execute(db);
    const kept = columns.filter(
      (c) =>
        !CLOCK_COLUMNS.has(c.column_name) &&
        (relation !== 'rank_observations' || RANK_OBSERVATION_COLUMNS.has(c.column_name)),
    );
    const { rows } = await sql<{ row: string }>`
      select row_to_json(t)::text as row
      from (select ${sql.join(kept.map((c) => sql.ref(c.column_name)))} from ${sql.table(relation)}) t
      order by 1`.execute(db);
    out[relation] = {
      columns: kept.map((c) => `${c.column_name} ${c.data_type}`),
      rows: rows.map((r) => r.row),
    };
  }
  return out;
}
