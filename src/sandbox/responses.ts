/**
 * Review responses: operation 9 (submit) with every refusal of the contract's Errors table (docs/upstream.md),
 * and operation 10 (read a request's status). Refusals are checked in this order:
 * review id, content, ownership, site credentials, site support, an earlier submission
 * (in progress, completed, failed), an existing response. An earlier submission is
 * checked before existing responses so that "completed" stays distinguishable from a
 * response the owner wrote elsewhere.
 */
import { listingFacts } from './listings.ts';
import { hash32, unit } from './random.ts';
import { RESPONDABLE_SITES } from './reference-data.ts';
import { isPending, requestPath, statusOn } from './response-lifecycle.ts';
import {
  decodeReviewId,
  itemExists,
  type ReviewItem,
  responseUuid,
  reviewItem,
  visibleResponses,
} from './reviews.ts';
import {
  type Account,
  accountOfBusinessId,
  type BusinessView,
  findBusiness,
  mutationsFor,
  type RequestStatus,
  type ResponseRequest,
  requestIdForm,
  STREAM,
  touchBusiness,
  type World,
} from './world.ts';

export const RESPONSE_ERRORS = {
  invalidReview: 'Review ID is invalid.',
  emptyContent: 'Review content is empty.',
  notYours: "Review must pertain to a business you've added.",
  noCredentials: 'Site credentials have not been set.',
  notSupported: 'This operation is currently not supported for this site.',
  alreadyResponded: 'A response already exists for this review.',
  inProgress: 'There is already a response submission in progress.',
  completed: 'A response has already been submitted successfully.',
  failed: 'A response has been submitted previously, which failed.',
  invalidRequest: 'Invalid Request ID',
} as const;

export type SubmitOutcome =
  | { ok: true; requestId: number | string }
  | { ok: false; message: string; notFound: boolean };

function refuse(message: string, notFound = false): SubmitOutcome {
  return { ok: false, message, notFound };
}

/** The status of a review's earlier submission on `day`, if it has one. */
function earlierSubmission(
  item: ReviewItem,
  request: ResponseRequest | undefined,
  day: number,
): RequestStatus | null {
  if (request) return statusOn(request.path, request.createdDay, day);
  if (item.prior && item.prior.createdDay <= day) {
    return statusOn(item.prior.path, item.prior.createdDay, day);
  }
  return null;
}

/**
 * Why operation 9 would refuse a response to an owned review today, from the site login
 * on: null when it would accept one. Operation 8's `can_respond` is exactly "null here",
 * so a BI count of answerable reviews agrees with what a response attempt does.
 */
export function respondRefusal(
  world: World,
  business: BusinessView,
  item: ReviewItem,
  day: number,
  responseCount: number,
): string | null {
  if (item.category !== 'review') return RESPONSE_ERRORS.invalidReview;
  const listing = listingFacts(world, business, item.siteName);
  if (!listing?.hasCredentials) return RESPONSE_ERRORS.noCredentials;
  if (!RESPONDABLE_SITES.has(item.siteName)) return RESPONSE_ERRORS.notSupported;
  const earlier = earlierSubmission(item, business.mutations?.requests.get(item.id), day);
  if (earlier && isPending(earlier)) return RESPONSE_ERRORS.inProgress;
  if (earlier === 'Completed') return RESPONSE_ERRORS.completed;
  if (earlier === 'Failed') return RESPONSE_ERRORS.failed;
  if (responseCount > 0) return RESPONSE_ERRORS.alreadyResponded;
  return null;
}

/** Operation 9. `businessId` is the path's; the review's own business decides ownership. */
export function submitResponse(
  world: World,
  account: Account,
  businessId: number,
  reviewId: string,
  body: unknown,
): SubmitOutcome {
  const day = world.day;
  const key = decodeReviewId(world, reviewId);
  const ownerIndex = key ? accountOfBusinessId(world, key.businessId) : -1;
  const owner = world.accounts[ownerIndex];
  const business = key && owner ? findBusiness(world, owner, key.businessId, day) : null;
  if (!key || !business || !itemExists(world, business, key, day)) {
    return refuse(RESPONSE_ERRORS.invalidReview, true);
  }
  const item = reviewItem(world, business, key, day);
  if (item.category !== 'review') return refuse(RESPONSE_ERRORS.invalidReview, true);
  const content =
    typeof body === 'object' && body !== null
      ? (body as Record<string, unknown>)['content']
      : undefined;
  if (typeof content !== 'string' || content.trim() === '') {
    return refuse(RESPONSE_ERRORS.emptyContent);
  }
  if (business.accountIndex !== account.index) return refuse(RESPONSE_ERRORS.notYours);
  if (business.id !== businessId) return refuse(RESPONSE_ERRORS.invalidReview, true);
  const refusal = respondRefusal(
    world,
    business,
    item,
    day,
    visibleResponses(world, business, item, day).length,
  );
  if (refusal) return refuse(refusal);
  const serial = world.nextRequestId++;
  const requestId = requestIdForm(account) === 'number' ? serial : requestUuid(world, serial);
  const request: ResponseRequest = {
    requestId,
    accountIndex: account.index,
    businessId: business.id,
    reviewId: item.id,
    content,
    createdDay: day,
    path: requestPath(unit(hash32(world.seed, STREAM.request, serial))),
  };
  world.requests.set(String(requestId), request);
  mutationsFor(world, business.id).requests.set(item.id, request);
  touchBusiness(world, business.id, false);
  return { ok: true, requestId };
}

/** A uuid request id: version 4 layout, unique per (seed, serial). */
function requestUuid(world: World, serial: number): string {
  return responseUuid(world, `request-id:${serial}`, 'request');
}

/**
 * Operation 10: the request's status on the sandbox's current day, or null if unknown
 * here. The business in the path is checked by the caller, as operations 2–8 do; the
 * request must then be one of that business's, for that review.
 */
export function responseStatus(
  world: World,
  account: Account,
  businessId: number,
  reviewId: string,
  requestId: string,
): RequestStatus | null {
  const key = /^\d+$/.test(requestId) ? String(Number(requestId)) : requestId.toLowerCase();
  const request = world.requests.get(key);
  if (!request || request.accountIndex !== account.index) return null;
  if (request.businessId !== businessId) return null;
  if (request.reviewId !== reviewId.toLowerCase()) return null;
  return statusOn(request.path, request.createdDay, world.day);
}
