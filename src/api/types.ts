/**
 * The normalised domain values that the API client returns, after the zod schemas have
 * absorbed every quirk of the upstream. Everything past the client (sync, warehouse) sees
 * only these shapes. A record's type is its schema's output, declared beside the schema in
 * its operation's module (`Listing` in `listings.ts`, `Keyword` in `keywords.ts`, …), with
 * its columns (`listingShape`, …, src/api/record-shape.ts); importers outside src/api take
 * both from `index.ts`. What is declared here is shared by several operation modules: the
 * list result and its rejected records, a date's precision, the review categories and the
 * status lists.
 *
 * Glossary
 * - business: a location the user added (the upstream also calls it `location_id`).
 * - listing: the business's entry on one third-party directory (`site_name`), with its
 *   match `status` against the user's data (`Accurate`, `Inaccurate`, `Not Present`).
 * - review / social item: one entry of the reviews operation, in `category` `review` or
 *   `social`; social items carry likes counts.
 * - rank observation: one keyword's rank on one search site; `rank` is null where the
 *   upstream says `-` (searched, not ranked). `Google_new` becomes two sites,
 *   `Google_new.local` and `Google_new.organic`.
 * - rejected record: an element of a list payload that failed its schema; kept with its
 *   reason so the sync can quarantine it while its siblings load.
 */
export const LISTING_STATUSES = ['Accurate', 'Inaccurate', 'Not Present'] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];

export const LISTING_SYNC_STATUSES = ['success', 'error', 'in progress'] as const;

export type ReviewCategory = 'review' | 'social';

/** The upstream's documented review types (docs/upstream.md); other values are kept as they come. */
export const KNOWN_REVIEW_TYPES = [
  'Photo',
  'Comment',
  'Tweet',
  'Attraction',
  'LikesCount',
  'Message',
  'Review',
] as const;

/** `day` for a `YYYY-MM-DD` date (taken as midnight UTC), `instant` for a full timestamp. */
export type DatePrecision = 'day' | 'instant';

export const RESPONSE_REQUEST_STATUSES = [
  'Created',
  'In Progress',
  'Completed',
  'Failed',
  'Retry In Progress',
] as const;
export type ResponseRequestStatus = (typeof RESPONSE_REQUEST_STATUSES)[number];

/** A list element that failed its schema. `payload` has its secrets removed. */
export interface RejectedRecord {
  /** Where it was: an index, or a site name and index for reviews, or a keyword for ranks. */
  location: string;
  reason: string;
  payload: unknown;
}

/** A list result: the good records, and each bad record with its reason. */
export interface ListResult<T> {
  records: T[];
  rejected: RejectedRecord[];
  /**
   * Identical copies of a record that the answer repeated and that were collapsed into one
   * (listings, reviews, businesses); copies that disagree are in `rejected` instead.
   */
  duplicates?: number;
}
