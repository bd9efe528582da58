/**
 * `reviews`, `review_versions` and `review_responses`, for both categories (`review` and
 * `social`) at once.
 *
 * A review's content hash covers what a reader would call the review: rating, title and
 * text, author, date, likes and its responses. A version row is appended when that hash
 * differs from the stored one (and for a review seen for the first time). Reviews and
 * responses that a successful read no longer lists get `removed_at`.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Review, ReviewResponse } from '../api/types.ts';
import { type BulkRow, insertRows, upsertRows } from './bulk-write.ts';
import { contentHash } from './content-hash.ts';
import type { Database } from './database.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

type Db = Kysely<Database> | Transaction<Database>;

export function responseToRow(response: ReviewResponse) {
  return {
    response_id: response.id,
    title: response.title,
    content: response.content,
    author_name: response.authorName,
    author_avatar: response.authorAvatar,
    responded_at: response.respondedAt,
    responded_at_precision: response.respondedAtPrecision,
  };
}

/** The stored content of a review: what its content hash covers (with its responses). */
export function reviewToRow(review: Review) {
  return {
    review_id: review.id,
    site_name: review.siteName,
    category: review.category,
    type: review.type,
    title: review.title,
    content: review.content,
    author_name: review.authorName,
    author_avatar: review.authorAvatar,
    rating: review.rating,
    reviewed_at: review.reviewedAt,
    reviewed_at_precision: review.reviewedAtPrecision,
    permalink: review.permalink,
    likes_count: review.likesCount,
    likes_change: review.likesChange,
    can_respond: review.canRespond,
    response_count: review.responses.length,
  };
}

export function reviewContentHash(review: Review): string {
  return contentHash({ ...reviewToRow(review), responses: review.responses.map(responseToRow) });
}

/** Writes every review and social item of one business (all review reads succeeded). */
export async function writeReviews(
  db: Db,
  ctx: BusinessWriteContext,
  reviews: readonly Review[],
): Promise<WriteStats> {
  const { businessId, observedAt } = ctx;
  const stored = await db
    .selectFrom('reviews')
    .select(['review_id', 'content_hash'])
    .where('business_id', '=', businessId)
    .execute();
  const storedHash = new Map(stored.map((row) => [row.review_id, row.content_hash]));

  const latest = new Map(reviews.map((review) => [review.id, review]));
  const rows: BulkRow<'reviews'>[] = [];
  const versions: BulkRow<'review_versions'>[] = [];
  const responses = new Map<string, BulkRow<'review_responses'>>();
  for (const review of latest.values()) {
    const content = reviewToRow(review);
    const hash = reviewContentHash(review);
    rows.push({
      ...content,
      business_id: businessId,
      content_hash: hash,
      first_seen_at: observedAt,
      last_seen_at: observedAt,
      removed_at: null,
    });
    if (storedHash.get(review.id) !== hash) {
      versions.push({
        review_id: review.id,
        observed_at: observedAt,
        content_hash: hash,
        rating: review.rating,
        title: review.title,
        content: review.content,
        likes_count: review.likesCount,
        likes_change: review.likesChange,
        response_count: review.responses.length,
        run_id: ctx.runId,
      });
    }
    for (const response of review.responses) {
      const responseContent = responseToRow(response);
      responses.set(response.id, {
        ...responseContent,
        review_id: review.id,
        business_id: businessId,
        content_hash: contentHash({ ...responseContent, review_id: review.id }),
        first_seen_at: observedAt,
        last_seen_at: observedAt,
        removed_at: null,
      });
    }
  }

  const stats: WriteStats = {};
  const upserted = await upsertRows(
    db,
    {
      table: 'reviews',
      key: ['review_id'],
      columns: [
        'review_id',
        'business_id',
        'site_name',
        'category',
        'type',
        'title',
        'content',
        'author_name',
        'author_avatar',
        'rating',
        'reviewed_at',
        'reviewed_at_precision',
        'permalink',
        'likes_count',
        'likes_change',
        'can_respond',
        'response_count',
        'content_hash',
        'first_seen_at',
        'last_seen_at',
        'removed_at',
      ],
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'business_id', 'removed_at'],
    },
    rows,
  );
  const removedReviews = await sql`
    update reviews set removed_at = ${observedAt}
    where business_id = ${businessId} and removed_at is null
      and review_id <> all(${[...latest.keys()]}::uuid[])`.execute(db);
  addCounts(stats, 'reviews', {
    inserted: upserted.inserted,
    updated: upserted.updated,
    unchanged: upserted.unchanged,
    deleted: Number(removedReviews.numAffectedRows ?? 0),
  });

  const versionsInserted = await insertRows(
    db,
    'review_versions',
    [
      'review_id',
      'observed_at',
      'content_hash',
      'rating',
      'title',
      'content',
      'likes_count',
      'likes_change',
      'response_count',
      'run_id',
    ],
    versions,
    ['review_id', 'observed_at'],
  );
  addCounts(stats, 'review_versions', { inserted: versionsInserted });

  const responsesUpserted = await upsertRows(
    db,
    {
      table: 'review_responses',
      key: ['response_id'],
      columns: [
        'response_id',
        'review_id',
        'business_id',
        'title',
        'content',
        'author_name',
        'author_avatar',
        'responded_at',
        'responded_at_precision',
        'content_hash',
        'first_seen_at',
        'last_seen_at',
        'removed_at',
      ],
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'business_id', 'removed_at'],
    },
    [...responses.values()],
  );
  const removedResponses = await sql`
    update review_responses set removed_at = ${observedAt}
    where business_id = ${businessId} and removed_at is null
      and response_id <> all(${[...responses.keys()]}::uuid[])`.execute(db);
  addCounts(stats, 'review_responses', {
    inserted: responsesUpserted.inserted,
    updated: responsesUpserted.updated,
    unchanged: responsesUpserted.unchanged,
    deleted: Number(removedResponses.numAffectedRows ?? 0),
  });
  return stats;
}
