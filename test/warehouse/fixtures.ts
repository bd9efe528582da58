/** Hand-built domain values for the warehouse suites (the shapes the API client returns). */
import { alertsUnder } from '../../src/alerts/raise-for-changes.ts';
import type {
  BusinessFull,
  BusinessSummary,
  Keyword,
  Listing,
  RankObservation,
  Review,
} from '../../src/api/index.ts';
import { listingSchema } from '../../src/api/listings.ts';
import { RECORD_STREAMS, type StreamRecords } from '../../src/streams/index.ts';
import type { BusinessSnapshot, WriteContext } from '../../src/warehouse/write/snapshot.ts';

export const ACCOUNT = 'agency-east';
export const BUSINESS_ID = 1204;
export const RUN_ID = '6f1d9a52-3c1e-4a38-9d55-1b6c0e0c8a01';
export const DAY1 = new Date('2025-03-01T03:00:00.000Z');
export const DAY1_LATER = new Date('2025-03-01T15:30:00.000Z');
export const DAY2 = new Date('2025-03-02T03:00:00.000Z');
export const DAY3 = new Date('2025-03-03T03:00:00.000Z');

/** A run's write context, raising alerts under the built-in rules as the sync does. */
export function ctx(observedAt: Date, runId = RUN_ID): WriteContext {
  return { runId, observedAt, onChanges: alertsUnder() };
}

export function summary(overrides: Partial<BusinessSummary> = {}): BusinessSummary {
  return {
    id: BUSINESS_ID,
    name: 'Harbor Dental',
    street: '12 Pier Rd',
    city: 'Portland',
    stateName: 'Maine',
    postalCode: '04101',
    phone: '207-555-0143',
    ...overrides,
  };
}

export function full(overrides: Partial<BusinessFull> = {}): BusinessFull {
  return {
    ...summary(),
    latitude: 43.6591,
    longitude: -70.2568,
    bizUrl: 'https://harbor.example',
    ownerFirstName: 'Ada',
    ownerLastName: 'Lowe',
    facebookUrl: null,
    twitterUrl: 'https://twitter.example/harbor',
    description: 'Family dentistry by the harbor.',
    tagline: 'Smile at sea level',
    storecode: 'HD-1',
    additionalCategories: ['dentist', 'orthodontist'],
    businessHours: [
      { day: 'Monday', startTime: '09:00', endTime: '17:00' },
      { day: 'Sunday', startTime: null, endTime: null },
    ],
    hideAddress: false,
    ...overrides,
  };
}

// What a listing the upstream sends with only its key fields parses to: a field added to the
// schema (a nullable column) is null here until a test sets it.
const BARE_LISTING = listingSchema.parse({ id: 0, site_name: 'Site0', status: 'Accurate' });

export function listing(id: number, overrides: Partial<Listing> = {}): Listing {
  return {
    ...BARE_LISTING,
    id,
    siteName: `Site${id}`,
    status: 'Accurate',
    syncStatus: 'success',
    orderStatus: null,
    name: 'Harbor Dental',
    nameValid: true,
    phone: '207-555-0143',
    phoneValid: true,
    street: '12 Pier Rd',
    city: 'Portland',
    state: 'ME',
    postalCode: '04101',
    addressValid: true,
    liveLink: `https://dir.example/${id}`,
    claimed: true,
    hasSiteCredentials: false,
    ...overrides,
  };
}

export function reviewId(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

export function review(n: number, overrides: Partial<Review> = {}): Review {
  return {
    id: reviewId(n),
    siteName: 'Google',
    category: 'review',
    type: 'Review',
    title: null,
    content: `Review number ${n}`,
    authorName: 'Pat',
    authorAvatar: null,
    rating: 4.5,
    reviewedAt: new Date('2025-02-20T00:00:00.000Z'),
    reviewedAtPrecision: 'day',
    permalink: null,
    likesCount: null,
    likesChange: null,
    canRespond: true,
    responses: [],
    ...overrides,
  };
}

export function keyword(id: number, text: string, overrides: Partial<Keyword> = {}): Keyword {
  return {
    id,
    keyword: text,
    city: 'Portland',
    state: 'ME',
    primary: id === 1,
    businessId: BUSINESS_ID,
    archived: false,
    ...overrides,
  };
}

export function rank(keywordText: string, site: string, value: number | null): RankObservation {
  return { keyword: keywordText, site, rank: value };
}

/** A snapshot's fields, each record stream's records given flat (`listings: null`). */
export type SnapshotParts = Partial<Omit<BusinessSnapshot, 'records'>> & StreamRecords;

const RECORD_STREAM_NAMES: readonly string[] = RECORD_STREAMS.map((d) => d.name);

/** A snapshot with every stream present; `overrides` replace its fields and streams. */
export function snapshot(overrides: SnapshotParts = {}): BusinessSnapshot {
  const records: StreamRecords = {
    listings: [listing(1), listing(2), listing(3, { status: 'Not Present', claimed: null })],
    reviews: [
      review(1, {
        responses: [
          {
            id: reviewId(901),
            title: null,
            content: 'Thank you!',
            authorName: 'Harbor Dental',
            authorAvatar: null,
            respondedAt: new Date('2025-02-21T10:00:00.000Z'),
            respondedAtPrecision: 'instant',
          },
        ],
      }),
      review(2, {
        category: 'social',
        type: 'LikesCount',
        rating: null,
        likesCount: 12,
        likesChange: 2,
      }),
    ],
    rankings: [
      rank('dentist portland', 'Google', 3),
      rank('dentist portland', 'Bing', null),
      rank('dentist portland', 'Google_new.local', 1),
      rank('dentist portland', 'Google_new.organic', 7),
    ],
    keywords: [keyword(1, 'dentist portland'), keyword(2, 'teeth whitening')],
  };
  const fields: Partial<BusinessSnapshot> = {};
  for (const [key, value] of Object.entries(overrides)) {
    const into = (RECORD_STREAM_NAMES.includes(key) ? records : fields) as Record<string, unknown>;
    into[key] = value;
  }
  return {
    accountName: ACCOUNT,
    businessId: BUSINESS_ID,
    summary: summary(),
    full: full(),
    records,
    rejected: [],
    ...fields,
  };
}
