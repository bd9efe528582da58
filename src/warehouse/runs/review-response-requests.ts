/**
 * `review_response_requests` and `review_response_request_events` (migration 0004): the
 * responses submitted through the command line (operation 9) and each status operation
 * 10 answered for them, until `Completed` or `Failed`. A request that ends `Failed` is
 * reported as a change (`changes.ts`) to the caller's `onChanges` (the alert rules,
 * `src/alerts`), in the same transaction as the status change.
 */
import type { Kysely, Selectable } from 'kysely';
import { redactText } from '../../log.ts';
import type { Database, Db, Timestamp } from '../database.ts';
import type { ChangeHandler } from '../write/changes.ts';

/** The statuses after which the upstream never changes a request again. */
export const FINAL_RESPONSE_STATUSES: ReadonlySet<string> = new Set(['Completed', 'Failed']);

export interface NewResponseRequest {
  requestId: string;
  accountName: string;
  businessId: number;
  reviewId: string;
  content: string;
  submittedAt: Date;
  runId?: string | null;
}

/**
 * Records a request operation 9 accepted. Its status starts as `Created`, the first state
 * of every request in the upstream's transitions (docs/upstream.md, "Operations" 10); the first poll replaces it with what the
 * upstream says. A request id already recorded is left as it is.
 */
export async function recordResponseRequest(db: Db, request: NewResponseRequest): Promise<void> {
  const inserted = await db
    .insertInto('review_response_requests')
    .values({
      request_id: request.requestId,
      account_name: request.accountName,
      business_id: request.businessId,
      review_id: request.reviewId,
      content: request.content,
      status: 'Created',
      submitted_at: request.submittedAt,
    })
    .onConflict((oc) => oc.column('request_id').doNothing())
    .returning('request_id')
    .executeTakeFirst();
  if (!inserted) return;
  await db
    .insertInto('review_response_request_events')
    .values({
      request_id: request.requestId,
      status: 'Created',
      observed_at: request.submittedAt,
      previous_status: null,
      run_id: request.runId ?? null,
    })
    .execute();
}

/** Requests not yet `Completed` or `Failed`, oldest first; optionally of some businesses only. */
export async function openResponseRequests(
  db: Db,
  options: { accountName: string; businessIds?: readonly number[] },
): Promise<ReviewResponseRequestRow[]> {
  let query = db
    .selectFrom('review_response_requests')
    .selectAll()
    .where('account_name', '=', options.accountName)
    .where('completed_at', 'is', null)
    .orderBy('submitted_at')
    .orderBy('request_id');
  if (options.businessIds) {
    if (options.businessIds.length === 0) return [];
    query = query.where('business_id', 'in', [...options.businessIds]);
  }
  return query.execute();
}

export async function getResponseRequest(
  db: Db,
  requestId: string,
): Promise<ReviewResponseRequestRow | undefined> {
  return db
    .selectFrom('review_response_requests')
    .selectAll()
    .where('request_id', '=', requestId)
    .executeTakeFirst();
}

export async function responseRequestEvents(
  db: Db,
  requestId: string,
): Promise<ReviewResponseRequestEventRow[]> {
  return db
    .selectFrom('review_response_request_events')
    .selectAll()
    .where('request_id', '=', requestId)
    .orderBy('observed_at')
    .execute();
}

export interface ObservedStatus {
  requestId: string;
  status: string;
  observedAt: Date;
  runId?: string | null;
  /** Told of a `Failed` answer in the transaction that records it (`alertsUnder`, `src/alerts`). */
  onChanges?: ChangeHandler;
}

export interface StatusRecorded {
  /** The status differs from the one stored: an event row was appended. */
  changed: boolean;
  previousStatus: string;
  /** The request reached `Completed` or `Failed` now. */
  finished: boolean;
  /** `onChanges` raised an alert for this answer now. */
  alertRaised: boolean;
}

/**
 * Stores what operation 10 answered, in one transaction: the request's status and check
 * time, an event row when the status changed, `completed_at` on a final status, and, when
 * it is `Failed`, the change handed to `onChanges`. Returns undefined for a request id not recorded here.
 */
export async function recordResponseStatus(
  db: Kysely<Database>,
  observed: ObservedStatus,
): Promise<StatusRecorded | undefined> {
  return db.transaction().execute(async (trx) => {
    const stored = await trx
      .selectFrom('review_response_requests')
      .selectAll()
      .where('request_id', '=', observed.requestId)
      .forUpdate()
      .executeTakeFirst();
    if (!stored) return undefined;
    const changed = stored.status !== observed.status;
    const final = FINAL_RESPONSE_STATUSES.has(observed.status);
    const finished = final && stored.completed_at === null;
    await trx
      .updateTable('review_response_requests')
      .set({
        status: observed.status,
        status_checked_at: observed.observedAt,
        last_error: null,
        ...(finished ? { completed_at: observed.observedAt } : {}),
      })
      .where('request_id', '=', observed.requestId)
      .execute();
    if (changed) {
      await trx
        .insertInto('review_response_request_events')
        .values({
          request_id: observed.requestId,
          status: observed.status,
          observed_at: observed.observedAt,
          previous_status: stored.status,
          run_id: observed.runId ?? null,
        })
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
    let alertRaised = false;
    if (observed.status === 'Failed' && observed.onChanges) {
      const review = await trx
        .selectFrom('reviews')
        .select('site_name')
        .where('review_id', '=', stored.review_id)
        .executeTakeFirst();
      const raised = await observed.onChanges(trx, [
        {
          type: 'response_failed',
          requestId: stored.request_id,
          accountName: stored.account_name,
          businessId: stored.business_id,
          siteName: review?.site_name ?? null,
          previousStatus: stored.status === 'Failed' ? null : stored.status,
          detectedAt: observed.observedAt,
          runId: observed.runId ?? null,
        },
      ]);
      alertRaised = raised > 0;
    }
    return { changed, previousStatus: stored.status, finished, alertRaised };
  });
}

/**
 * Our own final status for a request the upstream says does not exist (`Invalid Request
 * ID`, docs/upstream.md "Errors"): asking again can never succeed, so it is closed.
 */
export const INVALID_REQUEST_STATUS = 'Invalid';

/**
 * Closes a request the upstream does not know: status `Invalid`, `completed_at` set, the
 * reason in `last_error`, and an event row, so later syncs stop polling it.
 */
export async function closeInvalidResponseRequest(
  db: Kysely<Database>,
  observed: ObservedStatus & { error: string },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const stored = await trx
      .selectFrom('review_response_requests')
      .select(['status', 'completed_at'])
      .where('request_id', '=', observed.requestId)
      .forUpdate()
      .executeTakeFirst();
    if (!stored || stored.completed_at !== null) return;
    await trx
      .updateTable('review_response_requests')
      .set({
        status: INVALID_REQUEST_STATUS,
        status_checked_at: observed.observedAt,
        completed_at: observed.observedAt,
        last_error: redactText(observed.error),
      })
      .where('request_id', '=', observed.requestId)
      .execute();
    await trx
      .insertInto('review_response_request_events')
      .values({
        request_id: observed.requestId,
        status: INVALID_REQUEST_STATUS,
        observed_at: observed.observedAt,
        previous_status: stored.status,
        run_id: observed.runId ?? null,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  });
}

/** A status read that failed: the request stays open; the reason is kept (redacted). */
export async function recordResponseStatusError(
  db: Db,
  requestId: string,
  error: string,
  at: Date,
): Promise<void> {
  await db
    .updateTable('review_response_requests')
    .set({ status_checked_at: at, last_error: redactText(error) })
    .where('request_id', '=', requestId)
    .execute();
}

/** Migration 0004: a review response submitted through the command line (operation 9). */
export interface ReviewResponseRequestsTable {
  request_id: string;
  account_name: string;
  business_id: number;
  review_id: string;
  content: string;
  /** The last status operation 10 answered (`Created` at submission). */
  status: string;
  submitted_at: Timestamp;
  status_checked_at: Timestamp | null;
  /** When it reached `Completed` or `Failed`; null while open (polled by every sync). */
  completed_at: Timestamp | null;
  /** Why the last status read failed; null after a successful read. */
  last_error: string | null;
}

/** Migration 0004: each status a request was seen in, first observation first. */
export interface ReviewResponseRequestEventsTable {
  request_id: string;
  status: string;
  observed_at: Timestamp;
  previous_status: string | null;
  run_id: string | null;
}

export type ReviewResponseRequestRow = Selectable<ReviewResponseRequestsTable>;

export type ReviewResponseRequestEventRow = Selectable<ReviewResponseRequestEventsTable>;

declare module '../database.ts' {
  interface Database {
    review_response_requests: ReviewResponseRequestsTable;
    review_response_request_events: ReviewResponseRequestEventsTable;
  }
}
