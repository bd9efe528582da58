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
import { raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import { VOLUME_DROP, volumeDropKey, volumeDropListKey } from './kind.ts';

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
