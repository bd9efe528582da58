/**
 * The streams the Airbyte source offers (docs/airbyte.md, "Streams"): each one's record
 * schema (zod, from which the catalog's JSON schema is made), primary key and sync modes,
 * and how a domain value of src/api becomes a record. Records carry the client's
 * normalised values: numbers for latitude and longitude, null for a `-` rank, ISO 8601
 * text for instants, and never a directory login or password (the client drops them).
 */
import { z } from 'zod';
import type {
  BusinessFull,
  Country,
  Keyword,
  Listing,
  RankObservation,
  Review,
  ReviewResponse,
  State,
  SubCategory,
} from '../api/types.ts';
import { LISTING_STATUSES, LISTING_SYNC_STATUSES } from '../api/types.ts';
import type { AirbyteStream, JsonSchema, SyncMode } from './protocol.ts';

export const STREAM_NAMES = [
  'businesses',
  'listings',
  'reviews',
  'review_responses',
  'rankings',
  'keywords',
  'countries',
  'states',
  'sub_categories',
] as const;
export type StreamName = (typeof STREAM_NAMES)[number];

const text = z.string();
const maybeText = z.string().nullable();
const instant = z.iso.datetime({ offset: true }).nullable();
const precision = z.enum(['day', 'instant']).nullable();
/** The credential a record was read with: its `name` in the configuration. */
const account = z.string().describe('the name of the credential the record was read with');

const businessRecord = z
  .object({
    account,
    id: z.int(),
    name: text,
    street: maybeText,
    city: maybeText,
    state_name: maybeText,
    postal_code: maybeText,
    phone: maybeText,
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    biz_url: maybeText,
    owner_first_name: maybeText,
    owner_last_name: maybeText,
    facebook_url: maybeText,
    twitter_url: maybeText,
    description: maybeText,
    tagline: maybeText,
    storecode: maybeText,
    additional_categories: z.array(text),
    business_hours: z.array(
      z.object({ day: text, start_time: maybeText, end_time: maybeText }).strict(),
    ),
    hide_address: z.boolean().nullable(),
  })
  .strict();

const listingRecord = z
  .object({
    account,
    business_id: z.int(),
    id: z.int(),
    site_name: text,
    status: z.enum(LISTING_STATUSES),
    sync_status: z.enum(LISTING_SYNC_STATUSES).nullable(),
    order_status: maybeText,
    name: maybeText,
    name_valid: z.boolean().nullable(),
    phone: maybeText,
    phone_valid: z.boolean().nullable(),
    street: maybeText,
    city: maybeText,
    state: maybeText,
    postal_code: maybeText,
    address_valid: z.boolean().nullable(),
    live_link: maybeText,
    claimed: z.boolean().nullable(),
    has_site_credentials: z
      .boolean()
      .describe(
        'whether the directory login is set; the login and password never leave the client',
      ),
  })
  .strict();

const reviewRecord = z
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

const reviewResponseRecord = z
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

const rankingRecord = z
  .object({
    account,
    business_id: z.int(),
    keyword: text,
    site: text,
    day: z.iso.date().describe("the upstream's UTC day the rank was read on (docs/warehouse.md)"),
    rank: z.int().nullable().describe('null where the upstream says "-" (searched, not ranked)'),
  })
  .strict();

const keywordRecord = z
  .object({
    account,
    id: z.int(),
    business_id: z.int(),
    keyword: text,
    city: maybeText,
    state: maybeText,
    primary: z.boolean().nullable(),
    archived: z.boolean(),
  })
  .strict();

const countryRecord = z.object({ id: z.int(), name: text }).strict();
const stateRecord = z
  .object({ id: z.int(), name: text, iso: maybeText, country_id: z.int() })
  .strict();
const subCategoryRecord = z.object({ id: z.int(), name: text }).strict();

interface StreamShape {
  schema: z.ZodObject;
  primaryKey: string[][];
  /** Incremental streams: the cursor field. */
  cursor?: string;
}

const SHAPES: Record<StreamName, StreamShape> = {
  businesses: { schema: businessRecord, primaryKey: [['id']] },
  listings: { schema: listingRecord, primaryKey: [['business_id'], ['id']] },
  reviews: { schema: reviewRecord, primaryKey: [['business_id'], ['site_name'], ['id']] },
  review_responses: {
    schema: reviewResponseRecord,
    primaryKey: [['business_id'], ['review_id'], ['id']],
  },
  rankings: {
    schema: rankingRecord,
    primaryKey: [['business_id'], ['keyword'], ['site'], ['day']],
    cursor: 'day',
  },
  keywords: { schema: keywordRecord, primaryKey: [['id']] },
  countries: { schema: countryRecord, primaryKey: [['id']] },
  states: { schema: stateRecord, primaryKey: [['id']] },
  sub_categories: { schema: subCategoryRecord, primaryKey: [['id']] },
};

export function isIncremental(name: StreamName): boolean {
  return SHAPES[name].cursor !== undefined;
}

/** The stream as `discover` lists it. */
export function airbyteStream(name: StreamName): AirbyteStream {
  const shape = SHAPES[name];
  const modes: SyncMode[] = shape.cursor ? ['full_refresh', 'incremental'] : ['full_refresh'];
  return {
    name,
    json_schema: jsonSchemaOf(shape.schema),
    supported_sync_modes: modes,
    source_defined_primary_key: shape.primaryKey,
    ...(shape.cursor
      ? { source_defined_cursor: true, default_cursor_field: [shape.cursor], is_resumable: true }
      : {}),
  };
}

function jsonSchemaOf(schema: z.ZodObject): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'draft-7' }) as JsonSchema;
  return json;
}

// The records, from the client's values. Each is typed by its stream's schema, so a
// field added to one and not the other fails the type check.

export function businessRecordOf(name: string, b: BusinessFull): z.infer<typeof businessRecord> {
  return {
    account: name,
    id: b.id,
    name: b.name,
    street: b.street,
    city: b.city,
    state_name: b.stateName,
    postal_code: b.postalCode,
    phone: b.phone,
    latitude: b.latitude,
    longitude: b.longitude,
    biz_url: b.bizUrl,
    owner_first_name: b.ownerFirstName,
    owner_last_name: b.ownerLastName,
    facebook_url: b.facebookUrl,
    twitter_url: b.twitterUrl,
    description: b.description,
    tagline: b.tagline,
    storecode: b.storecode,
    additional_categories: b.additionalCategories,
    business_hours: b.businessHours.map((h) => ({
      day: h.day,
      start_time: h.startTime,
      end_time: h.endTime,
    })),
    hide_address: b.hideAddress,
  };
}

export function listingRecordOf(
  name: string,
  businessId: number,
  l: Listing,
): z.infer<typeof listingRecord> {
  return {
    account: name,
    business_id: businessId,
    id: l.id,
    site_name: l.siteName,
    status: l.status,
    sync_status: l.syncStatus,
    order_status: l.orderStatus,
    name: l.name,
    name_valid: l.nameValid,
    phone: l.phone,
    phone_valid: l.phoneValid,
    street: l.street,
    city: l.city,
    state: l.state,
    postal_code: l.postalCode,
    address_valid: l.addressValid,
    live_link: l.liveLink,
    claimed: l.claimed,
    has_site_credentials: l.hasSiteCredentials,
  };
}

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

export function rankingRecordOf(
  name: string,
  businessId: number,
  day: string,
  o: RankObservation,
): z.infer<typeof rankingRecord> {
  return {
    account: name,
    business_id: businessId,
    keyword: o.keyword,
    site: o.site,
    day,
    rank: o.rank,
  };
}

export function keywordRecordOf(name: string, k: Keyword): z.infer<typeof keywordRecord> {
  return {
    account: name,
    id: k.id,
    business_id: k.businessId,
    keyword: k.keyword,
    city: k.city,
    state: k.state,
    primary: k.primary,
    archived: k.archived,
  };
}

export function countryRecordOf(c: Country): z.infer<typeof countryRecord> {
  return { id: c.id, name: c.name };
}

export function stateRecordOf(s: State): z.infer<typeof stateRecord> {
  return { id: s.id, name: s.name, iso: s.iso, country_id: s.countryId };
}

export function subCategoryRecordOf(s: SubCategory): z.infer<typeof subCategoryRecord> {
  return { id: s.id, name: s.name };
}
