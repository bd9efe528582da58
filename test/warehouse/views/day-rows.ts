/**
 * Rank history as the releases before the month packing stored it, built independently of
 * the writers under test: for the migrations that pack it (0030 ranks, 0033 visibility) and
 * the tests that compare every documented view before and after them. What the upstream
 * served is kept as `Served`; `loadDayRows` writes it into a warehouse at 0022 as day rows
 * (each with its previous observation by a window function, as 0005 converted them),
 * `rank_latest` recomputed from them and `visibility_days` summed from them by this file's
 * own SQL, the way the writers of that release left them.
 */
import { type Kysely, sql } from 'kysely';
import type { RankObservation } from '../../../src/api/index.ts';
import { recomputeLatest } from '../../../src/warehouse/tables/rankings.ts';
import { CLICKS_PER_1000, UNRANKED_POSITION } from '../../../src/warehouse/tables/visibility.ts';
import { ACCOUNT } from '../fixtures.ts';
import { BI_VIEWS, LOCAL_SEO_VIEWS } from './view-outputs.ts';

/** The last migration before rank history was packed: its tables hold a row per day. */
export const DAY_ROWS_SCHEMA = '0022_business_answer_reads';

/** What the upstream served, last run of the day winning: `business|keyword|site` → day → rank. */
export type Served = Map<string, Map<string, number | null>>;

/** A small deterministic generator (mulberry32), so a failure replays. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const seriesKey = (businessId: number, keyword: string, site: string) =>
  `${businessId}|${keyword}|${site}`;

/** Records what a business was served on `day`. */
export function serve(served: Served, businessId: number, day: string, ranks: RankObservation[]) {
  for (const r of ranks) {
    const key = seriesKey(businessId, r.keyword, r.site);
    const days = served.get(key) ?? new Map<string, number | null>();
    days.set(day, r.rank);
    served.set(key, days);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the 0022 schema has no Database type here
export async function loadBusinesses(db: Kysely<any>, businesses: readonly number[]) {
  await sql`insert into accounts (name, user_email, base_url)
    values (${ACCOUNT}, 'ops@example.com', 'https://upstream.example')`.execute(db);
  await sql`insert into businesses (business_id, account_name, name, content_hash,
      first_seen_at, last_seen_at, profile_changed_at)
    select b, ${ACCOUNT}, 'Business ' || b, 'h', now(), now(), now()
    from unnest(${`{${businesses.join(',')}}`}::bigint[]) b`.execute(db);
}

/**
 * The observations as the release before 0030 stored them: a `rank_history` row per
 * series and day with its previous observation, `rank_latest` and `visibility_days`
 * computed from those rows.
 */
// biome-ignore lint/suspicious/noExplicitAny: the 0022 schema has no Database type here
export async function loadDayRows(db: Kysely<any>, served: Served): Promise<void> {
  const keys = [...served.keys()].sort();
  await sql`insert into rank_series (business_id, keyword, site)
    select split_part(k, '|', 1)::bigint, split_part(k, '|', 2), split_part(k, '|', 3)
    from unnest(${`{${keys.map((k) => JSON.stringify(k)).join(',')}}`}::text[]) k`.execute(db);
  const rows = keys.flatMap((key) =>
    [...(served.get(key) ?? [])].map(([day, value]) => ({ key, day, value })),
  );
  const literal = (values: readonly (string | number | null)[]) =>
    `{${values.map((v) => (v === null ? 'NULL' : JSON.stringify(String(v)))).join(',')}}`;
  await sql`
    insert into rank_history (series_id, observed_on, rank, previous_rank, days_since_previous)
    select s.series_id, t.day, t.rank, lag(t.rank) over w, t.day - lag(t.day) over w
    from unnest(${literal(rows.map((r) => r.key))}::text[], ${literal(rows.map((r) => r.day))}::date[],
      ${literal(rows.map((r) => r.value))}::smallint[]) as t(key, day, rank)
    join rank_series s on s.business_id = split_part(t.key, '|', 1)::bigint
      and s.keyword = split_part(t.key, '|', 2) and s.site = split_part(t.key, '|', 3)
    window w as (partition by s.series_id order by t.day)
    order by t.day, s.series_id`.execute(db);
  const { rows: ids } = await sql<{ id: number }>`
    select series_id as id from rank_series`.execute(db);
  await recomputeLatest(
    db,
    ids.map((r) => r.id),
  );
  await sql`
    insert into visibility_days (business_id, day, site, keywords_tracked, keywords_ranked,
      position_sum, top3, top10, clicks_per_1000)
    select s.business_id, h.observed_on, s.site, count(*), count(h.rank),
      sum(coalesce(h.rank, ${UNRANKED_POSITION})), count(*) filter (where h.rank <= 3),
      count(*) filter (where h.rank <= 10),
      coalesce(sum((${`{${CLICKS_PER_1000.join(',')}}`}::int[])[h.rank]), 0)
    from rank_history h
    join rank_series s on s.series_id = h.series_id
    group by s.business_id, h.observed_on, s.site`.execute(db);
}

/** Every relation that shows rank history, keyed by what BI sees (no series ids). */
export const RANK_RELATIONS = {
  rank_history: `select s.business_id, s.keyword, s.site, h.observed_on, h.rank,
      h.previous_rank, h.days_since_previous
    from rank_history h join rank_series s on s.series_id = h.series_id`,
  rank_observations: 'select * from rank_observations',
  v_rank_daily: 'select * from v_rank_daily',
  v_rank_latest: 'select * from v_rank_latest',
  visibility_days: 'select * from visibility_days',
  v_visibility_daily: 'select * from v_visibility_daily',
} as const;

/** Columns that run to now() (the SLA view's ages): not a property of the stored rows. */
const CLOCK_COLUMNS = ['oldest_unanswered_age_hours', 'average_unanswered_age_hours'];

/**
 * The rows of `RANK_RELATIONS` and, with `every`, of every documented view, as JSON text
 * in a stable order.
 */
// biome-ignore lint/suspicious/noExplicitAny: either schema will do
export async function outputs(db: Kysely<any>, every: boolean): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  const queries: [string, string][] = Object.entries(RANK_RELATIONS);
  if (every) {
    for (const view of [...BI_VIEWS, ...LOCAL_SEO_VIEWS]) {
      queries.push([view, `select * from ${view}`]);
    }
  }
  for (const [name, query] of queries) {
    const { rows } = await sql<{ row: string }>`
      select (to_jsonb(t) - ${`{${CLOCK_COLUMNS.join(',')}}`}::text[])::text as row
      from (${sql.raw(query)}) t order by 1`.execute(db);
    out[name] = rows.map((r) => r.row);
  }
  return out;
}
