/**
 * `low_rating_review`: a review seen for the first time, rated at or below the rule's
 * `maxRating`, on a business whose reviews were read before (the first read is the
 * baseline: a business's whole history is not "new"). Social items have no rating and
 * never match. Once per review.
 */

import type { Db } from '../../warehouse/database.ts';
import type { NewReview } from '../../warehouse/write/changes.ts';
import { detail } from '../message-text.ts';
import type { AlertForDelivery } from '../outbox.ts';
import { raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import {
  type AlertKind,
  type AlertKindEntry,
  type ChangeOrigin,
  eachChange,
  raisedFrom,
} from './kind.ts';

export const LOW_RATING_REVIEW = 'low_rating_review' satisfies AlertKind;

/** A low rating: once per review, whatever later edits do. */
export function lowRatingReviewKey(reviewId: string): string {
  return `${LOW_RATING_REVIEW}:${reviewId}`;
}

export async function raiseLowRatingReviews(
  db: Db,
  rules: AlertRules,
  ctx: ChangeOrigin,
  reviews: readonly NewReview[],
): Promise<number> {
  const rule = rules.lowRatingReview;
  if (!rule.enabled) return 0;
  const sites = new Set(rule.sites);
  return raise(
    db,
    reviews
      .filter((r) => r.rating !== null && r.rating <= rule.maxRating)
      .filter((r) => sites.size === 0 || sites.has(r.siteName))
      .map((r) => ({
        kind: LOW_RATING_REVIEW,
        dedupeKey: lowRatingReviewKey(r.reviewId),
        ...raisedFrom(ctx),
        siteName: r.siteName,
        reviewId: r.reviewId,
        previousStatus: null,
        status: `${r.rating} stars`,
        details: { rating: r.rating, author: r.authorName },
      })),
  );
}

export const lowRatingReview: AlertKindEntry<typeof LOW_RATING_REVIEW> = {
  kind: LOW_RATING_REVIEW,
  label: ['low-rated review', 'low-rated reviews'],
  severity: 5,
  icon: ':star:',
  summary: (alert: AlertForDelivery) => {
    const rating = detail(alert, 'rating');
    const author = detail(alert, 'author');
    return `${rating}★ review on ${alert.siteName ?? 'a site'}${typeof author === 'string' && author ? ` by ${author}` : ''}`;
  },
  webhook: (alert) => ({
    review: {
      id: alert.review?.reviewId ?? null,
      site_name: alert.siteName,
      rating: alert.review?.rating ?? null,
      author_name: alert.review?.authorName ?? null,
      permalink: alert.review?.permalink ?? null,
    },
  }),
  raise: {
    on: 'reviews_first_seen',
    raise: eachChange((db, rules, change) =>
      raiseLowRatingReviews(db, rules, change, change.reviews),
    ),
  },
};
