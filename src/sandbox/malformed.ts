/**
 * Malformed records for the `malformedRate` fault. They are EXTRA records injected into
 * list payloads beside all the real ones (never replacing one, never sharing a real
 * record's id), so a client that quarantines them ends with exactly the good data of a
 * fault-free run. Which and where is a function of (seed, day, business, stream).
 */
import { MALFORMED_KEYWORD_BASE } from './keywords.ts';
import { createRng, hash32, hashString, type Rng, unit } from './random.ts';
import { STREAM, type World } from './world.ts';

export type MalformedKind = 'business' | 'listing' | 'review' | 'keyword' | 'reference';

function malformedRecord(
  kind: MalformedKind,
  rng: Rng,
  n: number,
  ownerId: number,
): Record<string, unknown> {
  const variant = rng.int(0, 2);
  switch (kind) {
    case 'business':
      // Every variant lacks a usable id, so no client can mistake it for a business to read.
      return variant === 0
        ? {
            id: { value: rng.int(1, 999) },
            name: 'Malformed Business',
            street: '1 Nowhere Rd',
            city: 'Austin',
            state_name: 'Texas',
            postal_code: '78701',
            phone: '512-555-0100',
          }
        : variant === 1
          ? {
              name: 'Business Without Id',
              street: '2 Nowhere Rd',
              city: 'Austin',
              state_name: 'Texas',
              postal_code: '78701',
              phone: '512-555-0101',
            }
          : { id: `not-a-number-${rng.hex(4)}`, name: 42, phone: null };
    case 'listing': {
      // Ids past the 48 directories of the business: they never collide with a real listing.
      const id = ownerId * 100 + 60 + (n % 40);
      return variant === 0
        ? { id: { id }, site_name: 'Google', status: 'Accurate' }
        : variant === 1
          ? { id, sync_status: 'success', status: 'Accurate' }
          : { id, site_name: 'Yelp', sync_status: 'success' };
    }
    case 'review':
      return variant === 0
        ? {
            id: rng.uuid(),
            title: null,
            content: 'Malformed rating',
            author_name: 'Nobody',
            rating: 'five',
            date: '2026-01-01',
            type: 'Review',
            can_respond: false,
            responses: [],
          }
        : variant === 1
          ? {
              title: 'No id',
              content: 'Missing its id',
              author_name: 'Nobody',
              rating: 4,
              date: '2026-01-01',
              type: 'Review',
            }
          : { id: { uuid: rng.uuid() }, content: 17, rating: 3, type: 'Review', responses: 'none' };
    case 'keyword': {
      const id = ownerId * 1000 + MALFORMED_KEYWORD_BASE + (n % 100);
      return variant === 0
        ? { id: { id }, keyword: 'malformed keyword', archived: false }
        : variant === 1
          ? {
              keyword: 'keyword without id',
              city: 'Austin',
              state: 'TX',
              primary: false,
              archived: false,
            }
          : { id, keyword: null, primary: 'yes', location_id: 'nowhere', archived: 'no' };
    }
    case 'reference':
      return variant === 0
        ? { id: { id: 9000 + n }, name: 'Malformed' }
        : variant === 1
          ? { name: 'Without id' }
          : { id: 9000 + n, name: 42 };
  }
}

/** How many to inject into a list of `size`: `size * rate` rounded by a deterministic coin. */
function malformedCount(size: number, rate: number, hash: number): number {
  if (rate <= 0) return 0;
  return Math.floor(size * rate + unit(hash));
}

/**
 * `records` with malformed ones spliced in at deterministic places; returns how many.
 * `ownerId` is the business id (0 for reference data).
 */
export function injectMalformed(
  world: World,
  records: unknown[],
  kind: MalformedKind,
  ownerId: number,
  stream: string,
  day: number,
  rate: number,
): number {
  const hash = hash32(world.seed, STREAM.malformed, day, ownerId, hashString(stream));
  const count = malformedCount(Math.max(records.length, 1), rate, hash);
  const rng = createRng(hash);
  for (let n = 0; n < count; n++) {
    const position = rng.int(0, records.length);
    records.splice(position, 0, malformedRecord(kind, rng, n, ownerId));
  }
  return count;
}

/** The same for the reviews result, an object of arrays keyed by site name. */
export function injectMalformedReviews(
  world: World,
  result: Record<string, unknown[]>,
  businessId: number,
  stream: string,
  day: number,
  rate: number,
): number {
  const sites = Object.keys(result);
  const total = sites.reduce((sum, site) => sum + (result[site]?.length ?? 0), 0);
  const hash = hash32(world.seed, STREAM.malformed, day, businessId, hashString(stream));
  const count = malformedCount(Math.max(total, 1), rate, hash);
  const rng = createRng(hash);
  for (let n = 0; n < count; n++) {
    const site = sites.length > 0 ? rng.pick(sites) : 'Google';
    const list = result[site] ?? [];
    result[site] = list;
    list.splice(rng.int(0, list.length), 0, malformedRecord('review', rng, n, businessId));
  }
  return count;
}
