/**
 * Listings (operation 7): one per directory the business is on, about 40, with a
 * realistic spread of `Accurate` (most), `Inaccurate` and `Not Present`.
 *
 * A listing's static facts (directory, credentials, base status) come from a hash of
 * (seed, business, directory). Its status on day N is the base status, inverted while a
 * "flip episode" is running: an episode starts on a day with a small per-(listing, day)
 * chance and lasts a few days. So a few percent of listings change status each day, the
 * change persists, and day N costs a handful of hashes, never a replay.
 */

import { createRng, hash32, unit } from './random.ts';
import { CORE_DIRECTORIES, DIRECTORIES, RESPONDABLE_SITES } from './reference-data.ts';
import { type BusinessView, STREAM, slug, type World } from './world.ts';

/** Chance that a non-core directory lists the business: about 32 of 40, plus 8 core. */
const OTHER_DIRECTORY_PRESENCE = 0.8;
/** Daily chance that a flip episode starts for a listing, and how long one lasts. */
const FLIP_START_PROBABILITY = 0.012;
const FLIP_EPISODE_DAYS = 4;

type Status = 'Accurate' | 'Inaccurate' | 'Not Present';

export interface ListingFacts {
  siteIndex: number;
  siteName: string;
  listingId: number;
  hasCredentials: boolean;
}

function isListed(world: World, businessId: number, siteIndex: number): boolean {
  if (siteIndex < CORE_DIRECTORIES.length) return true;
  return (
    unit(hash32(world.seed, businessId, STREAM.listing, siteIndex, 0)) < OTHER_DIRECTORY_PRESENCE
  );
}

/** The static facts of the business's listing on a site, or null if it is not listed there. */
export function listingFacts(
  world: World,
  businessId: number,
  siteName: string,
): ListingFacts | null {
  const siteIndex = DIRECTORIES.indexOf(siteName);
  if (siteIndex < 0 || !isListed(world, businessId, siteIndex)) return null;
  const rng = createRng(hash32(world.seed, businessId, STREAM.listing, siteIndex));
  return {
    siteIndex,
    siteName,
    listingId: businessId * 100 + siteIndex,
    hasCredentials: drawCredentials(rng, siteName),
  };
}

/** First draw of a listing's stream, shared by `listingFacts` and `buildListings`. */
function drawCredentials(rng: ReturnType<typeof createRng>, siteName: string): boolean {
  // Respondable sites usually have a login set (so op 9 works), but not always (so the
  // "Site credentials have not been set." refusal occurs in the data).
  return rng.chance(RESPONDABLE_SITES.has(siteName) ? 0.65 : 0.25);
}

function isFlipped(world: World, business: BusinessView, siteIndex: number, day: number): boolean {
  const first = Math.max(business.birthDay + 1, day - FLIP_EPISODE_DAYS + 1);
  for (let start = first; start <= day; start++) {
    const h = hash32(world.seed, business.id, STREAM.listingFlip, siteIndex, start);
    if (unit(h) < FLIP_START_PROBABILITY) return true;
  }
  return false;
}

function variantPhone(phone: string, r: number): string {
  const last = String((Number(phone.slice(-4)) + 1 + Math.floor(r * 9000)) % 10000);
  return `${phone.slice(0, -4)}${last.padStart(4, '0')}`;
}

/** The listings of a business on `day`, as the upstream serves them. */
export function buildListings(
  world: World,
  business: BusinessView,
  day: number,
  stateIso: string,
): Record<string, unknown>[] {
  const profile = business.profile;
  const listings: Record<string, unknown>[] = [];
  for (let siteIndex = 0; siteIndex < DIRECTORIES.length; siteIndex++) {
    if (!isListed(world, business.id, siteIndex)) continue;
    const siteName = DIRECTORIES[siteIndex] ?? '';
    const rng = createRng(hash32(world.seed, business.id, STREAM.listing, siteIndex));
    const hasCredentials = drawCredentials(rng, siteName);
    const siteSlug = slug(siteName).replace(/-/g, '');
    const username = hasCredentials
      ? `${slug(profile.name).replace(/-/g, '').slice(0, 14)}.${siteSlug.slice(0, 8)}@mail.example`
      : null;
    const password = hasCredentials ? `pw-${rng.hex(12)}` : null;
    const r = rng.next();
    let status: Status = r < 0.78 ? 'Accurate' : r < 0.9 ? 'Inaccurate' : 'Not Present';
    // Op 9 checks the credentials of the Facebook, Google and Yelp listings: keep them present.
    if (status === 'Not Present' && RESPONDABLE_SITES.has(siteName)) status = 'Accurate';
    if (status !== 'Not Present' && isFlipped(world, business, siteIndex, day)) {
      status = status === 'Accurate' ? 'Inaccurate' : 'Accurate';
    }
    const s = rng.next();
    const syncStatus = s < 0.86 ? 'success' : s < 0.93 ? 'in progress' : 'error';
    const id = business.id * 100 + siteIndex;
    if (status === 'Not Present') {
      // The documented short form: only these six fields.
      listings.push({
        id,
        site_username: username,
        site_password: password,
        sync_status: syncStatus,
        site_name: siteName,
        status,
      });
      continue;
    }
    const mismatch = rng.pick(['name', 'phone', 'address'] as const);
    const inaccurate = status === 'Inaccurate';
    const nameValid = !(inaccurate && mismatch === 'name');
    const phoneValid = !(inaccurate && mismatch === 'phone');
    const addressValid = !(inaccurate && mismatch === 'address');
    const variant = rng.next();
    const hasOrderStatus = rng.chance(0.25);
    const numericLink = rng.chance(0.03);
    const linkId = rng.int(100_000, 99_999_999);
    const c = rng.next();
    const claimed = c < 0.6 ? true : c < 0.85 ? false : null;
    const listing: Record<string, unknown> = {
      id,
      site_username: username,
      site_password: password,
      sync_status: syncStatus,
    };
    if (hasOrderStatus) listing['order_status'] = 'success';
    listing['name'] = nameValid
      ? profile.name
      : variant < 0.5
        ? `${profile.name} Inc`
        : profile.name.toUpperCase();
    listing['name_valid'] = nameValid;
    listing['phone'] = phoneValid ? profile.phone : variantPhone(profile.phone, variant);
    listing['phone_valid'] = phoneValid;
    listing['street'] = addressValid
      ? profile.street
      : profile.street.replace(/^\d+/, (n) => String(Number(n) + 1 + Math.floor(variant * 80)));
    listing['city'] = profile.city;
    listing['state'] = stateIso;
    listing['postal_code'] = profile.postalCode;
    listing['address_valid'] = addressValid;
    // The field table types live_link as a number; the sample shows a URL. Mostly URLs.
    listing['live_link'] = numericLink
      ? linkId
      : `https://www.${siteSlug}.com/biz/${slug(profile.name)}-${slug(profile.city)}-${linkId}`;
    listing['claimed'] = claimed;
    listing['site_name'] = siteName;
    listing['status'] = status;
    listings.push(listing);
  }
  return listings;
}
