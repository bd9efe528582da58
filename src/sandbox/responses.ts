/**
 * Review responses: operation 9 (submit) with every refusal of docs/upstream.md's Errors table,
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
  reviewItem,
  visibleResponses,
} from './reviews.ts';
import {
  type Account,
  accountOfBusinessId,
  findBusiness,
  mutationsFor,
  type RequestStatus,
  type ResponseRequest,
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
  | { ok: true; requestId: number }
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
  const listing = listingFacts(world, business.id, item.siteName);
  if (!listing?.hasCredentials) return refuse(RESPONSE_ERRORS.noCredentials);
  if (!RESPONDABLE_SITES.has(item.siteName)) return refuse(RESPONSE_ERRORS.notSupported);
  const earlier = earlierSubmission(item, business.mutations?.requests.get(item.id), day);
  if (earlier && isPending(earlier)) return refuse(RESPONSE_ERRORS.inProgress);
  if (earlier === 'Completed') return refuse(RESPONSE_ERRORS.completed);
  if (earlier === 'Failed') return refuse(RESPONSE_ERRORS.failed);
  if (visibleResponses(world, business, item, day).length > 0) {
    return refuse(RESPONSE_ERRORS.alreadyResponded);
  }
  const requestId = world.nextRequestId++;
  const request: ResponseRequest = {
    requestId,
    accountIndex: account.index,
    businessId: business.id,
    reviewId: item.id,
    content,
    createdDay: day,
    path: requestPath(unit(hash32(world.seed, STREAM.request, requestId))),
  };
  world.requests.set(requestId, request);
  mutationsFor(world, business.id).requests.set(item.id, request);
  touchBusiness(world, business.id, false);
  return { ok: true, requestId };
}

/** Operation 10: the request's status on the sandbox's current day, or null if unknown here. */
export function responseStatus(
  world: World,
  account: Account,
  reviewId: string,
  requestId: string,
): RequestStatus | null {
  if (!/^\d+$/.test(requestId)) return null;
  const request = world.requests.get(Number(requestId));
  if (!request || request.accountIndex !== account.index) return null;
  if (request.reviewId !== reviewId.toLowerCase()) return null;
  return statusOn(request.path, request.createdDay, world.day);
}
