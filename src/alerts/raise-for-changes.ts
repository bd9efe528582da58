/**
 * The one entry point from what the warehouse changed to the alerts it raises: the writers
 * report their changes (`src/warehouse/write/changes.ts`), and this hands each run of
 * consecutive changes of one type to the kinds raised from that type (their entries'
 * `raise`, src/alerts/kinds/index.ts), in the writer's transaction, so the outbox rows
 * commit with the data. The kinds are raised in the order the changes come; kinds of the
 * same change type in the entries' order (a business's listing transitions: newly
 * Inaccurate, then broken again).
 */
import type { AlertRules } from '../config/alert-rules.ts';
import type { Db } from '../warehouse/database.ts';
import type { Change, ChangeHandler } from '../warehouse/write/changes.ts';
import { ALERT_KIND_ENTRIES } from './kinds/index.ts';
import type { ChangeType, KindRaise } from './kinds/kind.ts';
import { DEFAULT_ALERT_RULES } from './rules.ts';

type ChangeRaise = Exclude<KindRaise, { on: 'sync_runs' }>;

/** The raises of each change type, in the entries' order. */
const RAISES_ON = new Map<ChangeType, ChangeRaise['raise'][]>();
for (const { raise } of Object.values(ALERT_KIND_ENTRIES) as { raise: KindRaise }[]) {
  if (raise.on === 'sync_runs') continue;
  RAISES_ON.set(raise.on, [
    ...(RAISES_ON.get(raise.on) ?? []),
    raise.raise as ChangeRaise['raise'],
  ]);
}

/** The changes cut into runs of consecutive changes of one type, in order. */
function runsOfOneType(changes: readonly Change[]): Change[][] {
  const runs: Change[][] = [];
  for (const change of changes) {
    const last = runs.at(-1);
    if (last && last[0]?.type === change.type) last.push(change);
    else runs.push([change]);
  }
  return runs;
}

/** Raises what `rules` allow for these changes; returns how many alerts were raised. */
export async function raiseForChanges(
  db: Db,
  changes: readonly Change[],
  rules: AlertRules,
): Promise<number> {
  let raised = 0;
  for (const run of runsOfOneType(changes)) {
    const type = run[0]?.type;
    if (!type) continue;
    for (const raise of RAISES_ON.get(type) ?? []) {
      raised += await (raise as (db: Db, rules: AlertRules, changes: Change[]) => Promise<number>)(
        db,
        rules,
        run,
      );
    }
  }
  return raised;
}

/** The change handler the writers call: `raiseForChanges` under `rules` (default: built-in). */
export function alertsUnder(rules: AlertRules = DEFAULT_ALERT_RULES): ChangeHandler {
  return (db, changes) => raiseForChanges(db, changes, rules);
}
