/**
 * The normalised domain values that the API client returns, after the zod schemas in
 * `src/api/schemas.ts` have absorbed every quirk of the upstream. Everything past the
 * client (sync, warehouse) sees only these shapes. A record's type is its schema's output,
 * declared in schemas.ts beside the transform that builds it and re-exported here, so a
 * field is added in one place.
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
import type { ReviewFields } from './schemas.ts';

export type { Credential } from '../config/index.ts';
export type {
  BusinessBasic,
  BusinessCreated,
  BusinessFull,
  BusinessHoursEntry,
  BusinessSummary,
  BusinessUpdated,
  Country,
  Keyword,
  Listing,
  ResponseSubmitted,
  ReviewResponse,
  State,
  SubCategory,
} from './schemas.ts';

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

/** A review or social item, with the site and category it was found under. */
export interface Review extends ReviewFields {
  siteName: string;
  category: ReviewCategory;
}

export interface RankObservation {
  keyword: string;
  site: string;
  /** null where the upstream says `-`. */
  rank: number | null;
}

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
