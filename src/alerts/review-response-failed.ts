/**
 * `review_response_failed`: a review response submitted through the command line
 * (operation 9) whose status read (operation 10) answers `Failed`. Raised (through
 * `raiseForChanges`) in the transaction that records the status; once per request.
 */
import type { ResponseFailed } from '../warehouse/changes.ts';
import type { Db } from '../warehouse/database.ts';
import { REVIEW_RESPONSE_FAILED, reviewResponseFailedKey } from './kinds.ts';
import { raise } from './outbox.ts';
import type { AlertRules } from './rules.ts';

/** Returns true when the alert was raised now (false: the rule is off, or it exists). */
export async function raiseReviewResponseFailed(
  db: Db,
  rules: AlertRules,
  failed: ResponseFailed,
): Promise<boolean> {
  if (!rules.reviewResponseFailed.enabled) return false;
  const raised = await raise(db, [
    {
      kind: REVIEW_RESPONSE_FAILED,
      dedupeKey: reviewResponseFailedKey(failed.requestId),
      accountName: failed.accountName,
      businessId: failed.businessId,
      siteName: failed.siteName,
      requestId: failed.requestId,
      previousStatus: failed.previousStatus,
      status: 'Failed',
      detectedAt: failed.detectedAt,
      runId: failed.runId,
    },
  ]);
  return raised > 0;
}
