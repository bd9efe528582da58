/**
 * The body of `api businesses create|update`: the upstream's business input payload
 * (bare, or under `business`), with two conveniences:
 *
 * - hours in the deprecated array (`location_biz_hours_attributes`, also spelled
 *   `location_biz_hour_attributes`) are converted to `biz_hours`, with a warning;
 * - videos under either spelling (`video_attributes`, `videos_attributes`) are sent as
 *   `video_attributes`, the contract's field table's;
 * - `country`, `state` and `sub_category` may be names (or ids), resolved to
 *   `country_id`, `state_id` and `sub_category_id` (see reference-names.ts).
 *
 * Everything else passes through untouched: the upstream validates it, and its message is
 * printed verbatim.
 */
import { z } from 'zod';
import {
  type BusinessHoursDay,
  type BusinessInput,
  WEEKDAYS,
  type Weekday,
} from '../../api/index.ts';
import { UsageError } from '../../usage-error.ts';
import {
  type ReferenceCatalog,
  resolveCountry,
  resolveState,
  resolveSubCategory,
} from './reference-names.ts';

const weekday = z.string().transform((value, ctx): Weekday => {
  const day = WEEKDAYS.find((d) => d.toLowerCase() === value.trim().toLowerCase());
  if (day) return day;
  ctx.addIssue({ code: 'custom', message: `"${value}" is not a weekday (Monday … Sunday)` });
  return z.NEVER;
});

const oldHoursEntry = z
  .object({
    day: weekday,
    holiday: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
      .optional(),
    start_time: z.string().optional(),
    end_time: z.string().optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.holiday) return;
    for (const key of ['start_time', 'end_time'] as const) {
      if (!entry[key]?.trim()) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} is required unless holiday is true`,
        });
      }
    }
  });

const videoEntry = z.looseObject({
  link: z.string({ error: 'expected a video URL (a string)' }).trim().min(1),
});

/** An id, or a name to resolve. */
const idOrName = z.union([z.number().int().positive(), z.string().trim().min(1)]);
const id = z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^\d+$/, 'expected a numeric id')
    .transform((v) => Number(v)),
]);

const businessBody = z.looseObject({
  country: idOrName.optional(),
  country_id: id.optional(),
  state: idOrName.optional(),
  state_id: id.optional(),
  sub_category: idOrName.optional(),
  sub_category_id: id.optional(),
  biz_hours: z.looseObject({ days: z.record(z.string(), z.unknown()) }).optional(),
  location_biz_hours_attributes: z.array(oldHoursEntry).optional(),
  location_biz_hour_attributes: z.array(oldHoursEntry).optional(),
  video_attributes: z.array(videoEntry).optional(),
  videos_attributes: z.array(videoEntry).optional(),
});

type BusinessBody = z.output<typeof businessBody>;

/** `path: message` per issue, the path as in the file (`business.location_biz_hours_attributes.2.day`). */
function describeIssues(error: z.ZodError, prefix: string): string {
  return error.issues
    .map((issue) => {
      const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
      return `${path || '(body)'}: ${issue.message}`;
    })
    .join('; ');
}

export interface PreparedBusiness<T> {
  input: T;
  /** Sentences for standard error (deprecations, what was resolved). */
  warnings: string[];
}

/** The deprecated array as `biz_hours`: a holiday is `closed`, any other day `open` with one slot. */
export function oldHoursToBizHours(entries: ReadonlyArray<z.output<typeof oldHoursEntry>>): {
  days: Partial<Record<Weekday, BusinessHoursDay>>;
} {
  const days: Partial<Record<Weekday, BusinessHoursDay>> = {};
  for (const entry of entries) {
    days[entry.day] = entry.holiday
      ? { type: 'closed' }
      : { type: 'open', slots: [{ start: entry.start_time!.trim(), end: entry.end_time!.trim() }] };
  }
  return { days };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether the body names anything by name, so that the reference catalog is needed. */
export function needsReferenceNames(body: unknown): boolean {
  const inner = isRecord(body) && isRecord(body['business']) ? body['business'] : body;
  if (!isRecord(inner)) return false;
  return ['country', 'state', 'sub_category'].some((key) => inner[key] !== undefined);
}

/**
 * Validates the body, converts old hours and resolves names. `catalog` is needed only
 * when `needsReferenceNames(body)`.
 */
export function prepareBusinessInput(
  body: unknown,
  catalog: ReferenceCatalog | undefined,
): PreparedBusiness<Partial<BusinessInput>> {
  const wrapped = isRecord(body) && Object.keys(body).length === 1 && isRecord(body['business']);
  const inner = wrapped ? (body as Record<string, unknown>)['business'] : body;
  const prefix = wrapped ? 'business' : '';
  if (!isRecord(inner)) {
    throw new UsageError(
      'the body must be a JSON object: the business fields, or {"business": {…}}.',
    );
  }
  const parsed = businessBody.safeParse(inner);
  if (!parsed.success) {
    throw new UsageError(`the business body is not valid: ${describeIssues(parsed.error, prefix)}`);
  }
  const warnings: string[] = [];
  const fields: BusinessBody = { ...parsed.data };
  const out: Record<string, unknown> = { ...fields };

  const oldKeys = (
    ['location_biz_hours_attributes', 'location_biz_hour_attributes'] as const
  ).filter((key) => fields[key] !== undefined);
  if (oldKeys.length > 1 || (oldKeys.length === 1 && fields.biz_hours !== undefined)) {
    throw new UsageError(
      `give the hours once: ${[...(fields.biz_hours ? ['biz_hours'] : []), ...oldKeys].join(' and ')} are both set. Use biz_hours.`,
    );
  }
  for (const key of oldKeys) {
    out['biz_hours'] = oldHoursToBizHours(fields[key]!);
    delete out[key];
    warnings.push(
      `${key} is deprecated (removal announced for 15 March 2018); it was converted to biz_hours. Write biz_hours in the file to silence this warning.`,
    );
  }

  // Videos are `video_attributes` in the contract's field table and `videos_attributes`
  // in its create example (docs/upstream.md, Quirks): either is read, the table's is sent.
  if (fields.video_attributes !== undefined && fields.videos_attributes !== undefined) {
    throw new UsageError(
      'give the videos once: video_attributes and videos_attributes are both set. Use video_attributes.',
    );
  }
  if (fields.videos_attributes !== undefined) {
    out['video_attributes'] = fields.videos_attributes;
    delete out['videos_attributes'];
  }

  const pairs = [
    ['country', 'country_id'],
    ['state', 'state_id'],
    ['sub_category', 'sub_category_id'],
  ] as const;
  for (const [name, idKey] of pairs) {
    if (fields[name] !== undefined && fields[idKey] !== undefined) {
      throw new UsageError(`give ${name} or ${idKey}, not both.`);
    }
    delete out[name];
  }
  const asId = (value: string | number): number | undefined =>
    typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : undefined;
  const need = () => {
    if (!catalog) throw new Error('The reference catalog is needed to resolve names.');
    return catalog;
  };

  let countryId = fields.country_id;
  if (fields.country !== undefined) {
    countryId = asId(fields.country) ?? resolveCountry(need(), String(fields.country)).id;
  }
  if (countryId !== undefined) out['country_id'] = countryId;
  if (fields.state_id !== undefined) out['state_id'] = fields.state_id;
  if (fields.state !== undefined) {
    out['state_id'] =
      asId(fields.state) ?? resolveState(need(), String(fields.state), countryId).id;
  }
  if (fields.sub_category_id !== undefined) out['sub_category_id'] = fields.sub_category_id;
  if (fields.sub_category !== undefined) {
    out['sub_category_id'] =
      asId(fields.sub_category) ?? resolveSubCategory(need(), String(fields.sub_category)).id;
  }
  return { input: out as Partial<BusinessInput>, warnings };
}
