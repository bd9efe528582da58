/**
 * Rank history (docs/warehouse.md, "Rank history"): `rank_series` names each business,
 * keyword and site once; `rank_history` holds one small row per series and UTC day, and
 * `rank_latest` is the read model `v_rank_latest` shows, written here in the business's
 * transaction. A second run on the same day rewrites only the ranks that changed; the
 * next day adds new rows. A rank of `-` upstream (searched, not ranked) is stored as NULL;
 * a day without a row was not collected.
 *
 * Every read here is bounded by the business's series, never by its history: the stored
 * state comes from `rank_latest` (one row per series), and the refresh of `rank_latest`
 * reads at most the 31 days before each series' latest day plus one row per comparison.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { RankObservation } from '../api/types.ts';
import type { Database } from './database.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** The UTC calendar day of an instant, `YYYY-MM-DD`. */
export function observedOn(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** A series of this business as stored: its id and its latest observation, if any. */
interface StoredSeries {
  series_id: number;
  keyword: string;
  site: string;
  keyword_id: number | null;
  observed_on: string | null;
  rank: number | null;
}

/**
 * Writes the day's ranks of one business. Only ranks that are new for the day or differ
 * from the stored one are sent: a second run on the same day with no change writes nothing.
 */
export async function writeRankings(
  db: Db,
  ctx: BusinessWriteContext,
  ranks: readonly RankObservation[],
): Promise<WriteStats> {
  const day = observedOn(ctx.observedAt);
  // The last observation per keyword and site wins, as the upsert's own dedupe would have it.
  const latest = new Map(ranks.map((rank) => [rankKey(rank.keyword, rank.site), rank]));
  if (latest.size === 0) return addCounts({}, 'rank_observations', {});

  const stored = await storedSeries(db, ctx.businessId);
  const byKey = new Map(stored.map((s) => [rankKey(s.keyword, s.site), s]));
  const missing = [...latest.values()].filter((r) => !byKey.has(rankKey(r.keyword, r.site)));
  for (const created of await createSeries(db, ctx.businessId, missing)) {
    byKey.set(rankKey(created.keyword, created.site), created);
  }
  if (stored.some((s) => s.keyword_id === null)) await resolveKeywordIds(db, ctx.businessId);

  const seriesIds: number[] = [];
  const values: (number | null)[] = [];
  let laterDayStored = false;
  for (const [key, rank] of latest) {
    const series = byKey.get(key);
    if (!series) throw new Error(`rank_series has no row for ${rank.keyword} on ${rank.site}.`);
    if (series.observed_on === day && series.rank === rank.rank) continue;
    if (series.observed_on !== null && series.observed_on > day) laterDayStored = true;
    seriesIds.push(series.series_id);
    values.push(rank.rank);
  }
  const unchanged = latest.size - seriesIds.length;
  if (seriesIds.length === 0) return addCounts({}, 'rank_observations', { unchanged });

  const written = await upsertDay(db, day, seriesIds, values);
  // Only a run dated before a stored day (a clock set back) has successors to correct.
  if (laterDayStored) await relinkNextDays(db, day, seriesIds, values);
  await refreshLatest(db, seriesIds);
  return addCounts({}, 'rank_observations', {
    inserted: written.inserted,
    updated: written.updated,
    unchanged: unchanged + (seriesIds.length - written.inserted - written.updated),
  });
}

/** The business's series with their latest observation: one row per series. */
async function storedSeries(db: Db, businessId: number): Promise<StoredSeries[]> {
  const { rows } = await sql<StoredSeries>`
    select s.series_id, s.keyword, s.site, s.keyword_id, l.observed_on, l.rank
    from rank_series s
    left join rank_latest l on l.series_id = s.series_id
    where s.business_id = ${businessId}`.execute(db);
  return rows;
}

async function createSeries(
  db: Db,
  businessId: number,
  ranks: readonly RankObservation[],
): Promise<StoredSeries[]> {
  if (ranks.length === 0) return [];
  const { rows } = await sql<StoredSeries>`
    insert into rank_series (business_id, keyword, site, keyword_id)
    select ${businessId}::bigint, t.keyword, t.site, k.keyword_id
    from unnest(${ranks.map((r) => r.keyword)}::text[], ${ranks.map((r) => r.site)}::text[])
      as t(keyword, site)
    left join lateral (
      select min(k.keyword_id) as keyword_id from keywords k
      where k.business_id = ${businessId} and k.keyword = t.keyword and k.deleted_at is null
    ) k on true
    on conflict (business_id, keyword, site) do nothing
    returning series_id, keyword, site, keyword_id, null::text as observed_on,
      null::int as rank`.execute(db);
  return rows;
}

/** Series created before their keyword existed get its id once it does. */
async function resolveKeywordIds(db: Db, businessId: number): Promise<void> {
  await sql`
    update rank_series s set keyword_id = k.keyword_id
    from (
      select keyword, min(keyword_id) as keyword_id from keywords
      where business_id = ${businessId} and deleted_at is null
      group by keyword
    ) k
    where s.business_id = ${businessId} and s.keyword_id is null and s.keyword = k.keyword`.execute(
    db,
  );
}

/**
 * One statement for the day: new rows carry their series' previous observation (one
 * backward step in the primary key); a stored row is rewritten only when its rank differs.
 */
async function upsertDay(
  db: Db,
  day: string,
  seriesIds: readonly number[],
  values: readonly (number | null)[],
): Promise<{ inserted: number; updated: number }> {
  const { rows } = await sql<{ inserted: boolean }>`
    insert into rank_history (series_id, observed_on, rank, previous_rank, days_since_previous)
    select t.series_id, ${day}::date, t.rank, p.rank, ${day}::date - p.observed_on
    from unnest(${seriesIds}::int[], ${values}::smallint[]) as t(series_id, rank)
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = t.series_id and h.observed_on < ${day}::date
      order by h.observed_on desc limit 1
    ) p on true
    on conflict (series_id, observed_on) do update set rank = excluded.rank
      where rank_history.rank is distinct from excluded.rank
    returning (xmax = 0) as inserted`.execute(db);
  const inserted = rows.filter((r) => r.inserted).length;
  return { inserted, updated: rows.length - inserted };
}

/** The first stored day after `day` of each series now has `day` as its previous observation. */
async function relinkNextDays(
  db: Db,
  day: string,
  seriesIds: readonly number[],
  values: readonly (number | null)[],
): Promise<void> {
  await sql`
    update rank_history n
    set previous_rank = t.rank, days_since_previous = n.observed_on - ${day}::date
    from unnest(${seriesIds}::int[], ${values}::smallint[]) as t(series_id, rank)
    cross join lateral (
      select h.observed_on from rank_history h
      where h.series_id = t.series_id and h.observed_on > ${day}::date
      order by h.observed_on limit 1
    ) next_day
    where n.series_id = t.series_id and n.observed_on = next_day.observed_on
      and (n.previous_rank is distinct from t.rank
        or n.days_since_previous is distinct from n.observed_on - ${day}::date)`.execute(db);
}

/**
 * Recomputes `rank_latest` for the given series, as `v_rank_latest` defined it before the
 * read model: the comparison points are the last observation on or before 7 (30) days
 * before the latest one, and the 30-day figures cover the 31 days ending on it. Each
 * lateral is a bounded walk of the primary key: one row, or at most 31.
 */
async function refreshLatest(db: Db, seriesIds: readonly number[]): Promise<void> {
  await sql`
    insert into rank_latest (series_id, observed_on, rank, previous_observed_on, previous_rank,
      compared_7d_on, rank_7d_ago, compared_30d_on, rank_30d_ago, best_rank_30d,
      worst_rank_30d, observations_30d, unranked_days_30d)
    select t.series_id, l.observed_on, l.rank, l.observed_on - l.days_since_previous,
      l.previous_rank, w7.observed_on, w7.rank, w30.observed_on, w30.rank, m.best, m.worst,
      m.observations, m.unranked
    from unnest(${seriesIds}::int[]) as t(series_id)
    cross join lateral (
      select h.observed_on, h.rank, h.previous_rank, h.days_since_previous::int
      from rank_history h where h.series_id = t.series_id
      order by h.observed_on desc limit 1
    ) l
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = t.series_id and h.observed_on <= l.observed_on - 7
      order by h.observed_on desc limit 1
    ) w7 on true
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = t.series_id and h.observed_on <= l.observed_on - 30
      order by h.observed_on desc limit 1
    ) w30 on true
    cross join lateral (
      select min(h.rank) as best, max(h.rank) as worst, count(*) as observations,
        count(*) filter (where h.rank is null) as unranked
      from rank_history h
      where h.series_id = t.series_id and h.observed_on >= l.observed_on - 30
    ) m
    on conflict (series_id) do update set
      observed_on = excluded.observed_on, rank = excluded.rank,
      previous_observed_on = excluded.previous_observed_on,
      previous_rank = excluded.previous_rank, compared_7d_on = excluded.compared_7d_on,
      rank_7d_ago = excluded.rank_7d_ago, compared_30d_on = excluded.compared_30d_on,
      rank_30d_ago = excluded.rank_30d_ago, best_rank_30d = excluded.best_rank_30d,
      worst_rank_30d = excluded.worst_rank_30d, observations_30d = excluded.observations_30d,
      unranked_days_30d = excluded.unranked_days_30d
    where (rank_latest.observed_on, rank_latest.rank, rank_latest.previous_observed_on,
        rank_latest.previous_rank, rank_latest.compared_7d_on, rank_latest.rank_7d_ago,
        rank_latest.compared_30d_on, rank_latest.rank_30d_ago, rank_latest.best_rank_30d,
        rank_latest.worst_rank_30d, rank_latest.observations_30d,
        rank_latest.unranked_days_30d)
      is distinct from (excluded.observed_on, excluded.rank, excluded.previous_observed_on,
        excluded.previous_rank, excluded.compared_7d_on, excluded.rank_7d_ago,
        excluded.compared_30d_on, excluded.rank_30d_ago, excluded.best_rank_30d,
        excluded.worst_rank_30d, excluded.observations_30d, excluded.unranked_days_30d)`.execute(
    db,
  );
}

// Joins keyword and site: a character neither contains.
function rankKey(keyword: string, site: string): string {
  return `${keyword}\u0000${site}`;
}
