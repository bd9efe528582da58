/**
 * The normalised domain values that the API client returns, after the zod schemas in
 * `src/api/schemas.ts` have absorbed every quirk of the upstream. Everything past the
 * client (sync, warehouse) sees only these shapes.
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
export type { Credential } from '../config/index.ts';

export interface BusinessSummary {
  id: number;
  name: string;
  street: string | null;
  city: string | null;
  stateName: string | null;
  postalCode: string | null;
  phone: string | null;
}

export interface BusinessBasic extends BusinessSummary {
  bizUrl: string | null;
  hideAddress: boolean | null;
}

export interface BusinessHoursEntry {
  day: string;
  /** `HH:MM` 24-hour, or null on a day without hours. */
  startTime: string | null;
  endTime: string | null;
}

export interface BusinessFull extends BusinessSummary {
  latitude: number | null;
  longitude: number | null;
  bizUrl: string | null;
  ownerFirstName: string | null;
  ownerLastName: string | null;
  facebookUrl: string | null;
  twitterUrl: string | null;
  description: string | null;
  tagline: string | null;
  storecode: string | null;
  additionalCategories: string[];
  businessHours: BusinessHoursEntry[];
  hideAddress: boolean | null;
}

export interface BusinessCreated extends BusinessSummary {
  subCategoryName: string | null;
  bizUrl: string | null;
  hideAddress: boolean | null;
}

export interface BusinessUpdated extends BusinessSummary {
  bizUrl: string | null;
}

export const LISTING_STATUSES = ['Accurate', 'Inaccurate', 'Not Present'] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];

export const LISTING_SYNC_STATUSES = ['success', 'error', 'in progress'] as const;
export type ListingSyncStatus = (typeof LISTING_SYNC_STATUSES)[number];

/** A listing. The directory login and password are dropped by the schema: only whether any are set survives. */
export interface Listing {
  id: number;
  siteName: string;
  status: ListingStatus;
  syncStatus: ListingSyncStatus | null;
  orderStatus: string | null;
  name: string | null;
  nameValid: boolean | null;
  phone: string | null;
  phoneValid: boolean | null;
  street: string | null;
  city: string | null;
  state: string | null;
  postalCode: string | null;
  addressValid: boolean | null;
  liveLink: string | null;
  claimed: boolean | null;
  hasSiteCredentials: boolean;
}

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

export interface ReviewResponse {
  id: string;
  title: string | null;
  content: string | null;
  authorName: string | null;
  authorAvatar: string | null;
  respondedAt: Date | null;
  respondedAtPrecision: DatePrecision | null;
}

export interface Review {
  id: string;
  siteName: string;
  category: ReviewCategory;
  type: string;
  title: string | null;
  content: string;
  authorName: string | null;
  authorAvatar: string | null;
  rating: number | null;
  reviewedAt: Date | null;
  reviewedAtPrecision: DatePrecision | null;
  permalink: string | null;
  likesCount: number | null;
  likesChange: number | null;
  canRespond: boolean;
  responses: ReviewResponse[];
}

export interface RankObservation {
  keyword: string;
  site: string;
  /** null where the upstream says `-`. */
  rank: number | null;
}

export interface Keyword {
  id: number;
  keyword: string;
  city: string | null;
  state: string | null;
  primary: boolean | null;
  businessId: number;
  archived: boolean;
}

export interface Country {
  id: number;
  name: string;
}

export interface State {
  id: number;
  name: string;
  iso: string | null;
  countryId: number;
}

export interface SubCategory {
  id: number;
  name: string;
}

export interface ResponseSubmitted {
  /** The upstream returns a number in samples and types it uuid; always a string here. */
  requestId: string;
  message: string | null;
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
