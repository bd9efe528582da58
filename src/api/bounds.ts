/**
 * What one answer may bring, and what one answer may not say twice.
 *
 * Bounds: an answer with more records than a bound allows is refused whole, counted on the
 * parsed JSON before any record is validated (zod builds a copy of each record, and a
 * rankings answer expands into two observations per site), so the memory a business costs
 * does not grow with the shape of one answer (docs/configuration.md, "Limits").
 *
 * Duplicates: the same id twice in one list answer. Copies that agree collapse into one
 * (counted); copies that disagree are both refused with the reason, so neither is stored
 * and the stored row stays as it was (docs/upstream.md, "Quirks").
 */
import { z } from 'zod';
import {
  ANSWER_BOUND_SETTINGS,
  type AnswerBoundSettings,
  DEFAULTS,
  SETTINGS,
  type SettingValues,
} from '../config/index.ts';
import { atIndex, parseEach, scrubPayload } from './schemas.ts';
import type { ListResult, RejectedRecord } from './types.ts';

/**
 * Each bound, by name, as a number. The names, their settings and defaults are the
 * settings table's (src/config/settings.ts, the entries with an `answerBound`): a new
 * bound is an entry there and its `checkBound` in the operation that reads the answer.
 */
export type AnswerBounds = Record<keyof AnswerBoundSettings, number>;

/** The setting behind each bound, for messages. */
export const BOUND_SETTINGS: AnswerBoundSettings = ANSWER_BOUND_SETTINGS;

/** Each bound's value in parsed settings (a `Config`, or `DEFAULTS`). */
export function answerBoundsOf(values: Readonly<SettingValues>): AnswerBounds {
  const bounds: Record<string, number> = {};
  for (const [bound, name] of Object.entries(BOUND_SETTINGS)) {
    bounds[bound] = values[SETTINGS[name].field] as number;
  }
  return bounds as AnswerBounds;
}

/** The settings' defaults, which the table explains. */
export const DEFAULT_ANSWER_BOUNDS: Readonly<AnswerBounds> = Object.freeze(
  answerBoundsOf(DEFAULTS),
);

export function resolveAnswerBounds(overrides: Partial<AnswerBounds> = {}): Readonly<AnswerBounds> {
  const bounds = { ...DEFAULT_ANSWER_BOUNDS, ...overrides };
  for (const [name, value] of Object.entries(bounds)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new RangeError(`bounds.${name} must be a positive integer, got ${value}.`);
    }
  }
  return Object.freeze(bounds);
}

/**
 * Thrown by an operation's parse when an answer is over a bound; the client turns it into
 * TOO_MANY_RECORDS with `summary` as the one quarantined record.
 */
export class AnswerOverBound extends Error {
  override name = 'AnswerOverBound';
  readonly summary: RejectedRecord;

  constructor(detail: string, summary: RejectedRecord) {
    super(detail);
    this.summary = summary;
  }
}

/**
 * Refuse the answer when `count` is over `bounds[bound]`. `what` names the records
 * (`keywords`, `reviews`); `sample` is a few of them for the quarantined summary, never
 * the whole answer.
 */
export function checkBound(
  bounds: Readonly<AnswerBounds>,
  bound: keyof AnswerBounds,
  count: number,
  what: string,
  location: string,
  sample: () => unknown,
): void {
  const limit = bounds[bound];
  if (count <= limit) return;
  const reason = `the answer has ${count} ${what}, more than the ${limit} allowed by ${BOUND_SETTINGS[bound]}; it was refused whole, before any record was validated (raise the setting if such an answer is expected)`;
  throw new AnswerOverBound(reason, {
    location,
    reason,
    payload: { count, limit, setting: BOUND_SETTINGS[bound], sample: scrubPayload(sample()) },
  });
}

/** Up to this many entries of an over-bound answer are kept in its quarantined summary. */
export const SAMPLE_SIZE = 3;

const entries = z.array(z.unknown());

/**
 * A list answer's entries, not yet validated, refused whole (`checkBound`) when there are
 * more than `bound` allows; `what` names them in the reason and is the summary's location.
 */
export function boundedList(
  result: unknown,
  bounds: Readonly<AnswerBounds>,
  bound: keyof AnswerBounds,
  what: string,
): unknown[] {
  const items = entries.parse(result);
  checkBound(bounds, bound, items.length, what, what, () => items.slice(0, SAMPLE_SIZE));
  return items;
}

/** One parsed record with where it was and what it was, for the duplicate check. */
export interface ParsedEntry<T> {
  record: T;
  location: string;
  raw: unknown;
}

export interface CollapsedRecords<T> {
  records: T[];
  rejected: RejectedRecord[];
  /** Identical copies dropped. */
  duplicates: number;
}

/**
 * Collapse the records that share a key: identical copies (equal once parsed) become one
 * and are counted; copies that differ are all refused, each with the reason and its
 * payload (which carries the id, so the warehouse leaves the stored row alone).
 */
export function collapseDuplicates<T>(
  entries: readonly ParsedEntry<T>[],
  key: (record: T) => string,
  what: string,
): CollapsedRecords<T> {
  const groups = new Map<string, ParsedEntry<T>[]>();
  for (const entry of entries) {
    const k = key(entry.record);
    const group = groups.get(k);
    if (group) group.push(entry);
    else groups.set(k, [entry]);
  }
  const records: T[] = [];
  const rejected: RejectedRecord[] = [];
  let duplicates = 0;
  for (const [k, group] of groups) {
    const [first] = group as [ParsedEntry<T>, ...ParsedEntry<T>[]];
    if (group.length === 1) {
      records.push(first.record);
      continue;
    }
    const canonical = canonicalJson(first.record);
    if (group.every((entry) => canonicalJson(entry.record) === canonical)) {
      records.push(first.record);
      duplicates += group.length - 1;
      continue;
    }
    const places = group.map((entry) => entry.location).join(', ');
    for (const entry of group) {
      rejected.push({
        location: entry.location,
        reason: `${what} ${k} appears ${group.length} times in the answer (at ${places}) and the copies disagree; none is stored`,
        payload: scrubPayload(entry.raw),
      });
    }
  }
  return { records, rejected, duplicates };
}

/** JSON with object keys sorted, so that key order never makes two copies differ. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(inner).sort()) sorted[k] = (inner as Record<string, unknown>)[k];
    return sorted;
  });
}

/**
 * Parse each element on its own, then collapse what shares an id (src/api/bounds.ts):
 * identical copies count in `duplicates`, disagreeing ones are all refused (`what` names
 * the record there). A refusal says where by `location`, the index by default.
 */
export function parseUniqueRecords<T extends { id: number | string }>(
  schema: z.ZodType<T>,
  items: readonly unknown[],
  what: string,
  location: (index: number) => string = atIndex,
): ListResult<T> {
  const entries: ParsedEntry<T>[] = [];
  const rejected: RejectedRecord[] = [];
  parseEach(
    schema,
    items,
    location,
    (record, index, raw) => entries.push({ record, location: location(index), raw }),
    rejected,
  );
  const collapsed = collapseDuplicates(entries, (r) => String(r.id).toLowerCase(), what);
  return {
    records: collapsed.records,
    rejected: [...rejected, ...collapsed.rejected],
    duplicates: collapsed.duplicates,
  };
}
