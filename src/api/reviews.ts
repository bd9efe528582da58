/** Reviews and review responses: operations 8, 9 and 10 of docs/upstream.md. */
import { z } from 'zod';
import type { Credential } from '../config/index.ts';
import {
  type AnswerBounds,
  checkBound,
  collapseDuplicates,
  DEFAULT_ANSWER_BOUNDS,
  type ParsedEntry,
  SAMPLE_SIZE,
} from './bounds.ts';
import {
  type ApiClient,
  businessRead,
  type CallOptions,
  callUpstream,
  idSegment,
  textSegment,
} from './client.ts';
import { columns as c, column, derivedColumn, recordShape } from './record-shape.ts';
import {
  count,
  isRecord,
  parseEach,
  rating,
  requestId,
  reviewDate,
  scrubPayload,
  storableString,
  text,
  unstorableTextReason,
} from './schemas.ts';
import type { ListResult, RejectedRecord, ResponseRequestStatus, ReviewCategory } from './types.ts';

export const reviewResponseSchema = z
  .object({
    // The warehouse keys responses by uuid (`review_responses.response_id`), as reviews.
    id: z.guid(),
    title: text,
    content: text,
    author_name: text,
    author_avatar: text,
    date: reviewDate,
  })
  .transform((raw) => ({
    id: raw.id,
    title: raw.title,
    content: raw.content,
    authorName: raw.author_name,
    authorAvatar: raw.author_avatar,
    respondedAt: raw.date.at,
    respondedAtPrecision: raw.date.precision,
  }));
export type ReviewResponse = z.output<typeof reviewResponseSchema>;

/** A response's columns (src/api/record-shape.ts): `review_responses` and the Airbyte record. */
export const reviewResponseShape = recordShape<ReviewResponse>()({
  id: c.uuid.as('response_id'),
  title: c.maybeText,
  content: c.maybeText,
  authorName: c.maybeText,
  authorAvatar: c.maybeText,
  respondedAt: c.instant,
  respondedAtPrecision: c.precision,
});

export const reviewSchema = z.compile(
  z
    .object({
      // The warehouse keys reviews by uuid; anything else is a bad record, not a new key.
      id: z.guid(),
      title: text,
      content: storableString.nullish().transform((value) => value ?? ''),
      author_name: text,
      author_avatar: text,
      rating,
      date: reviewDate,
      permalink: text,
      // Unknown types are kept: the documented list is not promised to be complete.
      type: storableString.min(1),
      likes_count: count,
      likes_change: count,
      can_respond: z
        .boolean()
        .nullish()
        .transform((value) => value ?? false),
      responses: z
        .array(reviewResponseSchema)
        .nullish()
        .transform((value) => value ?? []),
    })
    .transform((raw) => ({
      id: raw.id,
      type: raw.type,
      title: raw.title,
      content: raw.content,
      authorName: raw.author_name,
      authorAvatar: raw.author_avatar,
      rating: raw.rating,
      reviewedAt: raw.date.at,
      reviewedAtPrecision: raw.date.precision,
      permalink: raw.permalink,
      likesCount: raw.likes_count,
      likesChange: raw.likes_change,
      canRespond: raw.can_respond,
      responses: raw.responses,
    })),
);
/**
 * A review as the schema sees it; the site and category come from where it was found
 * (`Review` adds them).
 */
export type ReviewFields = z.output<typeof reviewSchema>;

/** A review or social item, with the site and category it was found under. */
export interface Review extends ReviewFields {
  siteName: string;
  category: ReviewCategory;
}

/** A review's columns (src/api/record-shape.ts): `reviews` and the Airbyte record. */
export const reviewShape = recordShape<Review>()({
  id: c.uuid.as('review_id'),
  siteName: c.text,
  category: c.oneOf(['review', 'social']),
  type: c.text,
  title: c.maybeText,
  content: c.text,
  authorName: c.maybeText,
  authorAvatar: c.maybeText,
  rating: column('numeric', z.number().nullable()),
  reviewedAt: c.instant,
  reviewedAtPrecision: c.precision,
  permalink: c.maybeText,
  likesCount: c.count,
  likesChange: c.count,
  canRespond: c.boolean,
  // The row and the record keep how many; the responses are review_responses' rows.
  responses: derivedColumn(
    'integer',
    z.int().describe('how many responses the review has (see review_responses)'),
    (responses: ReviewResponse[]) => responses.length,
    (responses: ReviewResponse[]) => responses.length,
  ).as('response_count'),
});

/** Operation 9's answer. */
export const responseSubmittedSchema = z
  .object({ request_id: requestId, message: text })
  .transform((raw) => ({
    /** The upstream returns a number in samples and types it uuid; always a string here. */
    requestId: raw.request_id,
    message: raw.message,
  }));
export type ResponseSubmitted = z.output<typeof responseSubmittedSchema>;

/** Operation 10's answer: `{status}`, no `success` field. Unknown statuses are kept. */
export const responseStatusSchema = z
  .object({ status: storableString.min(1) })
  .transform((raw) => ({ status: raw.status }));

/** Site name → reviews. An empty result may come as `[]` (an empty hash serialised as a list). */
const reviewsBySite = z.union([
  z.record(z.string(), z.unknown()),
  z.array(z.unknown()).max(0, 'expected an object keyed by site name'),
]);

/**
 * Split the site map into reviews, each validated on its own; location `Site[index]`.
 * More than `reviewsPerAnswer` reviews over all sites refuses the answer (TOO_MANY_RECORDS)
 * before any is read; the same review id twice (on one site or two) collapses when the
 * copies agree and is refused when they do not.
 */
export function reviewsFromResult(
  result: unknown,
  category: ReviewCategory,
  bounds: Readonly<AnswerBounds> = DEFAULT_ANSWER_BOUNDS,
): ListResult<Review> {
  const bySite = reviewsBySite.parse(result);
  const entries: ParsedEntry<Review>[] = [];
  const rejected: RejectedRecord[] = [];
  if (Array.isArray(bySite)) return { records: [], rejected };
  let reviewCount = 0;
  for (const items of Object.values(bySite)) if (Array.isArray(items)) reviewCount += items.length;
  checkBound(bounds, 'reviewsPerAnswer', reviewCount, 'reviews', 'reviews', () =>
    Object.keys(bySite).slice(0, SAMPLE_SIZE),
  );
  for (const [siteName, items] of Object.entries(bySite)) {
    if (items == null) continue;
    const unstorable = unstorableTextReason(siteName);
    if (!Array.isArray(items) || unstorable) {
      rejected.push({
        location: siteName,
        reason: unstorable
          ? `site name: ${unstorable}`
          : 'expected an array of reviews for the site',
        payload: scrubPayload(items),
      });
      continue;
    }
    const location = (index: number) => `${siteName}[${index}]`;
    parseEach(
      reviewSchema,
      items,
      location,
      (fields, index, raw) =>
        entries.push({
          record: withSite(fields, siteName, category),
          location: location(index),
          raw,
        }),
      rejected,
    );
  }
  const collapsed = collapseDuplicates(entries, (r) => r.id.toLowerCase(), 'review');
  return {
    records: collapsed.records,
    rejected: [...rejected, ...collapsed.rejected],
    duplicates: collapsed.duplicates,
  };
}

function withSite(fields: ReviewFields, siteName: string, category: ReviewCategory): Review {
  return { ...fields, siteName, category };
}

/** Operation 8: the reviews (or social items) of a business, per site. */
export function listReviews(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  category: ReviewCategory,
  opts?: CallOptions,
): Promise<ListResult<Review>> {
  return businessRead(
    'list_reviews',
    '/reviews',
    (result, _body, bounds) => reviewsFromResult(result, category, bounds),
    { query: { category }, aside: category },
  )(api, cred, businessId, opts);
}

/**
 * Operation 9: submit a response. Processed asynchronously upstream; follow it with
 * `getResponseStatus`. Never retried: a repeat could post the response twice.
 */
export function respondToReview(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  reviewId: string,
  content: string,
  opts?: CallOptions,
): Promise<ResponseSubmitted> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'respond_to_review',
      method: 'POST',
      path: `/businesses/${idSegment('businessId', businessId)}/reviews/${textSegment('reviewId', reviewId)}/responses.json`,
      subject: `for review ${reviewId} of business ${businessId}`,
      body: { content },
      // `request_id` sits beside `success`, not under `result`; tolerate it under `result` too.
      parse: (result, body) =>
        responseSubmittedSchema.parse(isRecord(result) && 'request_id' in result ? result : body),
    },
    opts,
  );
}

/** Operation 10: the status of a submitted response. The body is `{status}`, no `success`. */
export function getResponseStatus(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  reviewId: string,
  requestId: string | number,
  opts?: CallOptions,
): Promise<{ status: ResponseRequestStatus | string }> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'get_response_status',
      method: 'GET',
      path: `/businesses/${idSegment('businessId', businessId)}/reviews/${textSegment('reviewId', reviewId)}/responses/${textSegment('requestId', requestId)}.json`,
      subject: `for response request ${requestId} of review ${reviewId}`,
      envelope: { bodyIsResult: true },
      parse: (result) => {
        // Some deployments may wrap it as `{success, result: {status}}`.
        const inner = isRecord(result) && isRecord(result['result']) ? result['result'] : result;
        return responseStatusSchema.parse(inner);
      },
    },
    opts,
  );
}
