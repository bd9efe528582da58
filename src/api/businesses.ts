/** Businesses: operations 1 to 6 of docs/upstream.md. */

import { z } from 'zod';
import type { Credential } from '../config/index.ts';
import { parseUniqueRecords } from './bounds.ts';
import {
  type ApiClient,
  type BusinessRead,
  businessRead,
  type CallOptions,
  callUpstream,
  idSegment,
  type UpstreamCall,
} from './client.ts';
import { columns as c, derivedColumn, recordShape } from './record-shape.ts';
import { coordinate, flag, id, storableString, text } from './schemas.ts';
import type { ListResult } from './types.ts';

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

/**
 * A summary's columns (src/api/record-shape.ts): the list refreshes these of a stored
 * profile when the full read failed. The business's id is the row's key, set by the writer.
 */
export const businessSummaryShape = recordShape<BusinessSummary>()({
  id: c.id.recordOnly(),
  name: c.text,
  street: c.maybeText,
  city: c.maybeText,
  stateName: c.maybeText,
  postalCode: c.maybeText,
  phone: c.maybeText,
});

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

/** A day's hours as `businesses.business_hours` and the Airbyte record hold them. */
const businessHoursShape = recordShape<BusinessHoursEntry>()({
  day: c.text,
  startTime: c.maybeText,
  endTime: c.maybeText,
});

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

/** A profile's columns (src/api/record-shape.ts): `businesses` and the Airbyte record. */
export const businessShape = recordShape<BusinessFull>()({
  ...businessSummaryShape.columns,
  latitude: c.maybeNumber,
  longitude: c.maybeNumber,
  bizUrl: c.maybeText,
  ownerFirstName: c.maybeText,
  ownerLastName: c.maybeText,
  facebookUrl: c.maybeText,
  twitterUrl: c.maybeText,
  description: c.maybeText,
  tagline: c.maybeText,
  storecode: c.maybeText,
  additionalCategories: derivedColumn(
    'jsonb',
    z.array(z.string()),
    (categories: string[]) => [...categories],
    (categories: string[]) => categories,
  ),
  businessHours: c.listOf(businessHoursShape),
  hideAddress: c.flag,
});

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

/** A weekday's hours in the new form: `open` takes one slot, `split` two, the others none. */
export interface BusinessHoursDay {
  type: 'closed' | 'split' | '24h' | 'open';
  /** Times as `hh:mmam`/`hh:mmpm` or 24-hour `HHMM`. */
  slots?: Array<{ start: string; end: string }>;
}

/** The days of `biz_hours`, as the upstream names them. */
export const WEEKDAYS = [
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
  'Sunday',
] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * The business input payload of create and update, snake_case as the upstream wants it;
 * sent as `{business: input}`. Hours go in `biz_hours` for all seven days or none.
 */
export interface BusinessInput {
  name: string;
  street: string;
  city: string;
  state_id: number;
  country_id: number;
  postal_code: string;
  /** `ddd-ddd-dddd`, as the upstream's validation message cites. */
  phone: string;
  sub_category_id: number;
  /** 200 to 1024 characters on create. */
  description: string;
  biz_url?: string;
  year_of_inc?: string;
  storecode?: string;
  biz_hours?: { days: Record<Weekday, BusinessHoursDay> };
  /** Deprecated old hours array; prefer `biz_hours`. */
  location_biz_hours_attributes?: Array<{
    day: Weekday;
    holiday: boolean;
    start_time?: string;
    end_time?: string;
  }>;
  biz_logo_link?: string;
  biz_cover?: string;
  location_photos_attributes?: Array<{ photo: string }>;
  video_attributes?: Array<{ link: string }>;
  payment_methods_attributes?: Array<{
    name: 'Visa' | 'Cash' | 'Cheque' | 'Master Card' | 'American Express';
    is_accepted: boolean;
  }>;
  facebook_url?: string;
  twitter_url?: string;
  linkedin_url?: string;
  googleplus_url?: string;
  hide_address?: boolean;
  owner_email?: string;
  owner_first_name?: string;
  owner_last_name?: string;
  /** At most 255 characters. */
  tagline?: string;
  /** At most 1024 characters. */
  additional_info?: string;
  /** At most 9 identifiers. */
  additional_categories?: Array<string | number>;
}

const businessList = z.array(z.unknown());

/**
 * Operation 1: every business of the credential, each record validated on its own; the
 * same business id twice collapses when the copies agree and is refused when they do not.
 */
export function listBusinesses(
  api: ApiClient,
  cred: Credential,
  opts?: CallOptions,
): Promise<ListResult<BusinessSummary>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'list_businesses',
      method: 'GET',
      path: '/businesses.json',
      parse: (result) =>
        parseUniqueRecords(businessSummarySchema, businessList.parse(result), 'business'),
    },
    opts,
  );
}

/** Operation 2: the basic read. */
export const getBusiness: BusinessRead<BusinessBasic> = businessRead('get_business', '', (result) =>
  businessBasicSchema.parse(result),
);

/** Operation 3: the full read (`type=all`). */
export const getBusinessFull: BusinessRead<BusinessFull> = businessRead(
  'get_business_full',
  '',
  (result) => businessFullSchema.parse(result),
  { query: { type: 'all' } },
);

/** Operations 4 and 5: `input` sent as `{business: input}`, the answer parsed by `schema`. */
function sendBusiness<T>(
  api: ApiClient,
  cred: Credential,
  call: Pick<UpstreamCall<T>, 'operation' | 'method' | 'path' | 'subject'>,
  input: Partial<BusinessInput>,
  schema: z.ZodType<T>,
  opts?: CallOptions,
): Promise<T> {
  return callUpstream(
    api,
    cred,
    { ...call, body: { business: input }, parse: (result) => schema.parse(result) },
    opts,
  );
}

/** Operation 4. Never retried: a repeat could create the business twice. */
export function createBusiness(
  api: ApiClient,
  cred: Credential,
  input: BusinessInput,
  opts?: CallOptions,
): Promise<BusinessCreated> {
  return sendBusiness(
    api,
    cred,
    { operation: 'create_business', method: 'POST', path: '/businesses.json' },
    input,
    businessCreatedSchema,
    opts,
  );
}

/** Operation 5: a partial business object. */
export function updateBusiness(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  input: Partial<BusinessInput>,
  opts?: CallOptions,
): Promise<BusinessUpdated> {
  return sendBusiness(
    api,
    cred,
    {
      operation: 'update_business',
      method: 'PUT',
      path: `/businesses/${idSegment('businessId', businessId)}.json`,
      subject: `for business ${businessId}`,
    },
    input,
    businessUpdatedSchema,
    opts,
  );
}

/** Operation 6: answers `{success}` only. */
export function archiveBusiness(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  opts?: CallOptions,
): Promise<void> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'archive_business',
      method: 'POST',
      path: `/businesses/${idSegment('businessId', businessId)}/archive.json`,
      subject: `for business ${businessId}`,
      parse: () => undefined,
    },
    opts,
  );
}
