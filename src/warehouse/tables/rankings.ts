/**
 * Rank history (docs/warehouse.md, "Rank history"): `rank_series` names each business,
 * keyword and site once; `rank_months` holds one row per series and UTC month, its days'
 * ranks packed in an array (NULL: not collected; -1: searched, not ranked, which the
 * `rank_history` view shows as a NULL rank), and `rank_latest` is the read model
 * `v_rank_latest` shows, written here in the business's transaction, as is the day's
 * visibility per site (`visibility_months`, visibility.ts). A night sets today's element of each
 * series' current month row, the only row it rewrites; a second run on the same day
 * rewrites only the ranks that changed.
 *
 * The nightly write reads no history: what is stored comes from `rank_latest` (one row per
 * series, holding its last 31 days), the next `rank_latest` row is computed from it
 * (`nextLatest`), and a new month row takes its previous observation from it.
 * Only a run dated before a series' latest day (a clock set back) reads history, bounded:
 * the month rows around that day, and the history behind the 31 days before the latest.
 */

import { type ColumnType, type Generated, sql } from 'kysely';
import type { RankObservation, rankObservationShape } from '../../api/index.ts';
import { addDays, daysBetween, utcDay } from '../../calendar-day.ts';
import type { Db, TableColumns } from '../database.ts';
import { arrayLiteral } from '../write/bulk-write.ts';
import type { Change, LatestState } from '../write/changes.ts';
import {
  day,
  history,
  OF_BUSINESS,
  type Owner,
  PER_BUSINESS,
  type ReplayTable,
} from '../write/replay-table.ts';
import type { BusinessWriteContext, StreamWriter } from '../write/write-context.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';
import {
  sumBySite,
  VISIBILITY_FIGURES,
  writeVisibilityDay,
  writeVisibilitySites,
} from './visibility.ts';

/*
 * The tables this writer writes, as Kysely sees them (`Database` in database.ts lists
 * them). `visibility_months` is written in SQL only (visibility.ts) and has no type.
 */

/**
 * `rank_observations` is a view since migration 0005: the observations of `rank_history`
 * with their series' business, keyword and site. Read-only.
 */
export interface RankObservationsView {
  business_id: number;
  keyword: string;
  site: string;
  /** UTC day of the observation, `YYYY-MM-DD`. */
  observed_on: ColumnType<string, never, never>;
  rank: ColumnType<number | null, never, never>;
}

/**
 * One business, keyword and site whose rank is collected: an observation's stored columns
 * (`rankObservationShape`, src/api/rankings.ts) and the writer's own.
 */
export interface RankSeriesTable extends TableColumns<typeof rankObservationShape> {
  series_id: Generated<number>;
  business_id: number;
  /** The upstream keyword id, where the keyword resolves to one of the business's keywords. */
  keyword_id: number | null;
}

/**
 * One series in one UTC month (migration 0030): `ranks[d]` is day d's rank; NULL: not
 * collected that day, `NOT_RANKED` (-1): searched, not ranked. The array ends at the
 * month's last collected day. `rank_months` is a view since migration 0040, over
 * `rank_months_current` (each series' latest month, the row a night rewrites, on pages
 * kept half free so that the rewrite stays in place) and `rank_months_past` (every earlier
 * month, packed): a row is copied to the past table once, when its series' first day of a
 * later month is written, and the current row becomes that month's.
 */
export interface RankMonthsTable {
  series_id: number;
  /** The month's first day, `YYYY-MM-DD`. */
  month: ColumnType<string, string, string>;
  ranks: (number | null)[];
  /** The series' last observation before the month; NULL: none (or, for the rank, not ranked). */
  previous_on: ColumnType<string | null, string | null, string | null>;
  previous_rank: number | null;
}

/**
 * `rank_history` is a view since migration 0030: one row per series and collected day of
 * `rank_months`, with the series' previous observation. Read-only.
 */
export interface RankHistoryTable {
  series_id: ColumnType<number, never, never>;
  observed_on: ColumnType<string, never, never>;
  /** NULL: searched, not ranked. */
  rank: ColumnType<number | null, never, never>;
  /** The series' previous observation: its rank, and how many days before this one. */
  previous_rank: ColumnType<number | null, never, never>;
  days_since_previous: ColumnType<number | null, never, never>;
}

/** Read model: per series, its latest observation and the comparisons `v_rank_latest` shows. */
export interface RankLatestTable {
  series_id: number;
  observed_on: ColumnType<string, string, string>;
  rank: number | null;
  previous_observed_on: ColumnType<string | null, string | null, string | null>;
  previous_rank: number | null;
  compared_7d_on: ColumnType<string | null, string | null, string | null>;
  rank_7d_ago: number | null;
  compared_30d_on: ColumnType<string | null, string | null, string | null>;
  rank_30d_ago: number | null;
  best_rank_30d: number | null;
  worst_rank_30d: number | null;
  observations_30d: number;
  unranked_days_30d: number;
  /** Bit i set: day `observed_on - i` was collected (i = 0..30). */
  window_collected: number;
  /** 31 entries: the rank of day `observed_on - i` at index i; NULL if not ranked or not collected. */
  window_ranks: (number | null)[];
  /** The latest observation older than the 31-day window. */
  before_window_on: ColumnType<string | null, string | null, string | null>;
  before_window_rank: number | null;
}

// Its tables in `Database` (database.ts), declared with the writer that writes them.
declare module '../database.ts' {
  interface Database {
    rank_observations: RankObservationsView;
    rank_series: RankSeriesTable;
    rank_history: RankHistoryTable;
    rank_months: RankMonthsTable;
    rank_months_current: RankMonthsTable;
    rank_months_past: RankMonthsTable;
    rank_latest: RankLatestTable;
  }
}

/** Days in the 30-day figures: the latest day and the 30 before it. */
const WINDOW = 31;

export type { LatestState } from '../write/changes.ts';

/** A series of this business as stored: its id and its `rank_latest` row, if any. */
interface StoredSeries {
  series_id: number;
  keyword: string;
  site: string;
  keyword_id: number | null;
  latest: LatestState | null;
}

/**
 * The `rank_latest` row after observing `rank` on `day`, from the stored row alone: the
 * window slides to end on `day`, observations that leave it leave their latest as
 * `before_window`, and every column of `v_rank_latest` is read off the window. `day` is on
 * or after the stored day (a day before it takes `recomputeLatest`).
 */
export function nextLatest(
  stored: LatestState | null,
  day: string,
  rank: number | null,
): LatestState {
  let ranks: (number | null)[] = Array.from({ length: WINDOW }, () => null);
  let collected = 0;
  let before: { on: string | null; rank: number | null } = { on: null, rank: null };
  let previous: { on: string | null; rank: number | null } = { on: null, rank: null };
  if (stored && stored.observed_on === day) {
    ranks = [...stored.window_ranks];
    collected = stored.window_collected;
    before = { on: stored.before_window_on, rank: stored.before_window_rank };
    previous = { on: stored.previous_observed_on, rank: stored.previous_rank };
  } else if (stored) {
    const shift = daysBetween(stored.observed_on, day);
    before = { on: stored.before_window_on, rank: stored.before_window_rank };
    for (let j = 0; j < WINDOW; j++) {
      if ((stored.window_collected & (1 << j)) === 0) continue;
      const i = j + shift;
      if (i < WINDOW) {
        collected |= 1 << i;
        ranks[i] = stored.window_ranks[j] ?? null;
      } else if (before.on === null || addDays(stored.observed_on, -j) > before.on) {
        before = { on: addDays(stored.observed_on, -j), rank: stored.window_ranks[j] ?? null };
      }
    }
    previous = { on: stored.observed_on, rank: stored.rank };
  }
  collected |= 1;
  ranks[0] = rank;

  let compared7: { on: string | null; rank: number | null } = before;
  for (let i = 7; i < WINDOW; i++) {
    if (collected & (1 << i)) {
      compared7 = { on: addDays(day, -i), rank: ranks[i] ?? null };
      break;
    }
  }
  const compared30 =
    collected & (1 << 30) ? { on: addDays(day, -30), rank: ranks[30] ?? null } : before;
  let best: number | null = null;
  let worst: number | null = null;
  let observations = 0;
  let unranked = 0;
  for (let i = 0; i < WINDOW; i++) {
    if ((collected & (1 << i)) === 0) continue;
    observations += 1;
    const value = ranks[i] ?? null;
    if (value === null) {
      unranked += 1;
      continue;
    }
    best = best === null ? value : Math.min(best, value);
    worst = worst === null ? value : Math.max(worst, value);
  }
  return {
    observed_on: day,
    rank,
    previous_observed_on: previous.on,
    previous_rank: previous.rank,
    compared_7d_on: compared7.on,
    rank_7d_ago: compared7.rank,
    compared_30d_on: compared30.on,
    rank_30d_ago: compared30.rank,
    best_rank_30d: best,
    worst_rank_30d: worst,
    observations_30d: observations,
    unranked_days_30d: unranked,
    window_collected: collected,
    window_ranks: ranks,
    before_window_on: before.on,
    before_window_rank: before.rank,
  };
}

export interface RankingsWriteResult {
  stats: WriteStats;
  /** The day's ranks, with each series' stored window, when any rank was sent; else none. */
  changes: Change[];
}

/**
 * Writes the day's ranks of one business. Only ranks that are new for the day or differ
 * from the stored one are sent: a second run on the same day with no change writes nothing.
 */
export async function writeRankings(
  db: Db,
  ctx: BusinessWriteContext,
  ranks: readonly RankObservation[],
): Promise<RankingsWriteResult> {
  const day = utcDay(ctx.observedAt);
  // The last observation per keyword and site wins, as the upsert's own dedupe would have it.
  const latest = new Map(ranks.map((rank) => [rankKey(rank.keyword, rank.site), rank]));
  if (latest.size === 0) return { stats: addCounts({}, 'rank_observations', {}), changes: [] };

  const stored = ctx.newBusiness ? [] : await storedSeries(db, ctx.businessId);
  const byKey = new Map(stored.map((s) => [rankKey(s.keyword, s.site), s]));
  const missing = [...latest.values()].filter((r) => !byKey.has(rankKey(r.keyword, r.site)));
  // Series created by this write: their ids are new, so no month or latest row has them.
  const created = new Set<number>();
  for (const series of await createSeries(db, ctx.businessId, missing, ctx.newBusiness === true)) {
    byKey.set(rankKey(series.keyword, series.site), series);
    created.add(series.series_id);
  }
  if (stored.some((s) => s.keyword_id === null)) await resolveKeywordIds(db, ctx.businessId);

  // In order: the series whose day is on or after their stored latest (computed here), and
  // those dated before it (recomputed from the history around that day).
  const forward: {
    seriesId: number;
    rank: number | null;
    stored: LatestState | null;
    next: LatestState;
  }[] = [];
  const backdated: { seriesId: number; rank: number | null; current: boolean }[] = [];
  for (const [key, rank] of latest) {
    const series = byKey.get(key);
    if (!series) throw new Error(`rank_series has no row for ${rank.keyword} on ${rank.site}.`);
    const stored = series.latest;
    if (stored?.observed_on === day && stored.rank === rank.rank) continue;
    if (stored && stored.observed_on > day) {
      // The day's month row is the series' current one when it shares the latest's month.
      const current = monthOf(stored.observed_on).month === monthOf(day).month;
      backdated.push({ seriesId: series.series_id, rank: rank.rank, current });
      continue;
    }
    forward.push({
      seriesId: series.series_id,
      rank: rank.rank,
      stored,
      next: nextLatest(stored, day, rank.rank),
    });
  }
  const sent = forward.length + backdated.length;
  const unchanged = latest.size - sent;
  if (sent === 0) return { stats: addCounts({}, 'rank_observations', { unchanged }), changes: [] };

  const written = { inserted: 0, updated: 0 };
  if (forward.length > 0) {
    // Every series new (a business's first ranks): plain inserts, no conflict to look for.
    const fresh = forward.every((f) => created.has(f.seriesId));
    const result = await writeForwardDay(db, day, forward, fresh);
    written.inserted += result.inserted;
    written.updated += result.updated;
    await upsertLatest(
      db,
      forward.map((f) => f.seriesId),
      forward.map((f) => f.next),
      fresh,
    );
  }
  if (backdated.length > 0) {
    for (const current of [true, false]) {
      const rows = backdated.filter((b) => b.current === current);
      if (rows.length === 0) continue;
      const table = current ? 'rank_months_current' : 'rank_months_past';
      const result = await upsertDay(
        db,
        table,
        day,
        rows.map((b) => b.seriesId),
        rows.map((b) => b.rank),
      );
      written.inserted += result.inserted;
      written.updated += result.updated;
    }
    const ids = backdated.map((b) => b.seriesId);
    await relinkNextMonths(db, day, ids);
    await recomputeLatest(db, ids);
  }
  if (written.inserted + written.updated > 0) {
    await writeVisibility(db, ctx.businessId, day, byKey.values(), [...forward, ...backdated]);
  }
  const stats = addCounts({}, 'rank_observations', {
    inserted: written.inserted,
    updated: written.updated,
    unchanged: unchanged + (sent - written.inserted - written.updated),
  });
  // Today's ranks with each series' stored `rank_latest` window (31 days), from which the
  // rules read the days before (`daysOfWindow`), not from history.
  const change: Change = {
    type: 'ranks_written',
    accountName: ctx.accountName,
    businessId: ctx.businessId,
    runId: ctx.runId,
    day,
    detectedAt: ctx.observedAt,
    series: [...latest].map(([key, rank]) => ({
      keyword: rank.keyword,
      site: rank.site,
      rank: rank.rank,
      before: byKey.get(key)?.latest ?? null,
    })),
  };
  return { stats, changes: [change] };
}

/**
 * The business's visibility of `day` after this write. The day's rank of every
 * series is known without reading history: what this write sent, else the series' stored
 * `rank_latest` row (its latest day, or its 31-day window for an earlier day). Only a day
 * older than some series' window is summed from that day's element of each series' month
 * row in `rank_months` (visibility.ts, `writeVisibilityDay`).
 */
async function writeVisibility(
  db: Db,
  businessId: number,
  day: string,
  series: Iterable<StoredSeries>,
  sent: readonly { seriesId: number; rank: number | null }[],
): Promise<void> {
  const sentRank = new Map(sent.map((s) => [s.seriesId, s.rank]));
  const ranks: { site: string; rank: number | null }[] = [];
  for (const s of series) {
    const rank = sentRank.get(s.series_id);
    if (rank !== undefined) {
      ranks.push({ site: s.site, rank });
      continue;
    }
    const stored = s.latest;
    if (!stored || stored.observed_on < day) continue;
    const i = daysBetween(day, stored.observed_on);
    if (i >= WINDOW) {
      await writeVisibilityDay(db, businessId, day);
      return;
    }
    if (stored.window_collected & (1 << i)) {
      ranks.push({ site: s.site, rank: stored.window_ranks[i] ?? null });
    }
  }
  await writeVisibilitySites(db, businessId, day, sumBySite(ranks));
}

const OF_SERIES = { table: 'rank_series', on: 'series_id' } as const;
const BY_SERIES: Owner = { parent: 'rank_series', on: 'series_id' };

/** How `replay --in-place` seeds and merges the ranks' tables (`StreamWriter.replay`). */
const RANKINGS_REPLAY: readonly ReplayTable[] = [
  // Rank series keep their ids (BI may hold them): the series of the same business,
  // keyword and site is the same series. Every series of a business is kept.
  {
    ...history('rank_series', ['series_id'], null),
    ids: { column: 'series_id', sameRowAs: ['business_id', 'keyword', 'site'] },
  },
  // The calendar of days: every live day is kept, and a month the replay starts is added.
  {
    table: 'rank_days',
    key: ['observed_on'],
    seed: 'copy',
    merge: { kind: 'upsert', leaveOut: [] },
  },
  // A month row is kept with the days before the window: the month the window starts in
  // keeps only its days before that day (the row ends there). Both live tables seed the
  // past one (through the view); the current table then takes each series' latest row.
  {
    ...history('rank_months_past', ['series_id', 'month'], day('month'), BY_SERIES, OF_SERIES),
    seed: {
      source: 'rank_months',
      before: day('month'),
      parent: OF_SERIES,
      overrides: { ranks: 't.ranks[1:(w.window_day - t.month)]' },
    },
  },
  {
    table: 'rank_months_current',
    key: ['series_id', 'month'],
    owner: BY_SERIES,
    seed: {
      derive: async (db, scratch) => {
        await sql`
          with latest as (
            delete from ${sql.id(scratch, 'rank_months_past')} p
            using (select series_id, max(month) as month
              from ${sql.id(scratch, 'rank_months_past')} group by series_id) x
            where p.series_id = x.series_id and p.month = x.month
            returning p.series_id, p.month, p.ranks, p.previous_on, p.previous_rank
          )
          insert into ${sql.id(scratch, 'rank_months_current')}
            (series_id, month, ranks, previous_on, previous_rank)
          select * from latest order by series_id`.execute(db);
      },
    },
    merge: PER_BUSINESS,
  },
  // The ranks' read model, as this writer computes it (`recomputeLatest`).
  {
    table: 'rank_latest',
    key: ['series_id'],
    owner: BY_SERIES,
    seed: {
      derive: async (db, scratch) => {
        const { rows } = await sql<{ id: number }>`
          select series_id as id from ${sql.id(scratch, 'rank_series')}`.execute(db);
        await recomputeLatest(
          db,
          rows.map((s) => s.id),
        );
      },
    },
    merge: PER_BUSINESS,
  },
  // Visibility's month rows likewise: the window's month keeps only its days before it.
  {
    ...history('visibility_months', ['business_id', 'month', 'site'], day('month')),
    seed: {
      before: day('month'),
      parent: OF_BUSINESS,
      overrides: Object.fromEntries(
        VISIBILITY_FIGURES.map((c) => [c, `t.${c}[1:(w.window_day - t.month)]`]),
      ),
    },
  },
];

/** The rankings stream's entry in `STREAM_WRITERS` (stream-writers.ts). */
export const rankingsWriter: StreamWriter<'rankings'> = {
  write: writeRankings,
  // A rank has no id of its own: its keyword and site name it.
  location: (rank) => `${rank.keyword} ${rank.site}`,
  firstSynced: 'rankings_first_synced_at',
  replay: RANKINGS_REPLAY,
};

/**
 * The ranks a stored `rank_latest` row remembers, by day, before `day`: its 31-day window
 * and the observation before it. Enough for the 8 days `rank_drop` compares.
 */
export function daysOfWindow(stored: LatestState | null, day: string): Map<string, number | null> {
  const days = new Map<string, number | null>();
  if (!stored) return days;
  if (stored.before_window_on !== null && stored.before_window_on < day) {
    days.set(stored.before_window_on, stored.before_window_rank);
  }
  for (let j = 0; j < WINDOW; j++) {
    if ((stored.window_collected & (1 << j)) === 0) continue;
    const on = addDays(stored.observed_on, -j);
    if (on < day) days.set(on, stored.window_ranks[j] ?? null);
  }
  return days;
}

/** The business's series with their latest observation: one row per series. */
async function storedSeries(db: Db, businessId: number): Promise<StoredSeries[]> {
  const { rows } = await sql<StoredSeries>`
    select s.series_id, s.keyword, s.site, s.keyword_id,
      case when l.series_id is not null then to_jsonb(l) - 'series_id' end as latest
    from rank_series s
    left join rank_latest l on l.series_id = s.series_id
    where s.business_id = ${businessId}`.execute(db);
  return rows;
}

/**
 * The business's series not stored yet, created; a series another transaction created
 * meanwhile is left out (the caller then finds none for it). A new business
 * (`newBusiness`) has none stored: a plain insert, no conflict looked for.
 */
async function createSeries(
  db: Db,
  businessId: number,
  ranks: readonly RankObservation[],
  newBusiness: boolean,
): Promise<StoredSeries[]> {
  if (ranks.length === 0) return [];
  const { rows } = await sql<StoredSeries>`
    insert into rank_series (business_id, keyword, site, keyword_id)
    select ${businessId}::bigint, t.keyword, t.site, k.keyword_id
    from unnest(${arrayLiteral(ranks.map((r) => r.keyword))}::text[], ${arrayLiteral(ranks.map((r) => r.site))}::text[])
      as t(keyword, site)
    left join (
      select keyword, min(keyword_id) as keyword_id from keywords
      where business_id = ${businessId} and deleted_at is null
      group by keyword
    ) k on k.keyword = t.keyword
    ${newBusiness ? sql`` : sql`on conflict (business_id, keyword, site) do nothing`}
    returning series_id, keyword, site, keyword_id, null::jsonb as latest`.execute(db);
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

/** `rank_months.ranks` stores a rank as is and "searched, not ranked" as this. */
const NOT_RANKED = -1;

/** A rank as `rank_months.ranks` stores it: never NULL (NULL there: not collected). */
const packed = (rank: number | null) => rank ?? NOT_RANKED;

/** The first day of `day`'s month, and `day`'s index in its month row (1 for the 1st). */
function monthOf(day: string): { month: string; index: number } {
  return { month: `${day.slice(0, 8)}01`, index: Number(day.slice(8, 10)) };
}

/**
 * A common table expression that adds the days of `day`'s month up to `day` to the
 * calendar the views read days from (`rank_days`, migrations 0030 and 0038), unless `day`
 * is there: it goes before any statement that writes `day`'s element of a month row. The
 * calendar reaches the last day written, not the rest of the month, so a window that runs
 * to the month's end reads no day that no row holds. (Two businesses writing a day first
 * at once: the second waits for the first's transaction, on that day's first write only.)
 */
function calendarOf(day: string) {
  const { month } = monthOf(day);
  return sql`with calendar as (
      insert into rank_days (observed_on, month, day)
      select g::date, ${month}::date, extract(day from g)::smallint
      from generate_series(${month}::date, ${day}::date, interval '1 day') g
      where not exists (select from rank_days where observed_on = ${day}::date)
      on conflict (observed_on) do nothing
    )`;
}

/**
 * The day's ranks of series whose day is on or after their latest, in the current month's
 * row of each (`rank_months_current`): element `index` set, the row's other days
 * untouched. A new month row takes its previous observation from `rank_latest`, and the
 * series' row of an earlier month is copied to `rank_months_past` in the same statement; a
 * stored day (a second run the same day) is rewritten only when its rank differs. One
 * statement, no history read.
 */
async function writeForwardDay(
  db: Db,
  day: string,
  rows: readonly { seriesId: number; rank: number | null; stored: LatestState | null }[],
  /** Every series was created by this write: no month row can exist, none is looked for. */
  fresh: boolean,
): Promise<{ inserted: number; updated: number }> {
  const { month, index } = monthOf(day);
  // Before the month: what a new month row starts from (a stored day inside the month
  // means the row exists, and keeps what it carries).
  const carried = (stored: LatestState | null) =>
    stored && stored.observed_on < month ? stored : null;
  const days = sql`unnest(${arrayLiteral(rows.map((r) => r.seriesId))}::int[],
      ${arrayLiteral(rows.map((r) => packed(r.rank)))}::smallint[],
      ${arrayLiteral(rows.map((r) => carried(r.stored)?.observed_on ?? null))}::date[],
      ${arrayLiteral(rows.map((r) => carried(r.stored)?.rank ?? null))}::smallint[])
      as t(series_id, rank, previous_on, previous_rank)`;
  const newRow = sql`array_fill(null::smallint, array[${index - 1}::int]) || t.rank`;
  const conflict = fresh
    ? sql``
    : sql`on conflict (series_id, month) do update set ranks[${index}::int] = excluded.ranks[${index}::int]
      where m.ranks[${index}::int] is distinct from excluded.ranks[${index}::int]`;
  // A series' first day of the month: its row of an earlier month is copied to the past
  // table, and the current row is rewritten in place as the new month's (on its own page,
  // where a delete and an insert would leave a hole only a VACUUM finds again); the other
  // series' rows are upserted. Only a night that starts a month for some series pays for it.
  const closing = rows.some((r) => carried(r.stored) !== null);
  const closeMonths = closing
    ? sql`, old as (
      select c.series_id, c.month, c.ranks, c.previous_on, c.previous_rank
      from rank_months_current c join t on t.series_id = c.series_id
      where c.month < ${month}::date
    ), moved as (
      insert into rank_months_past (series_id, month, ranks, previous_on, previous_rank)
      select * from old order by series_id, month
    ), restarted as (
      update rank_months_current c
      set month = ${month}::date, ranks = ${newRow}, previous_on = t.previous_on,
        previous_rank = t.previous_rank
      from t where c.series_id = t.series_id and c.month < ${month}::date
    )`
    : sql``;
  await sql`${calendarOf(day)}, t as (select * from ${days})${closeMonths}
    insert into rank_months_current as m (series_id, month, ranks, previous_on, previous_rank)
    select t.series_id, ${month}::date, ${newRow}, t.previous_on, t.previous_rank
    from t ${closing ? sql`where not exists (select from old o where o.series_id = t.series_id)` : sql``}
    ${conflict}`.execute(db);
  // The caller sends only ranks new for the day or different from the stored one.
  const updated = rows.filter((r) => r.stored?.observed_on === day).length;
  return { inserted: rows.length - updated, updated };
}

/**
 * The computed `rank_latest` rows, in one statement: an upsert, or a plain insert when
 * every series is new (`fresh`: created by this write, so no latest row can exist).
 */
async function upsertLatest(
  db: Db,
  seriesIds: readonly number[],
  rows: readonly LatestState[],
  fresh: boolean,
): Promise<void> {
  const column = <K extends keyof LatestState>(key: K) => rows.map((r) => r[key]);
  // Each window travels as an array literal: unnest would flatten an array of arrays.
  const windows = rows.map((r) => `{${r.window_ranks.map((v) => v ?? 'NULL').join(',')}}`);
  await sql`
    insert into rank_latest (series_id, observed_on, rank, previous_observed_on, previous_rank,
      compared_7d_on, rank_7d_ago, compared_30d_on, rank_30d_ago, best_rank_30d,
      worst_rank_30d, observations_30d, unranked_days_30d, window_collected, window_ranks,
      before_window_on, before_window_rank)
    select t.series_id, t.observed_on, t.rank, t.previous_observed_on, t.previous_rank,
      t.compared_7d_on, t.rank_7d_ago, t.compared_30d_on, t.rank_30d_ago, t.best_rank_30d,
      t.worst_rank_30d, t.observations_30d, t.unranked_days_30d, t.window_collected,
      t.window_ranks::smallint[], t.before_window_on, t.before_window_rank
    from unnest(${arrayLiteral(seriesIds)}::int[], ${arrayLiteral(column('observed_on'))}::date[],
      ${arrayLiteral(column('rank'))}::smallint[], ${arrayLiteral(column('previous_observed_on'))}::date[],
      ${arrayLiteral(column('previous_rank'))}::smallint[], ${arrayLiteral(column('compared_7d_on'))}::date[],
      ${arrayLiteral(column('rank_7d_ago'))}::smallint[], ${arrayLiteral(column('compared_30d_on'))}::date[],
      ${arrayLiteral(column('rank_30d_ago'))}::smallint[], ${arrayLiteral(column('best_rank_30d'))}::smallint[],
      ${arrayLiteral(column('worst_rank_30d'))}::smallint[], ${arrayLiteral(column('observations_30d'))}::smallint[],
      ${arrayLiteral(column('unranked_days_30d'))}::smallint[], ${arrayLiteral(column('window_collected'))}::int[],
      ${arrayLiteral(windows)}::text[], ${arrayLiteral(column('before_window_on'))}::date[],
      ${arrayLiteral(column('before_window_rank'))}::smallint[])
      as t(series_id, observed_on, rank, previous_observed_on, previous_rank, compared_7d_on,
        rank_7d_ago, compared_30d_on, rank_30d_ago, best_rank_30d, worst_rank_30d,
        observations_30d, unranked_days_30d, window_collected, window_ranks,
        before_window_on, before_window_rank)
    ${fresh ? sql`` : LATEST_CONFLICT}`.execute(db);
}

/** A stored `rank_latest` row is rewritten only when a column differs. */
const LATEST_CONFLICT = sql`
    on conflict (series_id) do update set
      observed_on = excluded.observed_on, rank = excluded.rank,
      previous_observed_on = excluded.previous_observed_on,
      previous_rank = excluded.previous_rank, compared_7d_on = excluded.compared_7d_on,
      rank_7d_ago = excluded.rank_7d_ago, compared_30d_on = excluded.compared_30d_on,
      rank_30d_ago = excluded.rank_30d_ago, best_rank_30d = excluded.best_rank_30d,
      worst_rank_30d = excluded.worst_rank_30d, observations_30d = excluded.observations_30d,
      unranked_days_30d = excluded.unranked_days_30d,
      window_collected = excluded.window_collected, window_ranks = excluded.window_ranks,
      before_window_on = excluded.before_window_on,
      before_window_rank = excluded.before_window_rank
    where (rank_latest.observed_on, rank_latest.rank, rank_latest.previous_observed_on,
        rank_latest.previous_rank, rank_latest.compared_7d_on, rank_latest.rank_7d_ago,
        rank_latest.compared_30d_on, rank_latest.rank_30d_ago, rank_latest.best_rank_30d,
        rank_latest.worst_rank_30d, rank_latest.observations_30d,
        rank_latest.unranked_days_30d, rank_latest.window_collected, rank_latest.window_ranks,
        rank_latest.before_window_on, rank_latest.before_window_rank)
      is distinct from (excluded.observed_on, excluded.rank, excluded.previous_observed_on,
        excluded.previous_rank, excluded.compared_7d_on, excluded.rank_7d_ago,
        excluded.compared_30d_on, excluded.rank_30d_ago, excluded.best_rank_30d,
        excluded.worst_rank_30d, excluded.observations_30d, excluded.unranked_days_30d,
        excluded.window_collected, excluded.window_ranks, excluded.before_window_on,
        excluded.before_window_rank)`;

/**
 * The last observation of a month row `p` (its latest collected day), else what it carries
 * in from before its month: `last_on` and `last_rank` (NULL: not ranked), for `cross join lateral`.
 */
const LAST_OF_MONTH_ROW = sql`(
      select coalesce(p.month + (x.i - 1), p.previous_on) as last_on,
        case when x.i is null then p.previous_rank
          else nullif(p.ranks[x.i], ${NOT_RANKED}::smallint) end as last_rank
      from (select max(i)::int as i from generate_subscripts(p.ranks, 1) i
        where p.ranks[i] is not null) x
    )`;

/**
 * A day before a series' latest (a clock set back): one statement for the day's month
 * rows in `table`, the series' current month row or one of the past. A new month row
 * carries the series' last observation before the month (one backward step in the primary
 * key); a stored day is rewritten only when its rank differs.
 */
async function upsertDay(
  db: Db,
  table: 'rank_months_current' | 'rank_months_past',
  day: string,
  seriesIds: readonly number[],
  values: readonly (number | null)[],
): Promise<{ inserted: number; updated: number }> {
  const { month, index } = monthOf(day);
  const { rows: before } = await sql<{ series_id: number; rank: number | null }>`
    select series_id, ranks[${index}::int] as rank from rank_months
    where series_id = any(${arrayLiteral(seriesIds)}::int[]) and month = ${month}::date`.execute(
    db,
  );
  const stored = new Map(before.map((r) => [r.series_id, r.rank]));
  await sql`${calendarOf(day)}
    insert into ${sql.table(table)} as m (series_id, month, ranks, previous_on, previous_rank)
    select t.series_id, ${month}::date, array_fill(null::smallint, array[${index - 1}::int]) || t.rank,
      l.last_on, l.last_rank
    from unnest(${arrayLiteral(seriesIds)}::int[], ${arrayLiteral(values.map(packed))}::smallint[])
      as t(series_id, rank)
    left join lateral (
      select p.* from rank_months p
      where p.series_id = t.series_id and p.month < ${month}::date
      order by p.month desc limit 1
    ) p on true
    left join lateral ${LAST_OF_MONTH_ROW} l on p.series_id is not null
    on conflict (series_id, month) do update set ranks[${index}::int] = excluded.ranks[${index}::int]
      where m.ranks[${index}::int] is distinct from excluded.ranks[${index}::int]`.execute(db);
  let inserted = 0;
  let updated = 0;
  seriesIds.forEach((id, i) => {
    const was = stored.get(id);
    if (was === undefined || was === null) inserted += 1;
    else if (was !== packed(values[i] ?? null)) updated += 1;
  });
  return { inserted, updated };
}

/**
 * Each series' first month row after `day`'s month carries the last observation of that
 * month, which may now be `day`. (Within a month, the previous observation is read off the
 * row itself: nothing else to relink.) That row is past or current: both tables are
 * updated from one reading of the view.
 */
async function relinkNextMonths(db: Db, day: string, seriesIds: readonly number[]): Promise<void> {
  const { month } = monthOf(day);
  const relink = (table: 'rank_months_current' | 'rank_months_past') => sql`
    update ${sql.table(table)} n
    set previous_on = r.last_on, previous_rank = r.last_rank
    from relinked r
    where n.series_id = r.series_id and n.month = r.month
      and (n.previous_on, n.previous_rank) is distinct from (r.last_on, r.last_rank)`;
  await sql`
    with relinked as (
      select t.series_id, next_month.month, l.last_on, l.last_rank
      from unnest(${arrayLiteral(seriesIds)}::int[]) as t(series_id)
      join rank_months p on p.series_id = t.series_id and p.month = ${month}::date
      cross join lateral ${LAST_OF_MONTH_ROW} l
      cross join lateral (
        select h.month from rank_months h
        where h.series_id = t.series_id and h.month > ${month}::date
        order by h.month limit 1
      ) next_month
    ), past as (${relink('rank_months_past')})
    ${relink('rank_months_current')}`.execute(db);
}

/**
 * Recomputes `rank_latest` for the given series from their history, as `v_rank_latest`
 * defined it before the read model (and as migration 0005 filled it): the comparison
 * points are the last observation on or before 7 (30) days before the latest one, and the
 * 30-day figures cover the 31 days ending on it. Each lateral is a bounded walk of the
 * primary key: one row, or at most 31. Used after a run dated before a stored day, and by
 * `replay --in-place` for the history it starts from (src/replay/merge.ts).
 */
export async function recomputeLatest(db: Db, seriesIds: readonly number[]): Promise<void> {
  await sql`
    insert into rank_latest (series_id, observed_on, rank, previous_observed_on, previous_rank,
      compared_7d_on, rank_7d_ago, compared_30d_on, rank_30d_ago, best_rank_30d,
      worst_rank_30d, observations_30d, unranked_days_30d, window_collected, window_ranks,
      before_window_on, before_window_rank)
    select t.series_id, l.observed_on, l.rank, l.observed_on - l.days_since_previous,
      l.previous_rank, w7.observed_on, w7.rank, w30.observed_on, w30.rank, m.best, m.worst,
      m.observations, m.unranked, m.collected, wr.ranks, bw.observed_on, bw.rank
    from unnest(${arrayLiteral(seriesIds)}::int[]) as t(series_id)
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
    left join lateral (
      select h.observed_on, h.rank from rank_history h
      where h.series_id = t.series_id and h.observed_on < l.observed_on - 30
      order by h.observed_on desc limit 1
    ) bw on true
    cross join lateral (
      select min(h.rank) as best, max(h.rank) as worst, count(*) as observations,
        count(*) filter (where h.rank is null) as unranked,
        sum(1 << (l.observed_on - h.observed_on))::int as collected
      from rank_history h
      where h.series_id = t.series_id and h.observed_on >= l.observed_on - 30
    ) m
    cross join lateral (
      select array_agg(h.rank order by i) as ranks
      from generate_series(0, 30) i
      left join rank_history h on h.series_id = t.series_id and h.observed_on = l.observed_on - i
    ) wr
    ${LATEST_CONFLICT}`.execute(db);
}

// Joins keyword and site: a character neither contains.
function rankKey(keyword: string, site: string): string {
  return `${keyword}\u0000${site}`;
}
