/**
 * Validation of the business input payload (operations 4 and 5), with the contract's exact
 * messages (docs/upstream.md, Errors). Every failure message starts `The business was not created.` (the contract uses
 * it for update too). Attribute failures are joined, in field order, as sentences:
 * `The business was not created. Name is too short (minimum is 2 characters). Phone is invalid.`
 * so a single failure reads exactly like the contract's rows (`... State can't be blank.`).
 * Attribute failures are reported before hours failures.
 *
 * The contract quotes only some attribute sentences (name too short, phone invalid, state
 * and sub category blank). The others (`X can't be blank`, `X is invalid`, `X is too
 * long (maximum is N characters)`, `Description is too short (minimum is 200
 * characters)`, and `Business can't be blank.` for a body without `business`) are the
 * sandbox's own, in the same Rails-like style (docs/upstream.md, "What the sandbox
 * assumes"): a client must match only the `The business was not created.` prefix.
 */
import { COUNTRIES, STATE_BY_ID, SUB_CATEGORY_BY_ID, WEEKDAYS } from './reference-data.ts';
import type { HoursEntry } from './world.ts';

export const NOT_CREATED = 'The business was not created.';
export const HOURS_ALL_DAYS = `${NOT_CREATED} Operating hours should include all days of the week.`;
export const HOURS_BLANK = `${NOT_CREATED} Please specify valid operating hours for each day of the week.`;
export const HOURS_FORMAT = `${NOT_CREATED} Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.`;

const PAYMENT_METHODS = new Set(['Visa', 'Cash', 'Cheque', 'Master Card', 'American Express']);

/** The accepted fields, already converted to the profile's shapes. */
export interface BusinessFields {
  name?: string;
  street?: string;
  city?: string;
  stateId?: number;
  countryId?: number;
  postalCode?: string;
  phone?: string;
  bizUrl?: string;
  subCategoryId?: number;
  description?: string;
  storecode?: string;
  tagline?: string;
  hideAddress?: boolean;
  facebookUrl?: string | null;
  twitterUrl?: string | null;
  ownerFirstName?: string;
  ownerLastName?: string;
  additionalCategories?: string[];
  /** Hours per weekday given; all seven on create when any. */
  hours?: HoursEntry[];
  extra: Record<string, unknown>;
}

export type ValidationResult =
  | { ok: true; fields: BusinessFields }
  | { ok: false; message: string };

type Mode = 'create' | 'update';

/** What each check of a business body reads (the body, create or update) and fills. */
interface BusinessCheck {
  business: Record<string, unknown>;
  mode: Mode;
  /** The upstream's sentences for what is wrong, in its order. */
  problems: string[];
  fields: BusinessFields;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An id given as a number or a numeric string (form posts send strings). */
function asId(value: unknown): number | null {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value.trim())) return Number(value.trim());
  return null;
}

const TWELVE_HOUR = /^(0\d|1[0-2]):([0-5]\d) ?([ap]m)$/i;
const TWENTY_FOUR_HOUR = /^([01]\d|2[0-3])([0-5]\d)$/;

/** `HH:MM` from `hh:mmam`, `hh:mm am` or `HHMM`; null when the format is wrong. */
export function parseTime(value: string): string | null {
  const twelve = TWELVE_HOUR.exec(value);
  if (twelve) {
    let hour = Number(twelve[1]) % 12;
    if (twelve[3]!.toLowerCase() === 'pm') hour += 12;
    return `${String(hour).padStart(2, '0')}:${twelve[2]}`;
  }
  const twentyFour = TWENTY_FOUR_HOUR.exec(value);
  if (twentyFour) return `${twentyFour[1]}:${twentyFour[2]}`;
  return null;
}

type HoursOutcome = { hours: HoursEntry[] } | { message: string } | null;

function weekday(name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  return WEEKDAYS.find((d) => d.toLowerCase() === name.trim().toLowerCase());
}

function parseSlotTime(value: unknown): string | { message: string } {
  if (typeof value !== 'string' || value.trim() === '') return { message: HOURS_BLANK };
  return parseTime(value) ?? { message: HOURS_FORMAT };
}

/** The new form: `{days: {Monday: {type, slots: [{start, end}]}}}`. */
function parseBizHours(value: unknown, mode: Mode): HoursOutcome {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return { message: HOURS_BLANK };
  const days = value['days'];
  if (days === undefined || days === null) return null;
  if (!isObject(days)) return { message: HOURS_BLANK };
  const entries = Object.entries(days);
  if (entries.length === 0) return null;
  const hours: HoursEntry[] = [];
  for (const [name, spec] of entries) {
    const day = weekday(name);
    if (!day || hours.some((h) => h.day === day)) return { message: HOURS_ALL_DAYS };
    if (!isObject(spec)) return { message: HOURS_BLANK };
    const type = spec['type'];
    if (type === 'closed') {
      hours.push({ day, start_time: null, end_time: null });
      continue;
    }
    if (type === '24h') {
      hours.push({ day, start_time: '00:00', end_time: '23:59' });
      continue;
    }
    const slots = spec['slots'];
    const wanted = type === 'open' ? 1 : type === 'split' ? 2 : 0;
    if (wanted === 0 || !Array.isArray(slots) || slots.length !== wanted) {
      return { message: HOURS_BLANK };
    }
    const times: string[] = [];
    for (const slot of slots) {
      if (!isObject(slot)) return { message: HOURS_BLANK };
      for (const edge of [slot['start'], slot['end']]) {
        const parsed = parseSlotTime(edge);
        if (typeof parsed !== 'string') return parsed;
        times.push(parsed);
      }
    }
    hours.push({ day, start_time: times[0]!, end_time: times[times.length - 1]! });
  }
  if (mode === 'create' && hours.length !== WEEKDAYS.length) return { message: HOURS_ALL_DAYS };
  return { hours: sortHours(hours) };
}

/** The deprecated array form: `[{day, holiday, start_time, end_time}]`. */
function parseOldHours(value: unknown, mode: Mode): HoursOutcome {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) return { message: HOURS_BLANK };
  if (value.length === 0) return null;
  const hours: HoursEntry[] = [];
  for (const entry of value) {
    if (!isObject(entry)) return { message: HOURS_BLANK };
    const day = weekday(entry['day']);
    if (!day || hours.some((h) => h.day === day)) return { message: HOURS_ALL_DAYS };
    const holiday = entry['holiday'] === true || entry['holiday'] === 'true';
    if (holiday) {
      hours.push({ day, start_time: null, end_time: null });
      continue;
    }
    const start = parseSlotTime(entry['start_time']);
    if (typeof start !== 'string') return start;
    const end = parseSlotTime(entry['end_time']);
    if (typeof end !== 'string') return end;
    hours.push({ day, start_time: start, end_time: end });
  }
  if (mode === 'create' && hours.length !== WEEKDAYS.length) return { message: HOURS_ALL_DAYS };
  return { hours: sortHours(hours) };
}

function sortHours(hours: HoursEntry[]): HoursEntry[] {
  return hours.sort((a, b) => WEEKDAYS.indexOf(a.day) - WEEKDAYS.indexOf(b.day));
}

function requiredText(
  business: Record<string, unknown>,
  key: string,
  label: string,
  mode: Mode,
  problems: string[],
): string | undefined {
  const value = business[key];
  if (value === undefined) {
    if (mode === 'create') problems.push(`${label} can't be blank`);
    return undefined;
  }
  if (typeof value !== 'string' && typeof value !== 'number') {
    problems.push(`${label} is invalid`);
    return undefined;
  }
  const text = String(value).trim();
  if (text === '') {
    problems.push(`${label} can't be blank`);
    return undefined;
  }
  return text;
}

function optionalText(
  business: Record<string, unknown>,
  key: string,
  label: string,
  problems: string[],
  max?: number,
): string | undefined {
  const value = business[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    problems.push(`${label} is invalid`);
    return undefined;
  }
  if (max !== undefined && value.length > max) {
    problems.push(`${label} is too long (maximum is ${max} characters)`);
    return undefined;
  }
  return value;
}

function checkList(
  business: Record<string, unknown>,
  key: string,
  problems: string[],
  itemOk: (item: Record<string, unknown>) => string | null,
): void {
  const value = business[key];
  if (value === undefined || value === null) return;
  const words = key.replace(/_attributes$/, '').replace(/_/g, ' ');
  const label = `${words.charAt(0).toUpperCase()}${words.slice(1)}`;
  if (!Array.isArray(value)) {
    problems.push(`${label} is invalid`);
    return;
  }
  for (const item of value) {
    const problem = isObject(item) ? itemOk(item) : 'is invalid';
    if (problem) {
      problems.push(`${label} ${problem}`);
      return;
    }
  }
}

/** Name, address, phone and sub category: the fields every listing is found by. */
function checkIdentity({ business, mode, problems, fields }: BusinessCheck): void {
  const name = requiredText(business, 'name', 'Name', mode, problems);
  if (name !== undefined) {
    if (name.length < 2) problems.push('Name is too short (minimum is 2 characters)');
    else fields.name = name;
  }
  const street = requiredText(business, 'street', 'Street', mode, problems);
  if (street !== undefined) fields.street = street;
  const city = requiredText(business, 'city', 'City', mode, problems);
  if (city !== undefined) fields.city = city;

  const countryGiven = business['country_id'] !== undefined;
  const countryId = asId(business['country_id']);
  const countryOk = countryId !== null && COUNTRIES.some((c) => c.id === countryId);
  const stateGiven = business['state_id'] !== undefined;
  if (mode === 'create' || stateGiven) {
    const stateId = asId(business['state_id']);
    const state = stateId === null ? undefined : STATE_BY_ID.get(stateId);
    // A state of another country than the one given is as good as no state.
    if (!state || (countryOk && state.country_id !== countryId)) {
      problems.push("State can't be blank");
    } else {
      fields.stateId = state.id;
      fields.countryId = state.country_id;
    }
  }
  if (mode === 'create' || countryGiven) {
    if (!countryOk) problems.push("Country can't be blank");
    else if (fields.countryId === undefined) fields.countryId = countryId!;
  }
  const postal = requiredText(business, 'postal_code', 'Postal code', mode, problems);
  if (postal !== undefined) fields.postalCode = postal;
  const phone = requiredText(business, 'phone', 'Phone', mode, problems);
  if (phone !== undefined) {
    if (!/^\d{3}-\d{3}-\d{4}$/.test(phone)) problems.push('Phone is invalid');
    else fields.phone = phone;
  }
  if (mode === 'create' || business['sub_category_id'] !== undefined) {
    const id = asId(business['sub_category_id']);
    const category = id === null ? undefined : SUB_CATEGORY_BY_ID.get(id);
    // Only a sub category flagged primary may be given on create.
    if (!category || (mode === 'create' && !category.primary)) {
      problems.push("Sub Category can't be blank");
    } else {
      fields.subCategoryId = category.id;
    }
  }
}

/** Description, the optional texts, owner email, hide address and additional categories. */
function checkProfile({ business, mode, problems, fields }: BusinessCheck): void {
  const description = requiredText(business, 'description', 'Description', mode, problems);
  if (description !== undefined) {
    const raw = String(business['description']);
    if (mode === 'create' && raw.length < 200) {
      problems.push('Description is too short (minimum is 200 characters)');
    } else if (raw.length > 1024) {
      problems.push('Description is too long (maximum is 1024 characters)');
    } else {
      fields.description = raw;
    }
  }
  const tagline = optionalText(business, 'tagline', 'Tagline', problems, 255);
  if (tagline !== undefined) fields.tagline = tagline;
  const info = optionalText(business, 'additional_info', 'Additional info', problems, 1024);
  if (info !== undefined) fields.extra['additional_info'] = info;
  const bizUrl = optionalText(business, 'biz_url', 'Biz url', problems);
  if (bizUrl !== undefined) fields.bizUrl = bizUrl;
  const storecode = optionalText(business, 'storecode', 'Storecode', problems);
  if (storecode !== undefined) fields.storecode = storecode;
  for (const [key, label, target] of [
    ['owner_first_name', 'Owner first name', 'ownerFirstName'],
    ['owner_last_name', 'Owner last name', 'ownerLastName'],
    ['facebook_url', 'Facebook url', 'facebookUrl'],
    ['twitter_url', 'Twitter url', 'twitterUrl'],
  ] as const) {
    const value = optionalText(business, key, label, problems);
    if (value !== undefined) fields[target] = value;
  }
  for (const [key, label] of [
    ['linkedin_url', 'Linkedin url'],
    ['googleplus_url', 'Googleplus url'],
    ['biz_logo_link', 'Biz logo link'],
    ['biz_cover', 'Biz cover'],
    ['year_of_inc', 'Year of inc'],
  ] as const) {
    const value = optionalText(business, key, label, problems);
    if (value !== undefined) fields.extra[key] = value;
  }
  const ownerEmail = optionalText(business, 'owner_email', 'Owner email', problems);
  if (ownerEmail !== undefined) {
    if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(ownerEmail)) problems.push('Owner email is invalid');
    else fields.extra['owner_email'] = ownerEmail;
  }
  const hide = business['hide_address'];
  if (hide !== undefined && hide !== null) {
    if (typeof hide === 'boolean') fields.hideAddress = hide;
    else if (hide === 'true' || hide === 'false') fields.hideAddress = hide === 'true';
    else problems.push('Hide address is invalid');
  }
  const categories = business['additional_categories'];
  if (categories !== undefined && categories !== null) {
    if (!Array.isArray(categories)) problems.push('Additional categories is invalid');
    else if (categories.length > 9) {
      problems.push('Additional categories is too long (maximum is 9 categories)');
    } else fields.additionalCategories = categories.map(String);
  }
}

/** Payment methods, photos and videos: each item checked, each list kept as given. */
function checkAttributeLists({ business, problems, fields }: BusinessCheck): void {
  checkList(business, 'payment_methods_attributes', problems, (item) =>
    typeof item['name'] !== 'string' || !PAYMENT_METHODS.has(item['name'])
      ? 'name is not included in the list'
      : item['is_accepted'] !== undefined && typeof item['is_accepted'] !== 'boolean'
        ? 'is accepted is invalid'
        : null,
  );
  checkList(business, 'location_photos_attributes', problems, (item) =>
    typeof item['photo'] === 'string' && item['photo'] !== '' ? null : 'photo is invalid',
  );
  // The field table says `video_attributes`, the create sample `videos_attributes`.
  for (const key of ['video_attributes', 'videos_attributes']) {
    checkList(business, key, problems, (item) =>
      typeof item['link'] === 'string' && item['link'] !== '' ? null : 'link is invalid',
    );
  }
  for (const key of [
    'payment_methods_attributes',
    'location_photos_attributes',
    'video_attributes',
    'videos_attributes',
  ]) {
    if (Array.isArray(business[key])) fields.extra[key] = business[key];
  }
}

/**
 * Validate `body.business` for create (every required field, description 200–1024) or
 * update (only the fields given; description at most 1024).
 */
export function validateBusinessInput(body: unknown, mode: Mode): ValidationResult {
  const given = isObject(body) ? body['business'] : undefined;
  if (mode === 'update' && !isObject(given)) {
    return { ok: false, message: `${NOT_CREATED} Business can't be blank.` };
  }
  const business = isObject(given) ? given : {};
  const problems: string[] = [];
  const fields: BusinessFields = { extra: {} };

  const check: BusinessCheck = { business, mode, problems, fields };
  checkIdentity(check);
  checkProfile(check);
  checkAttributeLists(check);
  if (problems.length > 0) {
    return { ok: false, message: `${NOT_CREATED} ${problems.join('. ')}.` };
  }

  // `biz_hours` replaces the old array; the old one (either spelling) is still accepted.
  const hours =
    parseBizHours(business['biz_hours'], mode) ??
    parseOldHours(business['location_biz_hours_attributes'], mode) ??
    parseOldHours(business['location_biz_hour_attributes'], mode);
  if (hours && 'message' in hours) return { ok: false, message: hours.message };
  if (hours) fields.hours = hours.hours;
  return { ok: true, fields };
}
