/**
 * The one entry point from what the warehouse changed to the alerts it raises: the writers
 * report their changes (`src/warehouse/changes.ts`), and this applies each kind's rule to
 * them, in the writer's transaction, so the outbox rows commit with the data. The kinds
 * are raised in the order the changes come: listings (newly Inaccurate, then broken again),
 * then reviews, then ranks, then the held volume drops.
 */
import type { Change, ChangeHandler, ListingTurnedInaccurate } from '../warehouse/changes.ts';
import type { Db } from '../warehouse/database.ts';
import { daysOfWindow } from '../warehouse/rankings.ts';
import { raiseListingBrokenAgain } from './listing-broken-again.ts';
import { raiseListingInaccurate } from './listing-inaccurate.ts';
import { raiseLowRatingReviews } from './low-rating-review.ts';
import { raiseRankDrops } from './rank-drop.ts';
import { raiseReviewResponseFailed } from './review-response-failed.ts';
import { type AlertRules, DEFAULT_ALERT_RULES } from './rules.ts';
import { raiseVolumeDrop } from './volume-drop.ts';

/** Raises what `rules` allow for these changes; returns how many alerts were raised. */
export async function raiseForChanges(
  db: Db,
  changes: readonly Change[],
  rules: AlertRules,
): Promise<number> {
  let raised = 0;
  // One business's listing transitions go together: flap damping reads them at once.
  const turned: ListingTurnedInaccurate[] = [];
  const flushListings = async () => {
    if (turned.length === 0) return;
    const transitions = turned.splice(0);
    raised += await raiseListingInaccurate(db, rules, transitions);
    raised += await raiseListingBrokenAgain(db, rules, transitions);
  };
  for (const change of changes) {
    if (change.type === 'listing_turned_inaccurate') {
      const { type: _, ...transition } = change;
      turned.push(transition);
      continue;
    }
    await flushListings();
    switch (change.type) {
      case 'reviews_first_seen':
        raised += await raiseLowRatingReviews(db, rules, change, change.reviews);
        break;
      case 'ranks_written':
        if (!rules.rankDrop.enabled) break;
        raised += await raiseRankDrops(
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
        break;
      case 'response_failed': {
        const { type: _, ...failed } = change;
        if (await raiseReviewResponseFailed(db, rules, failed)) raised += 1;
        break;
      }
      case 'removals_held':
        raised += await raiseVolumeDrop(db, rules, change);
        break;
    }
  }
  await flushListings();
  return raised;
}

/** The change handler the writers call: `raiseForChanges` under `rules` (default: built-in). */
export function alertsUnder(rules: AlertRules = DEFAULT_ALERT_RULES): ChangeHandler {
  return (db, changes) => raiseForChanges(db, changes, rules);
}
