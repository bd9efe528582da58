/**
 * `reviews`: each business's reviews and social items (operation 8, once per category),
 * written as one stream with their responses.
 */
import { z } from 'zod';
import {
  listReviews,
  type Review,
  type ReviewResponse,
  recordOf,
  recordSchemaOf,
  reviewResponseShape,
  reviewShape,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account } from './record-fields.ts';

/** The Airbyte record: the review's shape (`reviewShape`) under its account and business. */
export const reviewRecord = recordSchemaOf(reviewShape, { account, business_id: z.int() });

/** The Airbyte record of a response (`reviewResponseShape`), under its review. */
export const reviewResponseRecord = recordSchemaOf(reviewResponseShape, {
  account,
  business_id: z.int(),
  review_id: z.string(),
});

export function reviewRecordOf(
  name: string,
  businessId: number,
  r: Review,
): z.infer<typeof reviewRecord> {
  return { account: name, business_id: businessId, ...recordOf(reviewShape, r) };
}

export function reviewResponseRecordOf(
  name: string,
  businessId: number,
  reviewId: string,
  response: ReviewResponse,
): z.infer<typeof reviewResponseRecord> {
  return {
    account: name,
    business_id: businessId,
    review_id: reviewId,
    ...recordOf(reviewResponseShape, response),
  };
}

/** The two review categories together; a review served in both keeps its first category. */
export function mergeReviews(reviews: readonly Review[], socials: readonly Review[]): Review[] {
  const seen = new Set(reviews.map((r) => r.id));
  return [...reviews, ...socials.filter((s) => !seen.has(s.id))];
}

export const reviews = defineStream({
  name: 'reviews',
  description: "each business's reviews and social items, with their responses",
  scope: 'business',
  reads: [
    {
      read: 'reviews',
      operation: 'list_reviews',
      fetch: (api, credential, id, options) => listReviews(api, credential, id, 'review', options),
    },
    {
      read: 'socials',
      operation: 'list_reviews',
      fetch: (api, credential, id, options) => listReviews(api, credential, id, 'social', options),
      // The quarantine's name for a refused social item, as it always was.
      quarantineAs: 'social',
    },
  ],
  // A review's id and its responses' ids are the upstream's uuids, in any case.
  claims: (review: Review) => [
    `review:${review.id.toLowerCase()}`,
    ...review.responses.map((response) => `response:${response.id.toLowerCase()}`),
  ],
  // The two reads are written as one stream: both categories, in one list.
  records: (byRead: { reviews: readonly Review[]; socials: readonly Review[] }) =>
    mergeReviews(byRead.reviews, byRead.socials),
  daily: false,
  bounds: ['LISTINGS_MAX_REVIEWS_PER_ANSWER'],
  // Responses go with their reviews.
  removals: 'held-on-volume-drop',
  replay: 'business-reads',
  catalog: [
    {
      name: 'reviews',
      schema: reviewRecord,
      primaryKey: [['account'], ['business_id'], ['site_name'], ['id']],
    },
    {
      name: 'review_responses',
      schema: reviewResponseRecord,
      primaryKey: [['account'], ['business_id'], ['review_id'], ['id']],
    },
  ],
});
