/**
 * `reviews`: each business's reviews and social items (operation 8, once per category),
 * written as one stream with their responses.
 */
import { z } from 'zod';
import { listReviews, type Review, type ReviewResponse } from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account, instant, maybeText, precision, text } from './record-fields.ts';

export const reviewRecord = z
  .object({
    account,
    business_id: z.int(),
    id: text,
    site_name: text,
    category: z.enum(['review', 'social']),
    type: text,
    title: maybeText,
    content: text,
    author_name: maybeText,
    author_avatar: maybeText,
    rating: z.number().nullable(),
    reviewed_at: instant,
    reviewed_at_precision: precision,
    permalink: maybeText,
    likes_count: z.int().nullable(),
    likes_change: z.int().nullable(),
    can_respond: z.boolean(),
    responses: z.int().describe('how many responses the review has (see review_responses)'),
  })
  .strict();

export const reviewResponseRecord = z
  .object({
    account,
    business_id: z.int(),
    review_id: text,
    id: text,
    title: maybeText,
    content: maybeText,
    author_name: maybeText,
    author_avatar: maybeText,
    responded_at: instant,
    responded_at_precision: precision,
  })
  .strict();

export function reviewRecordOf(
  name: string,
  businessId: number,
  r: Review,
): z.infer<typeof reviewRecord> {
  return {
    account: name,
    business_id: businessId,
    id: r.id,
    site_name: r.siteName,
    category: r.category,
    type: r.type,
    title: r.title,
    content: r.content,
    author_name: r.authorName,
    author_avatar: r.authorAvatar,
    rating: r.rating,
    reviewed_at: r.reviewedAt?.toISOString() ?? null,
    reviewed_at_precision: r.reviewedAtPrecision,
    permalink: r.permalink,
    likes_count: r.likesCount,
    likes_change: r.likesChange,
    can_respond: r.canRespond,
    responses: r.responses.length,
  };
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
    id: response.id,
    title: response.title,
    content: response.content,
    author_name: response.authorName,
    author_avatar: response.authorAvatar,
    responded_at: response.respondedAt?.toISOString() ?? null,
    responded_at_precision: response.respondedAtPrecision,
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
