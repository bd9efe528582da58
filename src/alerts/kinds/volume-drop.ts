/**
 * `volume_drop`: a successful read that would have removed more than the rule's share of
 * a business's live rows of a stream (and at least `minRows`), so the warehouse held its
 * removals until the next run confirms them (docs/warehouse.md, "How removals work"). The
 * writers decide and report the held reads (`src/warehouse/write/held-removals.ts`); this raises
 * one alert per business, stream and UTC day, in the writer's transaction.
 *
 * An account's business list is held the same way (the sync decides, held-removals.ts):
 * `raiseVolumeDrop` raises one alert per account, list and UTC day, in the
 * transaction that records the hold.
 *
 * The rule's `enabled` governs the hold itself as well as the alert: a hold nobody hears
 * of would be a silent failure of its own.
 */
import { utcDay } from '../../calendar-day.ts';
import type { Db } from '../../warehouse/database.ts';
import type { Change } from '../../warehouse/write/changes.ts';
import type { BusinessListHeld, RemovalLimit } from '../../warehouse/write/held-removals.ts';
import { detail } from '../message-text.ts';
import { raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import { type AlertKind, type AlertKindEntry, eachChange } from './kind.ts';

export const VOLUME_DROP = 'volume_drop' satisfies AlertKind;

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

type RemovalsHeldChange = Extract<Change, { type: 'removals_held' }>;

/** The removal limit the writers hold drops under; undefined (never hold) when the rule is off. */
export function removalLimitUnder(rules: AlertRules): RemovalLimit | undefined {
  const rule = rules.volumeDrop;
  return rule.enabled ? { share: rule.share, minRows: rule.minRows } : undefined;
}

/**
 * Raises the `volume_drop` alert of one hold; returns how many were raised (0 or 1). A
 * stream's held read names its business and stream; a held business list names no
 * business, the account and the list. Either way the live and answered counts are the
 * previous_status and status, and the details.
 */
export async function raiseVolumeDrop(
  db: Db,
  rules: AlertRules,
  held: RemovalsHeldChange | BusinessListHeld,
): Promise<number> {
  if (!rules.volumeDrop.enabled) return 0;
  const day = utcDay(held.detectedAt);
  const { dedupeKey, businessId, what } =
    'businessId' in held
      ? {
          dedupeKey: volumeDropKey(held.businessId, held.stream, day),
          businessId: held.businessId,
          what: { stream: held.stream },
        }
      : {
          dedupeKey: volumeDropListKey(held.accountName, held.key, day),
          businessId: null,
          what: { stream: 'businesses', list: held.key },
        };
  return raise(db, [
    {
      kind: VOLUME_DROP,
      dedupeKey,
      accountName: held.accountName,
      businessId,
      previousStatus: String(held.stored),
      status: String(held.answered),
      details: { ...what, stored: held.stored, answered: held.answered, removing: held.removing },
      detectedAt: held.detectedAt,
      runId: held.runId,
    },
  ]);
}

/** `volume_drop`'s entry: its messages, and its raise (`raiseVolumeDrop`, above). */
export const volumeDrop: AlertKindEntry<typeof VOLUME_DROP> = {
  kind: VOLUME_DROP,
  label: ['held volume drop', 'held volume drops'],
  // Rows the warehouse would have lost: BI is wrong tomorrow unless someone looks.
  severity: 2,
  icon: ':arrow_down_small:',
  summary: (alert) => {
    const stream = detail(alert, 'stream');
    return (
      `${typeof stream === 'string' ? stream : 'a stream'}: ${detail(alert, 'stored') ?? alert.previousStatus} stored, ` +
      `${detail(alert, 'answered') ?? alert.status} answered; removals held until the next run confirms them`
    );
  },
  webhook: (alert) => ({
    volume_drop: {
      stream: detail(alert, 'stream') ?? null,
      stored: detail(alert, 'stored') ?? null,
      answered: detail(alert, 'answered') ?? null,
    },
  }),
  // The business lists' holds raise through `raiseVolumeDrop` too, called by the sync.
  raise: { on: 'removals_held', raise: eachChange(raiseVolumeDrop) },
};
