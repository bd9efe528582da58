/**
 * `sync_failed` and `sync_stale`, raised by `serve` from what `sync_runs` says, so they
 * work whoever runs the load (serve's own schedule or a Kubernetes CronJob):
 * - `sync_failed`: the last `consecutive` finished runs all ended in one of the rule's
 *   statuses (`failed`, `partial` by default); once per run;
 * - `sync_stale`: an account (configured, or known to the warehouse) has had no
 *   successful run for the rule's hours: `succeeded`, or `partial` with that account's
 *   own credential not failed. An account with no
 *   success at all is measured from when this `serve` started watching: a dead man's
 *   switch that fires even when the CronJob never started. Once per silence.
 * The reads of `sync_runs` are src/warehouse/runs/sync-runs.ts's, of `accounts`
 * src/warehouse/runs/accounts.ts's; the rules are here.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import { knownAccountNames } from '../../warehouse/runs/accounts.ts';
import { lastSuccessByAccount, latestFinishedRuns } from '../../warehouse/runs/sync-runs.ts';
import { detail, oneLine } from '../message-text.ts';
import { type NewAlert, raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import type { AlertKind, AlertKindEntry, SyncHealthCheck } from './kind.ts';

export type { SyncHealthCheck } from './kind.ts';

export const SYNC_FAILED = 'sync_failed' satisfies AlertKind;
export const SYNC_STALE = 'sync_stale' satisfies AlertKind;

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

/** The `sync_failed` alert the last finished runs call for, if any (none when the rule is off). */
async function syncFailedAlerts(
  db: Kysely<Database>,
  rules: AlertRules,
  check: SyncHealthCheck,
): Promise<NewAlert[]> {
  if (!rules.syncFailed.enabled) return [];
  const runs = await latestFinishedRuns(db, rules.syncFailed.consecutive);
  const latest = runs[0];
  if (
    !latest ||
    runs.length !== rules.syncFailed.consecutive ||
    !runs.every((run) => rules.syncFailed.statuses.includes(run.status))
  ) {
    return [];
  }
  const accounts = Array.isArray(latest.accounts) ? latest.accounts.map(String) : [];
  return [
    {
      kind: SYNC_FAILED,
      dedupeKey: syncFailedKey(latest.run_id),
      accountName: accounts.length === 1 ? (accounts[0] ?? null) : null,
      businessId: null,
      previousStatus: null,
      status: latest.status,
      details: {
        error: latest.error ?? null,
        consecutive: runs.length,
        finishedAt: latest.finished_at?.toISOString() ?? null,
        accounts,
      },
      detectedAt: check.now,
      runId: latest.run_id,
    },
  ];
}

/** The `sync_stale` alerts of the accounts silent for too long (none when the rule is off). */
async function syncStaleAlerts(
  db: Kysely<Database>,
  rules: AlertRules,
  check: SyncHealthCheck,
): Promise<NewAlert[]> {
  if (!rules.syncStale.enabled) return [];
  const alerts: NewAlert[] = [];
  const known = await knownAccountNames(db);
  const names = [...new Set([...check.accounts, ...known])].sort();
  const last = await lastSuccessByAccount(db, names);
  for (const name of names) {
    const since = last.get(name) ?? null;
    const reference = since ?? check.watchingSince;
    if (check.now.getTime() - reference.getTime() < rules.syncStale.afterMs) continue;
    alerts.push({
      kind: SYNC_STALE,
      dedupeKey: syncStaleKey(name, since),
      accountName: name,
      businessId: null,
      previousStatus: null,
      status: 'stale',
      details: {
        lastSuccessAt: since?.toISOString() ?? null,
        hours: rules.syncStale.afterMs / 3_600_000,
      },
      detectedAt: check.now,
      runId: null,
    });
  }
  return alerts;
}

export const syncFailed: AlertKindEntry<typeof SYNC_FAILED> = {
  kind: SYNC_FAILED,
  label: ['failed sync', 'failed syncs'],
  // A load that did not happen hides every other alert, so it leads.
  severity: 0,
  icon: ':rotating_light:',
  summary: (alert) => {
    const error = detail(alert, 'error');
    return `run ${alert.runId ?? ''} ended ${alert.status}${typeof error === 'string' && error ? `: ${oneLine(error, 80)}` : ''}`;
  },
  raise: { on: 'sync_runs', alerts: syncFailedAlerts },
};

export const syncStale: AlertKindEntry<typeof SYNC_STALE> = {
  kind: SYNC_STALE,
  label: ['stale account', 'stale accounts'],
  severity: 1,
  icon: ':hourglass:',
  summary: (alert) => {
    const last = detail(alert, 'lastSuccessAt');
    return `no successful run since ${typeof last === 'string' ? last : 'serve started (never)'}`;
  },
  raise: { on: 'sync_runs', alerts: syncStaleAlerts },
};

/** Raises what the rules say about the runs; returns how many alerts were raised. */
export async function raiseSyncHealthAlerts(
  db: Kysely<Database>,
  rules: AlertRules,
  check: SyncHealthCheck,
): Promise<number> {
  const alerts: NewAlert[] = [];
  for (const entry of [syncFailed, syncStale]) {
    if (entry.raise.on === 'sync_runs')
      alerts.push(...(await entry.raise.alerts(db, rules, check)));
  }
  return raise(db, alerts);
}
