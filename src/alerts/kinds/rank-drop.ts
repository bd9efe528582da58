/**
 * `rank_drop`: a series (business, keyword, site) that, on the day of a run,
 * - leaves the top N: its last rank before today was N or better, and today it is worse
 *   or not ranked; or
 * - newly worsens by at least K positions against 7 days before: rank(today) −
 *   rank(today − 7) ≥ K, where yesterday's rank against 8 days before did not (so a drop
 *   that lasts raises once, the day it happens). "Not ranked" counts as worse than any
 *   rank for leaving the top N, and is not compared for K.
 * Filtered by the rule's sites and keywords; at most one alert per series and day.
 *
 * The rankings writer reports, for each series it wrote, today's rank and its stored
 * `rank_latest` window, from which `raiseForChanges` reads the 8 days before; this decides
 * and raises in the writer's transaction.
 */
import { addDays } from '../../calendar-day.ts';
import type { Db, JsonValue } from '../../warehouse/database.ts';
import { daysOfWindow } from '../../warehouse/tables/rankings.ts';
import { detail } from '../message-text.ts';
import type { AlertForDelivery } from '../outbox.ts';
import { type NewAlert, raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import {
  type AlertKind,
  type AlertKindEntry,
  type ChangeOf,
  type ChangeOrigin,
  eachChange,
  raisedFrom,
} from './kind.ts';

export const RANK_DROP = 'rank_drop' satisfies AlertKind;

/** A rank drop: at most one per series (business, site, keyword) and UTC day. */
export function rankDropKey(businessId: number, site: string, keyword: string, day: string) {
  return `${RANK_DROP}:${businessId}:${site}:${keyword}:${day}`;
}

export interface RankSeriesDay {
  keyword: string;
  site: string;
  /** Today's rank; null when not ranked. */
  rank: number | null;
  /** Earlier ranks of the series by UTC day (`YYYY-MM-DD`), at least the 8 days before today. */
  history: ReadonlyMap<string, number | null>;
}

export interface RankDropContext extends ChangeOrigin {
  /** Today (UTC) as `YYYY-MM-DD`. */
  day: string;
}

function worsenedBy(
  rank: number | null | undefined,
  before: number | null | undefined,
  k: number,
): boolean {
  return typeof rank === 'number' && typeof before === 'number' && rank - before >= k;
}

/** The alerts one business's ranks of the day raise under the rule (pure). */
export function rankDrops(
  rules: AlertRules,
  ctx: RankDropContext,
  series: readonly RankSeriesDay[],
): NewAlert[] {
  const rule = rules.rankDrop;
  if (!rule.enabled) return [];
  const sites = new Set(rule.sites);
  const keywords = new Set(rule.keywords.map((k) => k.toLowerCase()));
  const yesterday = addDays(ctx.day, -1);
  const weekAgo = addDays(ctx.day, -7);
  const eightAgo = addDays(ctx.day, -8);
  const alerts: NewAlert[] = [];
  for (const s of series) {
    if (sites.size && !sites.has(s.site)) continue;
    if (keywords.size && !keywords.has(s.keyword.toLowerCase())) continue;
    // The last rank before today: the latest day in the history.
    const previousDay = [...s.history.keys()]
      .filter((d) => d < ctx.day)
      .sort()
      .pop();
    const previousRank = previousDay === undefined ? undefined : s.history.get(previousDay);
    const leftTop =
      rule.top !== null &&
      typeof previousRank === 'number' &&
      previousRank <= rule.top &&
      (s.rank === null || s.rank > rule.top);
    const weekAgoRank = s.history.get(weekAgo);
    const worsened =
      rule.worsenBy !== null &&
      worsenedBy(s.rank, weekAgoRank, rule.worsenBy) &&
      !worsenedBy(s.history.get(yesterday), s.history.get(eightAgo), rule.worsenBy);
    if (!leftTop && !worsened) continue;
    alerts.push({
      kind: RANK_DROP,
      dedupeKey: rankDropKey(ctx.businessId, s.site, s.keyword, ctx.day),
      ...raisedFrom(ctx),
      siteName: s.site,
      keyword: s.keyword,
      previousStatus: previousRank == null ? null : String(previousRank),
      status: s.rank === null ? 'not ranked' : String(s.rank),
      details: {
        rank: s.rank,
        previousRank: previousRank ?? null,
        weekAgoRank: weekAgoRank ?? null,
        leftTop: leftTop ? rule.top : null,
        worsenedBy:
          worsened && typeof s.rank === 'number' && typeof weekAgoRank === 'number'
            ? s.rank - weekAgoRank
            : null,
      },
    });
  }
  return alerts;
}

/** Raises the day's rank drops of one business; returns how many were raised. */
export async function raiseRankDrops(
  db: Db,
  rules: AlertRules,
  ctx: RankDropContext,
  series: readonly RankSeriesDay[],
): Promise<number> {
  return raise(db, rankDrops(rules, ctx, series));
}

/** Raises the rank drops of the ranks a writer wrote (none when the rule is off). */
async function raiseForRanksWritten(
  db: Db,
  rules: AlertRules,
  change: ChangeOf<'ranks_written'>,
): Promise<number> {
  if (!rules.rankDrop.enabled) return 0;
  return raiseRankDrops(
    db,
    rules,
    change,
    change.series.map((s) => ({
      keyword: s.keyword,
      site: s.site,
      rank: s.rank,
      history: daysOfWindow(s.before, change.day),
    })),
  );
}

function rankText(value: JsonValue | undefined): string {
  return typeof value === 'number' ? `#${value}` : 'not ranked';
}

function summary(alert: AlertForDelivery): string {
  const week = detail(alert, 'weekAgoRank');
  return (
    `"${alert.keyword ?? ''}" on ${alert.siteName ?? ''}: ${rankText(detail(alert, 'previousRank'))} → ${rankText(detail(alert, 'rank'))}` +
    (week !== undefined ? ` (7 days before: ${rankText(week)})` : '')
  );
}

export const rankDrop: AlertKindEntry<typeof RANK_DROP> = {
  kind: RANK_DROP,
  label: ['rank drop', 'rank drops'],
  severity: 6,
  icon: ':chart_with_downwards_trend:',
  summary,
  webhook: (alert) => ({ rank: { keyword: alert.keyword, site: alert.siteName } }),
  raise: { on: 'ranks_written', raise: eachChange(raiseForRanksWritten) },
};
