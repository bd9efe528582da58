/**
 * The sandbox's world: accounts, the clock, and businesses generated lazily from the
 * seed, with a mutation layer per business for what write operations changed.
 *
 * Glossary
 * - day: days since `startDate` (day 0). Everything generated is a function of
 *   (seed, business id, stream, day), so day N needs no replay of days before it.
 * - generated business: one of `businessesPerAccount` per account, never stored; its
 *   profile is rebuilt from its random seed when asked for (and kept in a bounded cache).
 * - created business: made by operation 4; its profile lives in its mutation record.
 * - mutation record: what writes changed on one business (profile, archive, keywords,
 *   response requests), plus a version that keys every cached body of that business.
 */

import { createRng, geometricDay, hash32, hashString } from './random.ts';
import {
  CITIES,
  type City,
  FIRST_NAMES,
  NAME_WORDS,
  PRIMARY_SUB_CATEGORIES,
  STATE_BY_ID,
  STREET_NAMES,
  STREET_SUFFIXES,
  SUB_CATEGORIES,
  SURNAMES,
  stateByIso,
  WEEKDAYS,
} from './reference-data.ts';

/** Business ids are `(account + 1) * ID_SPAN + n`: unique across accounts, stable, decodable. */
export const ID_SPAN = 10_000_000;

/** Daily chance that a generated business is archived upstream (well under 1%). */
const DAILY_ARCHIVE_PROBABILITY = 0.002;

export const STREAM = {
  profile: hashString('profile'),
  archive: hashString('archive'),
  token: hashString('token'),
  listing: hashString('listing'),
  listingFlip: hashString('listing-flip'),
  reviewCount: hashString('review-count'),
  review: hashString('review'),
  keyword: hashString('keyword'),
  keywordAdd: hashString('keyword-add'),
  keywordArchive: hashString('keyword-archive'),
  rank: hashString('rank'),
  request: hashString('request'),
  malformed: hashString('malformed'),
  webhook: hashString('webhook'),
  faults: hashString('faults'),
} as const;

export interface HoursEntry {
  day: string;
  /** `HH:MM` 24-hour, or null on a closed day. */
  start_time: string | null;
  end_time: string | null;
}

export interface BusinessProfile {
  id: number;
  name: string;
  street: string;
  city: string;
  stateId: number;
  countryId: number;
  postalCode: string;
  phone: string;
  bizUrl: string;
  hideAddress: boolean;
  latitude: string | number;
  longitude: string | number;
  ownerFirstName: string;
  ownerLastName: string;
  facebookUrl: string | null;
  twitterUrl: string | null;
  description: string;
  tagline: string;
  storecode: string;
  additionalCategories: string[];
  businessHours: HoursEntry[];
  subCategoryId: number;
  /** Input fields we accept and keep but never serve (year_of_inc, photos, ...). */
  extra: Record<string, unknown>;
}

export type RequestStatus =
  | 'Created'
  | 'In Progress'
  | 'Completed'
  | 'Failed'
  | 'Retry In Progress';

/** A review response submitted through operation 9. */
export interface ResponseRequest {
  /** A number or a uuid, as the account issues them (see `requestIdForm`). */
  requestId: number | string;
  accountIndex: number;
  businessId: number;
  reviewId: string;
  content: string;
  createdDay: number;
  /** Status for each day since `createdDay`; the last one holds from then on. */
  path: readonly RequestStatus[];
}

export interface AddedKeyword {
  id: number;
  keyword: string;
  primary: boolean;
  createdDay: number;
}

export interface BusinessMutations {
  /** Replaces the generated profile once updated; the only profile of a created business. */
  profile: BusinessProfile | null;
  createdDay: number | null;
  archivedDay: number | null;
  addedKeywords: AddedKeyword[];
  deletedKeywords: Set<number>;
  /** Review id → the request submitted for it. */
  requests: Map<string, ResponseRequest>;
  /** Bumped by every write; part of every cache key of this business. */
  version: number;
}

export interface Account {
  index: number;
  name: string;
  authToken: string;
  userEmail: string;
  /** The `account_id` of webhook events. */
  numericId: number;
  /** Ids of businesses created through operation 4, in creation order. */
  created: number[];
  /** Bumped by create, update and archive: keys the cached business list. */
  version: number;
}

export interface WorldOptions {
  seed: number;
  accounts: number;
  businessesPerAccount: number;
  startDate: string;
}

export interface World {
  seed: number;
  businessesPerAccount: number;
  startDate: string;
  day: number;
  accounts: Account[];
  accountByToken: Map<string, Account>;
  mutations: Map<number, BusinessMutations>;
  /** Request id as text (`String(id)`, uuids lowercase) → request. */
  requests: Map<string, ResponseRequest>;
  nextRequestId: number;
  profileCache: Map<number, BusinessProfile>;
  /** Day index → `YYYY-MM-DD`; dates are formatted thousands of times per reviews body. */
  dates: Map<number, string>;
}

/** A business as the operations see it on one day. */
export interface BusinessView {
  id: number;
  accountIndex: number;
  profile: BusinessProfile;
  /** The day its generated history starts: 0 for generated businesses, else its creation day. */
  birthDay: number;
  generated: boolean;
  version: number;
  mutations: BusinessMutations | undefined;
}

/** Profiles are cheap to rebuild; this only spares the list operation the work. */
const PROFILE_CACHE_LIMIT = 20_000;

export function createWorld(options: WorldOptions): World {
  const seed = options.seed >>> 0;
  const accounts: Account[] = [];
  for (let index = 0; index < options.accounts; index++) {
    accounts.push({
      index,
      name: `account-${index + 1}`,
      authToken: `sbx_${createRng(hash32(seed, index, STREAM.token)).hex(32)}`,
      userEmail: `owner${index + 1}@sandbox.example`,
      numericId: 1000 + index + 1,
      created: [],
      version: 0,
    });
  }
  return {
    seed,
    businessesPerAccount: options.businessesPerAccount,
    startDate: options.startDate,
    day: 0,
    accounts,
    accountByToken: new Map(accounts.map((a) => [a.authToken, a])),
    mutations: new Map(),
    requests: new Map(),
    // Request ids look like the upstream's: numeric, well past zero, and start from a
    // seed-dependent value so that two sandboxes do not hand out the same ids.
    nextRequestId: 100_000 + (hash32(seed, STREAM.request) % 900_000),
    profileCache: new Map(),
    dates: new Map(),
  };
}

/**
 * The form of the response request ids an account is issued. The contract types them
 * uuid and its example returns a number (docs/upstream.md, Quirks): odd-numbered
 * accounts (`account-1`, `account-3`, …) get numbers, even-numbered ones uuids, so any
 * sandbox with two accounts exercises both.
 */
export function requestIdForm(account: Account): 'number' | 'uuid' {
  return account.index % 2 === 0 ? 'number' : 'uuid';
}

export function dayToDate(world: World, day: number): string {
  let date = world.dates.get(day);
  if (date === undefined) {
    const start = Date.parse(`${world.startDate}T00:00:00Z`);
    date = new Date(start + day * 86_400_000).toISOString().slice(0, 10);
    world.dates.set(day, date);
  }
  return date;
}

export function today(world: World): string {
  return dayToDate(world, world.day);
}

export function generatedBusinessId(accountIndex: number, index: number): number {
  return (accountIndex + 1) * ID_SPAN + index + 1;
}

/** The account a business id belongs to, or -1 when the id cannot be one of ours. */
export function accountOfBusinessId(world: World, id: number): number {
  const accountIndex = Math.floor(id / ID_SPAN) - 1;
  return accountIndex >= 0 && accountIndex < world.accounts.length ? accountIndex : -1;
}

/** The day a generated business is archived upstream; never day 0. */
export function generatedArchiveDay(world: World, id: number): number {
  return geometricDay(hash32(world.seed, id, STREAM.archive), DAILY_ARCHIVE_PROBABILITY, 1);
}

/** The business with this id in this account, as of `day`, or null if unknown or archived. */
export function findBusiness(
  world: World,
  account: Account,
  id: number,
  day = world.day,
): BusinessView | null {
  if (!Number.isSafeInteger(id) || accountOfBusinessId(world, id) !== account.index) return null;
  const offset = id - (account.index + 1) * ID_SPAN - 1;
  const generated = offset >= 0 && offset < world.businessesPerAccount;
  const mutations = world.mutations.get(id);
  if (!generated && (mutations?.createdDay ?? null) === null) return null;
  if (mutations?.archivedDay != null && mutations.archivedDay <= day) return null;
  if (generated && generatedArchiveDay(world, id) <= day) return null;
  const profile = mutations?.profile ?? generatedProfile(world, id);
  return {
    id,
    accountIndex: account.index,
    profile,
    birthDay: generated ? 0 : (mutations?.createdDay ?? 0),
    generated,
    version: mutations?.version ?? 0,
    mutations,
  };
}

/** Every business of the account visible on `day`, in id order. */
export function listBusinesses(world: World, account: Account, day = world.day): BusinessView[] {
  const out: BusinessView[] = [];
  for (let index = 0; index < world.businessesPerAccount; index++) {
    const view = findBusiness(world, account, generatedBusinessId(account.index, index), day);
    if (view) out.push(view);
  }
  for (const id of account.created) {
    const view = findBusiness(world, account, id, day);
    if (view) out.push(view);
  }
  return out;
}

export function mutationsFor(world: World, id: number): BusinessMutations {
  let record = world.mutations.get(id);
  if (!record) {
    record = {
      profile: null,
      createdDay: null,
      archivedDay: null,
      addedKeywords: [],
      deletedKeywords: new Set(),
      requests: new Map(),
      version: 0,
    };
    world.mutations.set(id, record);
  }
  return record;
}

/** Record a write: every cached body of the business (and the account's list) is stale. */
export function touchBusiness(world: World, id: number, listChanged: boolean): void {
  mutationsFor(world, id).version++;
  if (listChanged) {
    const account = world.accounts[accountOfBusinessId(world, id)];
    if (account) account.version++;
  }
}

export function stateName(stateId: number): string {
  return STATE_BY_ID.get(stateId)?.name ?? '';
}

export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * A category's name in the singular, by English rules, so business names read like real
 * businesses': `Plumbers` → `Plumber`, `Bakeries` → `Bakery`, `Churches` → `Church`,
 * `Day Spas` → `Day Spa`; a name not in the plural (`Pizza`, `Car Wash`) is kept.
 */
export function businessNoun(categoryName: string): string {
  if (/[^aeiou]ies$/i.test(categoryName)) return categoryName.replace(/ies$/i, 'y');
  if (/(ch|sh|x|z|ss)es$/i.test(categoryName)) return categoryName.replace(/es$/i, '');
  return categoryName.replace(/([^s])s$/, '$1');
}

const DESCRIPTION_SENTENCES: readonly string[] = [
  'We are a family-owned business serving {city} and the surrounding neighborhoods for over {years} years.',
  'Our team of licensed professionals takes pride in honest pricing and work that lasts.',
  'Customers choose us for friendly service, clear communication and on-time appointments.',
  'We offer free estimates and flexible scheduling, including evenings and weekends.',
  'Every job is backed by our satisfaction guarantee, because we want you to come back.',
  'From small fixes to large projects, we treat your time and your property with respect.',
  'Ask about our seasonal specials and loyalty discounts for returning customers.',
  'We are proud members of the {city} Chamber of Commerce and support local charities.',
  'Call us today or stop by to see why our neighbors keep recommending us.',
  'Our staff is fully trained, insured and committed to continuing education.',
];

const TAGLINES: readonly string[] = [
  'Quality you can count on',
  'Your neighbors since day one',
  'Fast, friendly, fair',
  'Done right the first time',
  'Local experts, honest prices',
  'Serving {city} with pride',
];

function standardHours(rng: ReturnType<typeof createRng>): HoursEntry[] {
  const open = rng.pick(['07:00', '08:00', '09:00', '10:00']);
  const close = rng.pick(['17:00', '18:00', '19:00', '21:00']);
  const saturday = rng.chance(0.6);
  const sunday = rng.chance(0.3);
  return WEEKDAYS.map((day, index) => {
    if ((index === 5 && !saturday) || (index === 6 && !sunday)) {
      return { day, start_time: null, end_time: null };
    }
    if (index >= 5) return { day, start_time: '10:00', end_time: '16:00' };
    return { day, start_time: open, end_time: close };
  });
}

/** Decimal strings mostly, numbers sometimes: the upstream's sample and field table disagree (docs/upstream.md, "Quirks"). */
function coordinate(value: number, asNumber: boolean): string | number {
  const rounded = Math.round(value * 1e6) / 1e6;
  return asNumber ? rounded : rounded.toFixed(6);
}

export function cityFor(name: string): City | undefined {
  return CITIES.find((c) => c.name.toLowerCase() === name.toLowerCase());
}

/** Coordinates for a created business: its city's when we know it, else a fixed fake spot. */
export function coordinatesFor(city: string, id: number): [string, string] {
  const known = cityFor(city);
  const rng = createRng(hash32(id, hashString(city)));
  const lat = known ? known.latitude + (rng.next() - 0.5) * 0.1 : 30 + rng.next() * 15;
  const lon = known ? known.longitude + (rng.next() - 0.5) * 0.1 : -120 + rng.next() * 40;
  return [lat.toFixed(6), lon.toFixed(6)];
}

/** The generated profile of a business; a pure function of (seed, id). */
export function generatedProfile(world: World, id: number): BusinessProfile {
  const cached = world.profileCache.get(id);
  if (cached) return cached;
  const rng = createRng(hash32(world.seed, id, STREAM.profile));
  const category = rng.pick(PRIMARY_SUB_CATEGORIES);
  const city = rng.pick(CITIES);
  const state = stateByIso(city.countryId, city.stateIso);
  const surname = rng.pick(SURNAMES);
  const noun = businessNoun(category.name);
  const pattern = rng.int(0, 4);
  const name =
    pattern === 0
      ? `${surname} ${noun}`
      : pattern === 1
        ? `${rng.pick(NAME_WORDS)} ${noun}`
        : pattern === 2
          ? `${city.name} ${noun} Pros`
          : pattern === 3
            ? `${surname} & Sons ${noun}`
            : `${rng.pick(NAME_WORDS)} ${noun} Co.`;
  const suite = rng.chance(0.15) ? ` Suite ${rng.int(100, 499)}` : '';
  const street = `${rng.int(100, 9899)} ${rng.pick(STREET_NAMES)} ${rng.pick(STREET_SUFFIXES)}${suite}`;
  const phone = `${city.areaCode}-${rng.int(200, 989)}-${String(rng.int(0, 9999)).padStart(4, '0')}`;
  const nameSlug = slug(name).replace(/-/g, '');
  const years = rng.int(3, 45);
  const fill = (text: string) =>
    text.replace(/\{city\}/g, city.name).replace(/\{years\}/g, String(years));
  let description = `${name} is a ${category.name.toLowerCase()} business in ${city.name}.`;
  const start = rng.int(0, DESCRIPTION_SENTENCES.length - 1);
  const target = rng.int(220, 700);
  for (let i = 0; description.length < target && i < DESCRIPTION_SENTENCES.length; i++) {
    description += ` ${fill(DESCRIPTION_SENTENCES[(start + i) % DESCRIPTION_SENTENCES.length] ?? '')}`;
  }
  const coordinatesAsNumbers = rng.chance(0.05);
  const extraCount = rng.int(0, 3);
  const additionalCategories: string[] = [];
  for (let i = 0; i < extraCount; i++) {
    const extra = String(rng.pick(SUB_CATEGORIES).id);
    if (extra !== String(category.id) && !additionalCategories.includes(extra)) {
      additionalCategories.push(extra);
    }
  }
  const profile: BusinessProfile = {
    id,
    name,
    street,
    city: city.name,
    stateId: state.id,
    countryId: city.countryId,
    postalCode: city.postal(rng.next()),
    phone,
    bizUrl: `${rng.chance(0.85) ? 'https' : 'http'}://www.${nameSlug}.com`,
    hideAddress: rng.chance(0.08),
    latitude: coordinate(city.latitude + (rng.next() - 0.5) * 0.2, coordinatesAsNumbers),
    longitude: coordinate(city.longitude + (rng.next() - 0.5) * 0.2, coordinatesAsNumbers),
    ownerFirstName: rng.pick(FIRST_NAMES),
    ownerLastName: surname,
    facebookUrl: rng.chance(0.7) ? `https://www.facebook.com/${nameSlug}` : null,
    twitterUrl: rng.chance(0.45) ? `https://twitter.com/${nameSlug.slice(0, 15)}` : null,
    description,
    tagline: fill(rng.pick(TAGLINES)),
    storecode: `ST-${String(id % ID_SPAN).padStart(4, '0')}`,
    additionalCategories,
    businessHours: standardHours(rng),
    subCategoryId: category.id,
    extra: {},
  };
  if (world.profileCache.size >= PROFILE_CACHE_LIMIT) {
    const oldest = world.profileCache.keys().next().value;
    if (oldest !== undefined) world.profileCache.delete(oldest);
  }
  world.profileCache.set(id, profile);
  return profile;
}
