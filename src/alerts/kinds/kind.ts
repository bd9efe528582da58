/**
 * The alert kinds' contract (`alerts.kind`): what an entry of one holds. The kinds are
 * listed once, in the base (src/config/alert-rules.ts, `ALERT_RULE_KINDS`, beside each
 * kind's rule); each has one file in this folder with its constant, its dedupe key, its
 * raise and its entry, from which its label, severity, icon and message are read
 * (src/alerts/kinds/index.ts lists the entries). `alerts.dedupe_key` is unique, so one
 * event can never raise twice however often a run re-applies it; each kind's key says
 * what "one event" is for it. docs/alerts.md, "Adding an alert kind" in
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

/** What a business's change carries of where and when it was seen. */
export interface ChangeOrigin {
  accountName: string;
  businessId: number;
  runId: string | null;
  detectedAt: Date;
}

/** An alert's account, business, run and time: those of the change it is raised from. */
export function raisedFrom(origin: ChangeOrigin) {
  return {
    accountName: origin.accountName,
    businessId: origin.businessId,
    detectedAt: origin.detectedAt,
    runId: origin.runId,
  };
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
