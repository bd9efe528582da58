/**
 * What the record schemas are built from. A record's schema lives in its operation's
 * module, beside the function that reads it (`listingSchema` in `listings.ts`,
 * `keywordSchema` in `keywords.ts`, …): its input is the raw payload, its output the
 * normalised domain value, and the record's type (`Listing`, `Keyword`, …) is that output,
 * declared there with its columns (`listingShape`, …, `record-shape.ts`) and exported by
 * `index.ts`. A field the upstream adds is one edit in its stream's module
 * (docs/contributing.md, "Adding a column"). Here are the field-level
 * building blocks they share, the envelope every answer comes in, and the record-level
 * validation that keeps one bad record from failing its siblings. Nothing past src/api
 * sees a raw shape. This file imports no operation module: they import it.
 *
 * Quirks absorbed (docs/upstream.md, "Quirks"), and where:
 * - latitude/longitude come as decimal strings or numbers; an empty string means none
 *   (`coordinate`, here).
 * - a rank of `-` means "searched, not ranked" (null) (`rank`, here); `Google_new` holds
 *   `{local, organic}` and becomes the sites `Google_new.local` and `Google_new.organic`
 *   (`rankingEntrySchema`, `rankings.ts`).
 * - a response request id comes as a number or a string; it is always a string
 *   (`requestId`, here).
 * - `live_link` is typed number and served as a URL; always a string (`liveLink`, here).
 * - review dates come as `YYYY-MM-DD` or ISO UTC timestamps; both become instants, with
 *   the precision kept (`reviewDate`, here).
 * - listings may carry only some fields; the directory login and password are dropped
 *   there, only whether one is set survives (`listingSchema`, `listings.ts`).
 * - review `type` values beyond the documented list are kept (`reviewSchema`,
 *   `reviews.ts`).
 * - `success: false` bodies are errors whatever the HTTP status; a reference list may be
 *   served as a bare array instead of `{success, result}` (`readEnvelope`, here).
 *
 * Every value that passes is one its warehouse column can store (docs/warehouse.md):
 * text holds no NUL and no lone UTF-16 surrogate (PostgreSQL's text and jsonb refuse
 * both), text in an index key fits a btree entry, integers fit their column (`smallint` for ranks, `integer` for likes, `bigint` ids within
 * JavaScript's exact range), ids are in their column's type (uuid), and instants fall
 * in years 1 to 9999. A value outside that is a schema failure naming the field, so the
 * record goes to quarantine instead of failing its whole business's write.
 *
 * The schemas a sync runs once per record (business summaries and profiles, listings,
 * reviews, ranking entries and ranks, keywords) are compiled (`z.compile`, each in its
 * module): zod generates a parser for them once, which builds the output in one pass and
 * hands anything it does not model, and every record that fails, to the runtime parser,
 * so results and issues are the runtime's (test/api/compiled-schemas.test.ts). About 2.5
 * times less CPU per review and 3–6 times less per listing (docs/benchmarks.md, "The
 * write path, as measured").
 */
import { z } from 'zod';
import { redactSecrets, redactText } from '../log.ts';
import type { DatePrecision, ListResult, RejectedRecord } from './types.ts';

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
export const id = z.union([
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
export const text = z
  .union([storableString, z.number()])
  .nullish()
  .transform((value) => (value == null ? null : String(value)));

export const flag = z
  .boolean()
  .nullish()
  .transform((value) => value ?? null);

/** A whole number a PostgreSQL `integer` holds (likes and their change), or absent. */
export const count = z
  .number()
  .int('expected a whole number')
  .min(INT4_MIN, 'expected a number the integer column holds (at least -2147483648)')
  .max(INT4_MAX, 'expected a number the integer column holds (at most 2147483647)')
  .nullish()
  .transform((value) => value ?? null);

/** A rating: any finite number (the column is `numeric`), or absent. */
export const rating = z
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
 * PostgreSQL `smallint`: a rank is stored in two bytes (an element of `rank_months.ranks`,
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

/** Where an element of a list answer is, in what a rejection says: its index, `[2]`. */
export const atIndex = (index: number): string => `[${index}]`;

/**
 * Parse each element on its own: one bad record never fails its siblings. `accept` takes
 * each record that passes (with its index and the item it came from); each that does not
 * is refused into `rejected`, saying where by `location`.
 */
export function parseEach<T>(
  schema: z.ZodType<T>,
  items: readonly unknown[],
  location: (index: number) => string,
  accept: (record: T, index: number, item: unknown) => void,
  rejected: RejectedRecord[],
): void {
  items.forEach((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) accept(parsed.data, index, item);
    else
      rejected.push({
        location: location(index),
        reason: describeIssues(parsed.error),
        payload: scrubPayload(item),
      });
  });
}

/** `parseEach` into a list result; a refusal says where by `location`, the index by default. */
export function parseRecords<T>(
  schema: z.ZodType<T>,
  items: readonly unknown[],
  location: (index: number) => string = atIndex,
): ListResult<T> {
  const records: T[] = [];
  const rejected: RejectedRecord[] = [];
  parseEach(schema, items, location, (record) => records.push(record), rejected);
  return { records, rejected };
}

export { isRecord };
