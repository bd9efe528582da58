/**
 * Reviews and social items (operation 8), generated per business in day buckets: bucket
 * 0 holds the 20–200 items a generated business starts with; each later day adds a few.
 * An item is a pure function of (seed, business, bucket, index), and its id encodes that
 * tuple (masked, with a check hash), so operation 9 can find any review from its id
 * alone, without an index of every review ever served.
 */

import { createHash } from 'node:crypto';
import { createRng, hash32, hashString, hex8, type Rng, unit } from './random.ts';
import {
  FIRST_NAMES,
  RESPONDABLE_SITES,
  REVIEW_SITES,
  SOCIAL_SITES,
  SURNAMES,
} from './reference-data.ts';
import { finalDay, requestPath, statusOn } from './response-lifecycle.ts';
import {
  type BusinessView,
  dayToDate,
  type RequestStatus,
  STREAM,
  slug,
  type World,
} from './world.ts';

export type Category = 'review' | 'social';

export interface ReviewKey {
  businessId: number;
  bucket: number;
  index: number;
}

/** A generated submission made before the sandbox started watching (no request id). */
export interface PriorRequest {
  createdDay: number;
  path: readonly RequestStatus[];
  content: string;
}

export interface ReviewItem {
  key: ReviewKey;
  id: string;
  category: Category;
  siteName: string;
  /** Day index of the item (negative for items older than the start date). */
  dayIndex: number;
  body: Record<string, unknown>;
  canRespond: boolean;
  /** Day the owner's own (generated) response appears, if it ever does. */
  responseDay: number | null;
  responseBody: Record<string, unknown> | null;
  prior: PriorRequest | null;
}

const MASK_STREAM = hashString('review-id-mask');

function hexWord(value: number, digits: number): string {
  return hex8(value).slice(8 - digits);
}

/** Three 32-bit mask words for a check hash. */
function maskWords(world: World, check: number): [number, number, number] {
  const a = hash32(world.seed, MASK_STREAM, check);
  return [a, hash32(a, 1), hash32(a, 2)];
}

/**
 * The uuid of an item: 8 hex of check hash, then 22 hex of masked payload — the business
 * id (40 bits), bucket and index (16 bits each) and 16 more bits of the check — laid into
 * the uuid around its version `4` and variant nibble.
 */
export function encodeReviewId(world: World, key: ReviewKey): string {
  const check = hash32(world.seed, key.businessId, STREAM.review, key.bucket, key.index);
  const [m0, m1, m2] = maskWords(world, check);
  const high = Math.floor(key.businessId / 4294967296) & 0xff;
  const w0 = (key.businessId >>> 0) ^ m0;
  const w1 = ((high << 24) | (key.bucket << 8) | (key.index >>> 8)) ^ m1;
  const w2 = ((((key.index & 0xff) << 16) | (check & 0xffff)) ^ m2) & 0xffffff;
  const free = hexWord(w0, 8) + hexWord(w1, 8) + hexWord(w2, 6);
  const variant = (0x8 | (check & 0x3)).toString(16);
  return `${hexWord(check, 8)}-${free.slice(0, 4)}-4${free.slice(4, 7)}-${variant}${free.slice(7, 10)}-${free.slice(10, 22)}`;
}

/**
 * The uuid of a response: sha-256 of the review's (unique) id and the response's origin.
 * A 32-bit seeded generator would collide at this scale (tens of thousands of responses);
 * 122 bits of a hash do not, and a real upstream's uuids never repeat.
 */
export function responseUuid(world: World, reviewId: string, origin: string): string {
  const hex = createHash('sha256').update(`${world.seed}:${reviewId}:${origin}`).digest('hex');
  const variant = (0x8 | (Number.parseInt(hex[16]!, 16) & 0x3)).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const UUID = /^([0-9a-f]{8})-([0-9a-f]{4})-4([0-9a-f]{3})-[89ab]([0-9a-f]{3})-([0-9a-f]{12})$/;

/** The key an id encodes, or null when the id is not one of ours. */
export function decodeReviewId(world: World, id: string): ReviewKey | null {
  const lower = id.toLowerCase();
  const match = UUID.exec(lower);
  if (!match) return null;
  const check = Number.parseInt(match[1]!, 16);
  const free = match[2]! + match[3]! + match[4]! + match[5]!;
  const [m0, m1, m2] = maskWords(world, check);
  const w0 = (Number.parseInt(free.slice(0, 8), 16) ^ m0) >>> 0;
  const w1 = (Number.parseInt(free.slice(8, 16), 16) ^ m1) >>> 0;
  const w2 = (Number.parseInt(free.slice(16, 22), 16) ^ m2) & 0xffffff;
  if ((w2 & 0xffff) !== (check & 0xffff)) return null;
  const key: ReviewKey = {
    businessId: (w1 >>> 24) * 4294967296 + w0,
    bucket: (w1 >>> 8) & 0xffff,
    index: ((w1 & 0xff) << 8) | (w2 >>> 16),
  };
  if (hash32(world.seed, key.businessId, STREAM.review, key.bucket, key.index) !== check) {
    return null;
  }
  return encodeReviewId(world, key) === lower ? key : null;
}

/** How many items a bucket holds. */
export function bucketSize(world: World, business: BusinessView, bucket: number): number {
  if (bucket === 0 && business.generated) {
    return 20 + (hash32(world.seed, business.id, STREAM.reviewCount, 0) % 181);
  }
  if (bucket <= business.birthDay) return 0;
  // Most days bring nothing or one item; a few bring two or three.
  const r = unit(hash32(world.seed, business.id, STREAM.reviewCount, bucket));
  return r < 0.45 ? 0 : r < 0.75 ? 1 : r < 0.92 ? 2 : 3;
}

function weighted(rng: Rng, table: ReadonlyArray<readonly [string, number]>): string {
  const total = table.reduce((sum, [, w]) => sum + w, 0);
  let r = rng.next() * total;
  for (const [value, weight] of table) {
    r -= weight;
    if (r < 0) return value;
  }
  return table[0]![0];
}

const PRAISE = [
  'Great service from start to finish. Would definitely recommend to friends.',
  'Friendly staff and they got everything done on time.',
  'Best in town, hands down. Fair prices too.',
  'Very professional and easy to work with.',
  'They went above and beyond what I expected.',
];
const MIXED = [
  'Decent experience overall but the wait was longer than promised.',
  'Good work, a bit pricey for what it was.',
  'Service was fine. Scheduling could be easier.',
];
const COMPLAINTS = [
  'Nobody returned my calls for a week. Disappointed.',
  'Showed up late and did not finish the job.',
  'Rude at the front desk and the bill was higher than quoted.',
];
const SOCIAL_TEXT: Record<string, readonly string[]> = {
  Photo: ['New photo added to the album', 'Behind the scenes today!', 'Our team at work'],
  Comment: ['Love this place!', 'Are you open on holidays?', 'Thanks for the quick reply'],
  Tweet: ['Big thanks to everyone who stopped by this week!', 'Now booking for next month.'],
  Attraction: ['Listed among the top local spots', 'Ranked as a popular attraction nearby'],
  LikesCount: ['Page likes'],
  Message: ['Hi, do you have availability this Saturday?', 'Can I get a quote for a job?'],
};
const RESPONSE_TEXT = [
  'Thank you for taking the time to share your feedback!',
  'We appreciate your business and hope to see you again soon.',
  'Sorry to hear about your experience. Please call us so we can make it right.',
];

function formatDate(world: World, dayIndex: number, rng: Rng): string {
  const date = dayToDate(world, dayIndex);
  // The upstream shows both forms: plain dates and ISO UTC timestamps (docs/upstream.md, "Quirks").
  if (!rng.chance(0.3)) return date;
  const hh = String(rng.int(0, 23)).padStart(2, '0');
  const mm = String(rng.int(0, 59)).padStart(2, '0');
  return `${date}T${hh}:${mm}:00Z`;
}

/** The category of an item: the first draw of its stream, so filtering is cheap. */
function itemRng(world: World, key: ReviewKey): Rng {
  return createRng(hash32(world.seed, key.businessId, STREAM.review, key.bucket, key.index));
}

export function itemCategory(world: World, key: ReviewKey): Category {
  return itemRng(world, key).next() < 0.6 ? 'review' : 'social';
}

/** One item, as of `day` (likes counts grow with the days). */
export function reviewItem(
  world: World,
  business: BusinessView,
  key: ReviewKey,
  day: number,
): ReviewItem {
  const rng = itemRng(world, key);
  const category: Category = rng.next() < 0.6 ? 'review' : 'social';
  const id = encodeReviewId(world, key);
  const dayIndex = key.bucket === 0 && business.generated ? -rng.int(1, 900) : key.bucket;
  const author = `${rng.pick(FIRST_NAMES)} ${rng.pick(SURNAMES).charAt(0)}.`;
  const avatar = rng.chance(0.6) ? `https://avatars.sandbox.example/${rng.hex(16)}.png` : null;
  const date = formatDate(world, dayIndex, rng);
  const permalinkId = rng.hex(12);
  const hasPermalink = rng.chance(0.85);
  let siteName: string;
  let body: Record<string, unknown>;
  let canRespond = false;
  let responseDay: number | null = null;
  let prior: PriorRequest | null = null;
  if (category === 'review') {
    siteName = weighted(rng, REVIEW_SITES);
    const r = rng.next();
    const rating = r < 0.45 ? 5 : r < 0.7 ? 4 : r < 0.82 ? 3 : r < 0.9 ? 2 : 1;
    const text =
      rating >= 4 ? rng.pick(PRAISE) : rating === 3 ? rng.pick(MIXED) : rng.pick(COMPLAINTS);
    const hasTitle = (siteName === 'Yelp' || siteName === 'TripAdvisor') && rng.chance(0.6);
    const emptyContent = rng.chance(0.05);
    const nullRating = siteName === 'Facebook' && rng.chance(0.15);
    canRespond = RESPONDABLE_SITES.has(siteName);
    if (rng.chance(0.3)) responseDay = dayIndex + rng.int(1, 20);
    else if (canRespond && rng.chance(0.08)) {
      const recent = key.bucket === 0 && rng.chance(0.4);
      prior = {
        createdDay: recent ? -rng.int(0, 1) : dayIndex + rng.int(1, 5),
        path: requestPath(rng.next()),
        content: rng.pick(RESPONSE_TEXT),
      };
    }
    body = {
      id,
      title: hasTitle ? text.split(/[.!]/)[0] : null,
      content: emptyContent ? '' : text,
      author_name: author,
      author_avatar: avatar,
      rating: nullRating ? null : rating,
      date,
      permalink: hasPermalink
        ? `https://www.${slug(siteName).replace(/-/g, '')}.com/review/${permalinkId}`
        : null,
      type: 'Review',
      can_respond: canRespond,
      responses: [],
    };
  } else {
    const [site, types] = SOCIAL_SITES[rng.int(0, SOCIAL_SITES.length - 1)]!;
    siteName = site;
    const type = rng.pick(types);
    const text = rng.pick(SOCIAL_TEXT[type] ?? ['']);
    body = {
      id,
      title: type === 'Attraction' ? business.profile.name : null,
      content: text,
      author_name: type === 'LikesCount' ? business.profile.name : author,
      author_avatar: avatar,
      rating: null,
      date,
      permalink: hasPermalink
        ? `https://www.${slug(siteName).replace(/-/g, '')}.com/p/${permalinkId}`
        : null,
      type,
    };
    if (type === 'LikesCount') {
      // Page likes grow a little every day: the item changes while its id stays.
      const growth = rng.int(0, 6);
      body['likes_count'] = rng.int(50, 5000) + growth * Math.max(0, day - Math.max(0, key.bucket));
      body['likes_change'] = growth;
    } else if (type === 'Photo' || type === 'Tweet') {
      body['likes_count'] = rng.int(0, 120);
      body['likes_change'] = rng.chance(0.5) ? rng.int(0, 5) : null;
    }
    body['can_respond'] = false;
    body['responses'] = [];
  }
  let responseBody: Record<string, unknown> | null = null;
  if (responseDay !== null) {
    responseBody = {
      id: responseUuid(world, id, 'owner'),
      title: null,
      content: rng.pick(RESPONSE_TEXT),
      author_name: business.profile.name,
      author_avatar: null,
      date: dayToDate(world, responseDay),
    };
  }
  return {
    key,
    id,
    category,
    siteName,
    dayIndex,
    body,
    canRespond,
    responseDay,
    responseBody,
    prior,
  };
}

/** The responses visible on `day`: the owner's own, a completed prior or sandbox request. */
export function visibleResponses(
  world: World,
  business: BusinessView,
  item: ReviewItem,
  day: number,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (item.responseBody && item.responseDay !== null && item.responseDay <= day) {
    out.push(item.responseBody);
  }
  if (item.prior && statusOn(item.prior.path, item.prior.createdDay, day) === 'Completed') {
    out.push({
      id: responseUuid(world, item.id, 'prior'),
      title: null,
      content: item.prior.content,
      author_name: business.profile.name,
      author_avatar: null,
      date: dayToDate(world, finalDay(item.prior.path, item.prior.createdDay)),
    });
  }
  const request = business.mutations?.requests.get(item.id);
  if (request && statusOn(request.path, request.createdDay, day) === 'Completed') {
    out.push({
      id: responseUuid(world, item.id, `request:${request.requestId}`),
      title: null,
      content: request.content,
      author_name: business.profile.name,
      author_avatar: null,
      date: dayToDate(world, finalDay(request.path, request.createdDay)),
    });
  }
  return out;
}

/**
 * Whether operation 9 would accept a response to the item today, given its visible
 * responses; passed in by the caller (responses.ts owns the refusal rules).
 */
export type CanRespond = (item: ReviewItem, responses: Record<string, unknown>[]) => boolean;

/** The reviews operation's result on `day`: site name → items of the category, newest bucket first. */
export function buildReviews(
  world: World,
  business: BusinessView,
  day: number,
  category: Category,
  canRespond: CanRespond,
): Record<string, Record<string, unknown>[]> {
  const result: Record<string, Record<string, unknown>[]> = {};
  for (let bucket = day; bucket >= 0; bucket--) {
    const size = bucketSize(world, business, bucket);
    for (let index = 0; index < size; index++) {
      const key = { businessId: business.id, bucket, index };
      if (itemCategory(world, key) !== category) continue;
      const item = reviewItem(world, business, key, day);
      const responses = visibleResponses(world, business, item, day);
      item.body['responses'] = responses;
      item.body['can_respond'] = canRespond(item, responses);
      const list = result[item.siteName] ?? [];
      list.push(item.body);
      result[item.siteName] = list;
    }
  }
  return result;
}

/** Whether a key names an item that exists on `day` for this business. */
export function itemExists(
  world: World,
  business: BusinessView,
  key: ReviewKey,
  day: number,
): boolean {
  return key.bucket <= day && key.index < bucketSize(world, business, key.bucket);
}
