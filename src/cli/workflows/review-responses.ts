/**
 * The review-response workflow: `api reviews respond` submits a response (operation 9,
 * never retried) and records the request in `review_response_requests`; every sync then
 * polls it (operation 10) until `Completed` or `Failed` (src/sync/run.ts), and `api
 * reviews response-status` reads it on demand, recording a change the same way.
 */
import { alertsUnder } from '../../alerts/raise-for-changes.ts';
import { getResponseStatus, respondToReview } from '../../api/index.ts';
import { observationTime } from '../../sync/observation-clock.ts';
import { upsertAccount } from '../../warehouse/runs/accounts.ts';
import {
  getResponseRequest,
  recordResponseRequest,
  recordResponseStatus,
  responseRequestEvents,
} from '../../warehouse/runs/review-response-requests.ts';
import { EXIT, type Session, UsageError, type WorkflowIo } from './command-context.ts';
import { type OutputFormat, renderOutput } from './output.ts';
import { resyncBusinesses } from './resync.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseReviewId(value: string): string {
  const trimmed = value.trim();
  if (!UUID.test(trimmed)) throw new UsageError(`a review id is a uuid (got "${value}").`);
  return trimmed.toLowerCase();
}

/** The response text: `--content`, or `{"content": "…"}` from the body. */
export function responseContent(body: unknown, content: string | undefined): string {
  if (content !== undefined && body !== undefined) {
    throw new UsageError('give the response with --content or with --file, not both.');
  }
  if (content !== undefined) return content;
  if (typeof body === 'string') return body;
  const value = (body as { content?: unknown } | null)?.content;
  if (typeof value !== 'string') {
    throw new UsageError('the body must be {"content": "the response text"}.');
  }
  return value;
}

export async function submitReviewResponse(
  io: WorkflowIo,
  session: Session,
  request: { businessId: number; reviewId: string; content: string; format: OutputFormat },
): Promise<number> {
  // Opened first: a request the warehouse cannot record would never be followed.
  const warehouse = await session.warehouse();
  const { credential } = session;
  const submitted = await respondToReview(
    session.api,
    credential,
    request.businessId,
    request.reviewId,
    request.content,
  );
  // On the upstream's clock, as every sync records the request's later statuses.
  const submittedAt = io.now ? io.now() : observationTime(session.api, credential).at;
  await upsertAccount(warehouse.db, {
    name: credential.name,
    userEmail: credential.userEmail,
    baseUrl: credential.baseUrl,
  });
  await recordResponseRequest(warehouse.db, {
    requestId: submitted.requestId,
    accountName: credential.name,
    businessId: request.businessId,
    reviewId: request.reviewId,
    content: request.content,
    submittedAt,
  });
  io.stdout(
    renderOutput(
      {
        requestId: submitted.requestId,
        businessId: request.businessId,
        reviewId: request.reviewId,
        status: 'Created',
        message: submitted.message,
      },
      request.format,
    ),
  );
  io.stderr(
    `Response submitted as request ${submitted.requestId}; every sync follows it until Completed or Failed ` +
      `(now: listings-sync api reviews response-status ${submitted.requestId}).\n`,
  );
  const synced = await resyncBusinesses(io, session, [request.businessId]);
  return synced ? EXIT.ok : EXIT.partial;
}

export async function showResponseStatus(
  io: WorkflowIo,
  session: Session,
  request: { requestId: string; businessId?: number; reviewId?: string; format: OutputFormat },
): Promise<number> {
  const warehouse = await session.warehouse();
  const stored = await getResponseRequest(warehouse.db, request.requestId);
  if (stored && stored.account_name !== session.credential.name) {
    throw new UsageError(
      `request ${request.requestId} was submitted with credential ${stored.account_name}; run with --account ${stored.account_name}.`,
    );
  }
  const businessId = request.businessId ?? stored?.business_id;
  const reviewId = request.reviewId ?? stored?.review_id;
  if (businessId === undefined || reviewId === undefined) {
    throw new UsageError(
      `request ${request.requestId} is not recorded in the warehouse: give --business-id and --review-id.`,
    );
  }
  const { status } = await getResponseStatus(
    session.api,
    session.credential,
    businessId,
    reviewId,
    request.requestId,
  );
  const observedAt = io.now ? io.now() : observationTime(session.api, session.credential).at;
  let events: Array<{ status: string; observedAt: Date }> | undefined;
  if (stored) {
    await recordResponseStatus(warehouse.db, {
      requestId: request.requestId,
      status,
      observedAt,
      onChanges: alertsUnder(session.config.alertRules),
    });
    events = (await responseRequestEvents(warehouse.db, request.requestId)).map((e) => ({
      status: e.status,
      observedAt: e.observed_at,
    }));
  }
  io.stdout(
    renderOutput(
      {
        requestId: request.requestId,
        businessId,
        reviewId,
        status,
        ...(stored ? { submittedAt: stored.submitted_at, history: events } : {}),
      },
      request.format,
    ),
  );
  return EXIT.ok;
}
