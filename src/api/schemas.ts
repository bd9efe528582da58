/**
 * Every quirk of the upstream's payloads, in one place. Each schema's input is the raw
 * payload and its output the normalised domain value. A record's type (`Listing`,
 * `Keyword`, …) is its schema's output, declared beside the transform that builds it and
 * re-exported by `types.ts`: a field the upstream adds is one edit here
 * (docs/contributing.md, "Adding a column"). Nothing past this file sees a raw shape.
 *
 * Quirks absorbed here (docs/upstream.md, "Quirks"):
 * - latitude/longitude come as decimal strings or numbers; an empty string means none.
 * - a rank of `-` means "searched, not ranked" (null); `Google_new` holds `{local, organic}`
 *   and becomes the sites `Google_new.local` and `Google_new.organic`.
 * - a response request id comes as a number or a string; it is always a string here.
 * - `live_link` is typed number and served as a URL; always a string here.
 * - review dates come as `YYYY-MM-DD` or ISO UTC timestamps; both become instants, with
 *   the precision kept.
 * - listings may carry only some fields; the directory login and password are dropped
 *   here, only whether one is set survives.
 * - review `type` values beyond the documented list are kept.
 *
 * Every value that passes is one its warehouse column can store (docs/warehouse.md):
 * text holds no NUL and no lone UTF-16 surrogate (PostgreSQL's text and jsonb refuse
 * both), text in an index key fits a btree entry, integers fit their column (`smallint` for ranks, `integer` for likes, `bigint` ids within
 * JavaScript's exact range), ids are in their column's type (uuid), and instants fall
 * in years 1 to 9999. A value outside that is a schema failure naming the field, so the
 * record goes to quarantine instead of failing its whole business's write.
 * - `success: false` bodies are errors whatever the HTTP status; a reference list may be
 *   served as a bare array instead of `{success, result}`.
 *
 * The schemas a sync runs once per record (business summaries and profiles, listings,
 * reviews, ranking entries and ranks, keywords) are compiled (`z.compile`): zod generates
 * a parser for them once, which builds the output in one pass and hands anything it does
 * not model, and every record that fails, to the runtime parser, so results and issues
 * are the runtime's (test/api/compiled-schemas.test.ts). About 2.5 times less CPU per
 * review and 3–6 times less per listing (docs/benchmarks.md, "The write path, as measured").
 */
import { z } from 'zod';
import { redactSecrets, redactText } from '../log.ts';
import {
  type DatePrecision,
  LISTING_STATUSES,
  LISTING_SYNC_STATUSES,
  type ListResult,
  type RankObservation,
  type RejectedRecord,
} from './types.ts';

// ---------------------------------------------------------------------------------------
// Field-level building blocks

/** PostgreSQL `integer`: likes. */
export const INT4_MAX = 2_147_483_647;
export const INT4_MIN = -2_147_483_648;

/**
 * Why a string cannot be stored in a PostgreSQL text or jsonb value, or undefined when
 * it can: NUL is refused by both, and a lone surrogate has no UTF-8 encoding.
 */
export function unstorableTextReason(value: string): string | undefined {
  if (value.includes('\u0000'))
    return 'contains a NUL character (\\u0000), which the database cannot store';
  if (!value.isWellFormed()) {
    return 'contains a lone UTF-16 surrogate (not valid Unicode), which the database cannot store';
  }
  return undefined;
}

/** A string a text or jsonb column can store. */
export const storableString = z.string().superRefine((value, ctx) => {
  const reason = unstorableTextReason(value);
  if (reason) ctx.addIssue({ code: 'custom', message: reason });
});

/**
 * Text that is part of an index key (a listing's site, a keyword, a rank's site): a btree
 * entry holds at most about 2,700 bytes, and 500 characters are at most 2,000 bytes of
 * UTF-8. Real site names and keywords are a few words.
 */
export const INDEXED_TEXT_MAX = 500;
export const indexedString = storableString.max(
  INDEXED_TEXT_MAX,
  `expected at most ${INDEXED_TEXT_MAX} characters (the value is part of an index key)`,
);

/** A numeric id, also accepted as a string of digits; exact in JS, so it fits `bigint`. */
const id = z.union([
  z.number().int().nonnegative(),
  z
    .string()
    .regex(/^\d+$/, 'expected a numeric id')
    .transform((value) => Number(value))
    .refine(Number.isSafeInteger, 'expected a numeric id below 2^53'),
]);

/**
 * The id of a list entry the schema refused, when that id itself reads: the entry still
 * names a listed record (a business whose name the warehouse cannot store is listed).
 */
export function readableIdOf(payload: unknown): number | null {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const parsed = id.safeParse((payload as Record<string, unknown>)['id']);
  return parsed.success ? parsed.data : null;
}

/** Free text that may be absent; numbers (postal codes, phones) are kept as text. */
const text = z
  .union([storableString, z.number()])
  .nullish()
  .transform((value) => (value == null ? null : String(value)));

const flag = z
  .boolean()
  .nullish()
  .transform((value) => value ?? null);

/** A whole number a PostgreSQL `integer` holds (likes and their change), or absent. */
const count = z
  .number()
  .int('expected a whole number')
  .min(INT4_MIN, 'expected a number the integer column holds (at least -2147483648)')
  .max(INT4_MAX, 'expected a number the integer column holds (at most 2147483647)')
  .nullish()
  .transform((value) => value ?? null);

/** A rating: any finite number (the column is `numeric`), or absent. */
const rating = z
  .number()
  .nullish()
  .transform((value) => value ?? null);

/** Latitude or longitude: a number or a decimal string; empty or absent is null. */
export const coordinate = z
  .union([z.number(), z.string()])
  .nullish()
  .transform((value, ctx): number | null => {
    if (value == null) return null;
    if (typeof value === 'number') return Number.isFinite(value) ? value : null;
    const trimmed = value.trim();
    if (trimmed === '') return null;
    const parsed = Number(trimmed);
    if (!Number.isFinite(parsed)) {
      ctx.addIssue({ code: 'custom', message: 'expected a decimal coordinate' });
      return z.NEVER;
    }
    return parsed;
  });

/**
 * PostgreSQL `smallint`: a rank is stored in two bytes (`rank_history.rank`,
 * docs/warehouse.md "Rank history"). A search ranks far fewer than 32,767 results.
 */
export const RANK_MAX = 32_767;

/** A rank: a non-negative integer (or a string of digits), `-` (or null) for none. */
export const rank = z.compile(
  z.union([z.number(), z.string(), z.null()]).transform((value, ctx): number | null => {
    if (value === null) return null;
    const trimmed = typeof value === 'string' ? value.trim() : value;
    if (trimmed === '-') return null;
    const n = typeof trimmed === 'number' ? trimmed : /^\d+$/.test(trimmed) ? Number(trimmed) : NaN;
    if (Number.isInteger(n) && n >= 0 && n <= RANK_MAX) return n;
    ctx.addIssue({
      code: 'custom',
      message: `expected a whole rank from 0 to ${RANK_MAX} (the smallint column) or "-", got ${JSON.stringify(value).slice(0, 40)}`,
    });
    return z.NEVER;
  }),
);

/** A response request id: number or string in, string out. */
export const requestId = z
  .union([z.number().int(), storableString.trim().min(1)])
  .transform((value) => String(value));

/** `live_link`: typed number upstream, served as a URL; always text here. */
export const liveLink = z
  .union([z.number(), storableString])
  .nullish()
  .transform((value) => {
    if (value == null) return null;
    const linkText = String(value).trim();
    return linkText === '' ? null : linkText;
  });

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Years 1 to 9999: PostgreSQL has no year 0 (it reads `0000` as an error), and a UTC
 * offset can push a year-1 or year-9999 instant across either edge.
 */
function storableYear(at: Date): boolean {
  const year = at.getUTCFullYear();
  return year >= 1 && year <= 9999;
}

export interface Instant {
  at: Date | null;
  precision: DatePrecision | null;
}

/** A review date: `YYYY-MM-DD` (midnight UTC, precision `day`) or an ISO UTC instant. */
export const reviewDate = z
  .string()
  .nullish()
  .transform((value, ctx): Instant => {
    const trimmed = value?.trim();
    if (!trimmed) return { at: null, precision: null };
    const day = DATE_ONLY.exec(trimmed);
    if (day) {
      const at = new Date(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3])));
      if (at.toISOString().slice(0, 10) === trimmed && storableYear(at)) {
        return { at, precision: 'day' };
      }
    } else if (ISO_INSTANT.test(trimmed)) {
      const at = new Date(trimmed.replace(' ', 'T'));
      if (!Number.isNaN(at.getTime()) && storableYear(at)) return { at, precision: 'instant' };
    }
    ctx.addIssue({
      code: 'custom',
      message: 'expected a YYYY-MM-DD date or an ISO 8601 timestamp',
    });
    return z.NEVER;
  });

// ---------------------------------------------------------------------------------------
// Businesses

const summaryShape = {
  id,
  name: storableString,
  street: text,
  city: text,
  state_name: text,
  postal_code: text,
  phone: text,
};

type RawSummaryFields = z.output<z.ZodObject<typeof summaryShape>>;

function summaryFrom(raw: RawSummaryFields) {
  return {
    id: raw.id,
    name: raw.name,
    street: raw.street,
    city: raw.city,
    stateName: raw.state_name,
    postalCode: raw.postal_code,
    phone: raw.phone,
  };
}

export const businessSummarySchema = z.compile(
  z.object(summaryShape).transform((raw) => summaryFrom(raw)),
);
export type BusinessSummary = z.output<typeof businessSummarySchema>;

export const businessBasicSchema = z
  .object({ ...summaryShape, biz_url: text, hide_address: flag })
  .transform((raw) => ({
    ...summaryFrom(raw),
    bizUrl: raw.biz_url,
    hideAddress: raw.hide_address,
  }));
export type BusinessBasic = z.output<typeof businessBasicSchema>;

const businessHoursEntrySchema = z
  .object({ day: storableString, start_time: text, end_time: text })
  .transform((raw) => ({
    day: raw.day,
    /** `HH:MM` 24-hour, or null on a day without hours. */
    startTime: raw.start_time,
    endTime: raw.end_time,
  }));
export type BusinessHoursEntry = z.output<typeof businessHoursEntrySchema>;

export const businessFullSchema = z.compile(
  z
    .object({
      ...summaryShape,
      latitude: coordinate,
      longitude: coordinate,
      biz_url: text,
      owner_first_name: text,
      owner_last_name: text,
      facebook_url: text,
      twitter_url: text,
      description: text,
      tagline: text,
      storecode: text,
      additional_categories: z
        .array(z.union([storableString, z.number()]).transform((value) => String(value)))
        .nullish()
        .transform((value) => value ?? []),
      business_hours: z
        .array(businessHoursEntrySchema)
        .nullish()
        .transform((value) => value ?? []),
      hide_address: flag,
    })
    .transform((raw) => ({
      ...summaryFrom(raw),
      latitude: raw.latitude,
      longitude: raw.longitude,
      bizUrl: raw.biz_url,
      ownerFirstName: raw.owner_first_name,
      ownerLastName: raw.owner_last_name,
      facebookUrl: raw.facebook_url,
      twitterUrl: raw.twitter_url,
      description: raw.description,
      tagline: raw.tagline,
      storecode: raw.storecode,
      additionalCategories: raw.additional_categories,
      businessHours: raw.business_hours,
      hideAddress: raw.hide_address,
    })),
);
export type BusinessFull = z.output<typeof businessFullSchema>;

export const businessCreatedSchema = z
  .object({ ...summaryShape, sub_category_name: text, biz_url: text, hide_address: flag })
  .transform((raw) => ({
    ...summaryFrom(raw),
    subCategoryName: raw.sub_category_name,
    bizUrl: raw.biz_url,
    hideAddress: raw.hide_address,
  }));
export type BusinessCreated = z.output<typeof businessCreatedSchema>;

export const businessUpdatedSchema = z
  .object({ ...summaryShape, biz_url: text })
  .transform((raw) => ({ ...summaryFrom(raw), bizUrl: raw.biz_url }));
export type BusinessUpdated = z.output<typeof businessUpdatedSchema>;

// ---------------------------------------------------------------------------------------
// Listings

function isNonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.trim() !== '';
}

export const listingSchema = z.compile(
  z
    .object({
      id,
      // Read only to learn whether a login is set; never copied to the output.
      site_username: z.unknown().optional(),
      site_password: z.unknown().optional(),
      sync_status: z
        .enum(LISTING_SYNC_STATUSES)
        .nullish()
        .transform((value) => value ?? null),
      order_status: text,
      name: text,
      name_valid: flag,
      phone: text,
      phone_valid: flag,
      street: text,
      city: text,
      state: text,
      postal_code: text,
      address_valid: flag,
      live_link: liveLink,
      claimed: flag,
      site_name: indexedString.min(1),
      status: z.enum(LISTING_STATUSES),
    })
    .transform((raw) => ({
      id: raw.id,
      siteName: raw.site_name,
      status: raw.status,
      syncStatus: raw.sync_status,
      orderStatus: raw.order_status,
      name: raw.name,
      nameValid: raw.name_valid,
      phone: raw.phone,
      phoneValid: raw.phone_valid,
      street: raw.street,
      city: raw.city,
      state: raw.state,
      postalCode: raw.postal_code,
      addressValid: raw.address_valid,
      liveLink: raw.live_link,
      claimed: raw.claimed,
      /** Whether a directory login or password is set; neither goes past the schema. */
      hasSiteCredentials:
        isNonEmptyString(raw.site_username) || isNonEmptyString(raw.site_password),
    })),
);
/** A listing. The directory login and password are dropped: only whether any are set survives. */
export type Listing = z.output<typeof listingSchema>;

// ---------------------------------------------------------------------------------------
// Reviews

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
 * (`Review` in `types.ts` adds them).
 */
export type ReviewFields = z.output<typeof reviewSchema>;

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

// ---------------------------------------------------------------------------------------
// Rankings

/**
 * One keyword's entry: site name → rank, where an object value (`Google_new`) holds
 * `{local, organic}` and becomes one site per key.
 */
const splitRank = z.compile(z.object({ local: rank, organic: rank }));

/**
 * A site's value: an object is the split form, anything else a rank. Dispatched by shape
 * rather than a union, so a bad value is reported with the rank's own rule instead of a
 * bare "Invalid input".
 */
const siteRank = z
  .union([z.number(), z.string(), z.null(), z.object({ local: z.unknown(), organic: z.unknown() })])
  .transform((value, ctx): number | null | { local: number | null; organic: number | null } => {
    const parsed =
      value !== null && typeof value === 'object'
        ? splitRank.safeParse(value)
        : rank.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    }
    return z.NEVER;
  });

export const rankingEntrySchema = z.compile(
  z.record(indexedString, siteRank).transform((sites): Array<Omit<RankObservation, 'keyword'>> => {
    const out: Array<Omit<RankObservation, 'keyword'>> = [];
    for (const [site, value] of Object.entries(sites)) {
      if (value !== null && typeof value === 'object') {
        out.push({ site: `${site}.local`, rank: value.local });
        out.push({ site: `${site}.organic`, rank: value.organic });
      } else {
        out.push({ site, rank: value });
      }
    }
    return out;
  }),
);

// ---------------------------------------------------------------------------------------
// Keywords and reference data

export const keywordSchema = z.compile(
  z
    .object({
      id,
      keyword: indexedString.min(1),
      city: text,
      state: text,
      primary: flag,
      location_id: id,
      archived: z
        .boolean()
        .nullish()
        .transform((value) => value ?? false),
    })
    .transform((raw) => ({
      id: raw.id,
      keyword: raw.keyword,
      city: raw.city,
      state: raw.state,
      primary: raw.primary,
      businessId: raw.location_id,
      archived: raw.archived,
    })),
);
export type Keyword = z.output<typeof keywordSchema>;

export const countrySchema = z
  .object({ id, name: storableString.min(1) })
  .transform((raw) => ({ id: raw.id, name: raw.name }));
export type Country = z.output<typeof countrySchema>;

export const stateSchema = z
  .object({ id, name: storableString.min(1), iso: text, country_id: id })
  .transform((raw) => ({ id: raw.id, name: raw.name, iso: raw.iso, countryId: raw.country_id }));
export type State = z.output<typeof stateSchema>;

export const subCategorySchema = z
  .object({ id, name: storableString.min(1) })
  .transform((raw) => ({ id: raw.id, name: raw.name }));
export type SubCategory = z.output<typeof subCategorySchema>;

/** Operation 14's answer: a confirmation sentence under `result`. */
export const deleteConfirmationSchema = z.string();

// ---------------------------------------------------------------------------------------
// Envelopes

export type Envelope =
  | { kind: 'ok'; result: unknown; body: Record<string, unknown> | unknown[] }
  | { kind: 'failure'; message: string; body: Record<string, unknown> }
  | { kind: 'malformed'; reason: string };

export interface EnvelopeOptions {
  /** Accept a bare array as the result (reference lists are served so). */
  bareArray?: boolean;
  /** The body itself is the result, no `success` or `result` (operation 10). */
  bodyIsResult?: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Read `{success, result}` or `{success: false, message}`. `success: false` is a failure
 * whatever the HTTP status; so is a body with a `message` and neither a result nor
 * `success: true` (operation 10 has no `success` field, errors there still carry one).
 */
export function readEnvelope(body: unknown, options: EnvelopeOptions = {}): Envelope {
  if (Array.isArray(body)) {
    return options.bareArray
      ? { kind: 'ok', result: body, body }
      : { kind: 'malformed', reason: 'expected an object, got an array' };
  }
  if (!isRecord(body)) {
    return { kind: 'malformed', reason: `expected an object, got ${describe(body)}` };
  }
  const message = typeof body['message'] === 'string' ? body['message'] : undefined;
  if (body['success'] === false || (body['success'] === 'false' && message !== undefined)) {
    return { kind: 'failure', message: message ?? 'no message given', body };
  }
  if (options.bodyIsResult) {
    if (body['success'] === undefined && message !== undefined && !('status' in body)) {
      return { kind: 'failure', message, body };
    }
    return { kind: 'ok', result: body, body };
  }
  if (!('result' in body)) {
    if (body['success'] === true) return { kind: 'ok', result: undefined, body };
    if (message !== undefined) return { kind: 'failure', message, body };
    return { kind: 'malformed', reason: 'neither `success` nor `result` in the body' };
  }
  return { kind: 'ok', result: body['result'], body };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

// ---------------------------------------------------------------------------------------
// Record-level validation

/** A payload with its secrets removed, for quarantine: passwords redacted, logins dropped. */
export function scrubPayload(payload: unknown): unknown {
  return redactSecrets(dropKeys(payload, /^site_?username$/i));
}

function dropKeys(value: unknown, pattern: RegExp): unknown {
  if (Array.isArray(value)) return value.map((item) => dropKeys(item, pattern));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (!pattern.test(key)) out[key] = dropKeys(inner, pattern);
  }
  return out;
}

/** One line per issue, `path: message`, secret-free. */
export function describeIssues(error: z.ZodError): string {
  return redactText(
    error.issues
      .map((issue) => {
        const path = issue.path.map(String).join('.');
        return path ? `${path}: ${issue.message}` : issue.message;
      })
      .join('; '),
  );
}

/** Parse each element on its own: one bad record never fails its siblings. */
export function parseRecords<T>(
  schema: z.ZodType<T>,
  items: readonly unknown[],
  location: (index: number) => string,
): ListResult<T> {
  const records: T[] = [];
  const rejected: RejectedRecord[] = [];
  items.forEach((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) records.push(parsed.data);
    else
      rejected.push({
        location: location(index),
        reason: describeIssues(parsed.error),
        payload: scrubPayload(item),
      });
  });
  return { records, rejected };
}

export { isRecord };
