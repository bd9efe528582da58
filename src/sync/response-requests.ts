/**
 * Operation 10 in a run: with the reviews stream, each credential's open review response
 * requests (submitted through `listings-sync api reviews respond`) are polled and every
 * status change recorded; a request that ends `Failed` raises a `review_response_failed`
 * alert.
 */

import pLimit from 'p-limit';
import { alertsUnder } from '../alerts/raise-for-changes.ts';
import type { Credential } from '../api/index.ts';
import { getResponseStatus } from '../api/index.ts';
import { ApiError } from '../api/transport/errors.ts';
import {
  closeInvalidResponseRequest,
  openResponseRequests,
  recordResponseStatus,
  recordResponseStatusError,
} from '../warehouse/runs/review-response-requests.ts';
import { DEFAULT_BUSINESS_CONCURRENCY } from './options.ts';
import type { RunContext } from './run-context.ts';
import { errorText, recordFailure } from './stats.ts';

/**
 * Reads the status of each open review response request of the credential (operation
 * 10) and records it: a change appends an event row, `Completed`/`Failed` closes the
 * request, `Failed` raises an alert. `Invalid Request ID` closes it as `Invalid`. Any other
 * failed read leaves the request open (polled again next run), keeps the reason in
 * `last_error`, and makes the run partial.
 */
export async function pollResponseRequests(
  context: RunContext,
  credential: Credential,
  businessIds: readonly number[] | undefined,
): Promise<void> {
  const { options, stats, log } = context;
  const db = options.warehouse.db;
  const open = await openResponseRequests(db, {
    accountName: credential.name,
    ...(businessIds ? { businessIds } : {}),
  });
  if (open.length === 0) return;
  const limit = pLimit(options.businessConcurrency ?? DEFAULT_BUSINESS_CONCURRENCY);
  // A too-long pause ends the polling of this credential: one failure, one line.
  let paused: ApiError | undefined;
  await Promise.all(
    open.map((request) =>
      limit(async () => {
        if (context.isStopped() || paused) return;
        const observedAt = context.now(credential);
        let status: string;
        try {
          ({ status } = await context.inFlight.track(
            getResponseStatus(
              options.api,
              credential,
              request.business_id,
              request.review_id,
              request.request_id,
              context.call,
            ),
          ));
        } catch (error) {
          // Cut short by the run's stop: not the upstream's failure; polled next run.
          if (context.isStopped()) return;
          if (error instanceof ApiError && error.code === 'INVALID_REQUEST_ID') {
            // Permanent: the upstream has no such request. Closed, so no later run polls it
            // or ends partial because of it.
            await closeInvalidResponseRequest(db, {
              requestId: request.request_id,
              status: 'Invalid',
              observedAt,
              runId: context.runId,
              error: errorText(error),
            });
            stats.responseRequests.invalid += 1;
            log.warn(
              { credential: credential.name, requestId: request.request_id, err: error },
              'review response request: the upstream does not know it; closed as Invalid',
            );
            return;
          }
          if (error instanceof ApiError && error.code === 'PAUSE_TOO_LONG') {
            if (paused) return;
            paused = error;
            stats.streamFailures += 1;
            recordFailure(stats, {
              credential: credential.name,
              businessId: null,
              stream: 'response-status',
              reason: errorText(error),
            });
            log.error(
              { credential: credential.name, err: error },
              'review response requests: the upstream asked the credential to pause longer than a run waits; the rest stay open',
            );
            return;
          }
          stats.responseRequests.errors += 1;
          stats.streamFailures += 1;
          recordFailure(stats, {
            credential: credential.name,
            businessId: request.business_id,
            stream: 'response-status',
            reason: errorText(error),
          });
          log.warn(
            { credential: credential.name, requestId: request.request_id, err: error },
            'review response request: status read failed; it stays open',
          );
          await recordResponseStatusError(db, request.request_id, errorText(error), observedAt);
          return;
        }
        const recorded = await recordResponseStatus(db, {
          requestId: request.request_id,
          status,
          observedAt,
          runId: context.runId,
          onChanges: alertsUnder(options.alertRules),
        });
        stats.responseRequests.checked += 1;
        if (!recorded) return;
        if (recorded.changed) stats.responseRequests.changed += 1;
        if (recorded.finished && status === 'Completed') stats.responseRequests.completed += 1;
        if (recorded.finished && status === 'Failed') stats.responseRequests.failed += 1;
        if (recorded.alertRaised) stats.alerts += 1;
        if (recorded.changed) {
          log.info(
            {
              credential: credential.name,
              requestId: request.request_id,
              businessId: request.business_id,
              from: recorded.previousStatus,
              to: status,
            },
            'review response request changed status',
          );
        }
      }),
    ),
  );
}
