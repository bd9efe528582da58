/**
 * The alert kinds (`alerts.kind`), what an entry of one holds, and their dedupe keys. The
 * kinds are listed once, in the base (src/config/alert-rules.ts, `ALERT_RULE_KINDS`,
 * beside each kind's rule); each has one entry (src/alerts/kinds/index.ts) from which its
 * label, severity, icon, message and raise are read. `alerts.dedupe_key` is unique, so one
 * event can never raise twice however often a run re-applies it; each key below says what
 * "one event" is for its kind. docs/alerts.md, "Adding an alert kind" in
 * docs/contributing.md.
 *
 * Glossary:
 * - *raise*: insert into the outbox (`alerts`) inside the writer's transaction;
 * - *deliver*: a sink took the alert (`delivered_sinks`; `delivered_at` once all did);
 * - *digest*: one message about several alerts of one account and run.
 */
import type { Kysely } from 'kysely';
import { ALERT_RULE_KINDS, type AlertRuleKind, type AlertRules } from '../../config/alert-rules.ts';
import type { Database, Db } from '../../warehouse/database.ts';
import type { Change } from '../../warehouse/write/changes.ts';
import type { AlertForDelivery, NewAlert } from '../alert.ts';
import type { SlackMessage } from '../message-text.ts';

export type AlertKind = AlertRuleKind;

/** What the sync health kinds (sync-health.ts) check against. */
export interface SyncHealthCheck {
  now: Date;
  /** The configured credentials' names; accounts in the warehouse are checked too. */
  accounts: readonly string[];
  /** When this process started watching: the reference for an account never synced. */
  watchingSince: Date;
}

export const LISTING_INACCURATE = 'listing_inaccurate' satisfies AlertKind;
export const LISTING_BROKEN_AGAIN = 'listing_broken_again' satisfies AlertKind;
export const RANK_DROP = 'rank_drop' satisfies AlertKind;
export const LOW_RATING_REVIEW = 'low_rating_review' satisfies AlertKind;
export const REVIEW_RESPONSE_FAILED = 'review_response_failed' satisfies AlertKind;
export const SYNC_FAILED = 'sync_failed' satisfies AlertKind;
export const SYNC_STALE = 'sync_stale' satisfies AlertKind;
export const VOLUME_DROP = 'volume_drop' satisfies AlertKind;

export function isAlertKind(kind: string): kind is AlertKind {
  return (ALERT_RULE_KINDS as readonly string[]).includes(kind);
}

export type ChangeType = Change['type'];
export type ChangeOf<T extends ChangeType> = Extract<Change, { type: T }>;

/**
 * How a kind is raised: from the writers' changes of one type (`raiseForChanges` hands it
 * each run of consecutive changes of that type, in the writer's transaction), or by
 * `serve` from what `sync_runs` says (`raiseSyncHealthAlerts`).
 */
export type KindRaise =
  | {
      [T in ChangeType]: {
        on: T;
        raise(db: Db, rules: AlertRules, changes: readonly ChangeOf<T>[]): Promise<number>;
      };
    }[ChangeType]
  | {
      on: 'sync_runs';
      alerts(db: Kysely<Database>, rules: AlertRules, check: SyncHealthCheck): Promise<NewAlert[]>;
    };

/** Everything about one alert kind but its rule (src/config/alert-rules.ts). */
export interface AlertKindEntry<K extends AlertKind = AlertKind> {
  kind: K;
  /** The digest's count of it: one, many (`2 rank drops`). */
  label: readonly [one: string, many: string];
  /**
   * Most urgent first: a digest lists its "worst" alerts in this order. A load that did
   * not happen hides every other alert, so it leads.
   */
  severity: number;
  /** The Slack emoji before its line. */
  icon: string;
  /** What changed, in a few words: the column of `listings-sync alerts`, a digest's line, the webhook's `summary`. */
  summary(alert: AlertForDelivery): string;
  /** Its own Slack text of one alert; without: the icon, the business, the summary, the link. */
  slack?(alert: AlertForDelivery): SlackMessage;
  /** Its object in the webhook body, beside the common fields (docs/alerts.md, "Generic JSON"). */
  webhook?(alert: AlertForDelivery): Record<string, unknown>;
  raise: KindRaise;
}

/** A raise of one change at a time, as a raise of a run of them; returns how many were raised. */
export function eachChange<C>(
  raiseOne: (db: Db, rules: AlertRules, change: C) => Promise<number>,
): (db: Db, rules: AlertRules, changes: readonly C[]) => Promise<number> {
  return async (db, rules, changes) => {
    let raised = 0;
    for (const change of changes) raised += await raiseOne(db, rules, change);
    return raised;
  };
}

/**
 * A listing turning Inaccurate: the listing and the time its previous status began, the
 * same however often that one transition is re-applied; a later relapse has a different
 * previous period and raises again. A listing first seen as Inaccurate uses `first-seen`.
 */
export function listingInaccurateKey(
  businessId: number,
  listingId: number,
  previousStatusSince: Date | null,
): string {
  const since = previousStatusSince ? previousStatusSince.toISOString() : 'first-seen';
  return `${LISTING_INACCURATE}:${businessId}:${listingId}:${since}`;
}

/**
 * A listing Inaccurate again soon after a fix: once per fix (the listing and the time of
 * the fix it undid), however often that transition is re-applied.
 */
export function listingBrokenAgainKey(businessId: number, listingId: number, fixedAt: Date) {
  return `${LISTING_BROKEN_AGAIN}:${businessId}:${listingId}:${fixedAt.toISOString()}`;
}

/** A rank drop: at most one per series (business, site, keyword) and UTC day. */
export function rankDropKey(businessId: number, site: string, keyword: string, day: string) {
  return `${RANK_DROP}:${businessId}:${site}:${keyword}:${day}`;
}

/** A low rating: once per review, whatever later edits do. */
export function lowRatingReviewKey(reviewId: string): string {
  return `${LOW_RATING_REVIEW}:${reviewId}`;
}

/** A failed review response: once per request (a request fails once). */
export function reviewResponseFailedKey(requestId: string): string {
  return `${REVIEW_RESPONSE_FAILED}:${requestId}`;
}

/** A failed run: once per run (the last of the consecutive failures that crossed the threshold). */
export function syncFailedKey(runId: string): string {
  return `${SYNC_FAILED}:${runId}`;
}

/**
 * A stale account: once per silence, named by the last success it follows (`never` when
 * the account has none), so the next silence after a success raises again.
 */
export function syncStaleKey(accountName: string, lastSuccess: Date | null): string {
  return `${SYNC_STALE}:${accountName}:${lastSuccess ? lastSuccess.toISOString() : 'never'}`;
}

/**
 * A held volume drop: once per business, stream and UTC day (`YYYY-MM-DD`), so a second
 * run the same night that still holds the drop does not raise it again.
 */
export function volumeDropKey(businessId: number, stream: string, day: string): string {
  return `${VOLUME_DROP}:${businessId}:${stream}:${day}`;
}

/**
 * A held business list: once per account, list (`businesses`, or a shard's
 * `businesses:I/N`) and UTC day. `account:` keeps it apart from a business's keys, whose
 * ids are numbers.
 */
export function volumeDropListKey(accountName: string, list: string, day: string): string {
  return `${VOLUME_DROP}:account:${accountName}:${list}:${day}`;
}
