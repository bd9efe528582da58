/**
 * The 17 operations of the API, as functions from an authenticated request to a status,
 * a body and an outcome for the stats. Routing, authentication and faults live in
 * `server.ts`; read bodies are serialized once and cached per (stream, business, day,
 * version, malformed rate).
 */
import type { OperationName } from '../operations.ts';
import type { BodyCache, CachedBody } from './body-cache.ts';
import {
  buildRankings,
  KEYWORD_ID_SPAN,
  listKeywords,
  MALFORMED_KEYWORD_BASE,
  USER_ADDED_BASE,
} from './keywords.ts';
import { buildListings } from './listings.ts';
import { injectMalformed, injectMalformedReviews, type MalformedKind } from './malformed.ts';
import {
  COUNTRIES,
  STATE_BY_ID,
  STATES,
  SUB_CATEGORIES,
  SUB_CATEGORY_BY_ID,
  WEEKDAYS,
} from './reference-data.ts';
import { RESPONSE_ERRORS, respondRefusal, responseStatus, submitResponse } from './responses.ts';
import { buildReviews, type Category } from './reviews.ts';
import { validateBusinessInput } from './validation.ts';
import {
  type Account,
  type BusinessProfile,
  type BusinessView,
  coordinatesFor,
  findBusiness,
  ID_SPAN,
  listBusinesses,
  mutationsFor,
  stateName,
  touchBusiness,
  type World,
} from './world.ts';

// The spec's operations, by the names the client uses too (src/operations.ts).
export type Operation = OperationName;

/** The contract's own texts (docs/upstream.md, Errors). */
export const MESSAGES = {
  auth: 'Authentication Failure',
  noBusiness: "This business doesn't exist",
  invalidLocation: 'Invalid location id',
  invalidKeyword: 'Invalid keyword id',
} as const;

/**
 * Texts the sandbox makes up where the contract shows none (docs/upstream.md, "What the
 * sandbox assumes"). A real upstream will say something else here: the client must never
 * match on these.
 */
export const SANDBOX_MESSAGES = {
  blankKeyword: "Keyword can't be blank",
  keywordLimit: 'Keyword limit reached for this location',
  invalidBody: 'The request body is not valid JSON.',
  invalidForm: 'The request body is not valid multipart form data.',
  notFound: 'Not Found',
  rateLimited: 'Rate limit exceeded. Try again later.',
  internalError: 'Internal Server Error',
  responseSubmitted: 'Your response has been submitted and will be posted shortly.',
} as const;

export interface RouteMatch {
  operation: Operation;
  params: string[];
}

/**
 * Match a path below `/api/v2` (with or without a trailing `.json`) and a method to an
 * operation; `params` are the path's variable segments in order.
 */
export function matchOperation(method: string, path: string): RouteMatch | null {
  const trimmed = path.replace(/\.json$/, '').replace(/^\/+|\/+$/g, '');
  const s = trimmed.split('/');
  const m = method.toUpperCase();
  const at = (operation: Operation, ...params: string[]): RouteMatch => ({ operation, params });
  if (s[0] === 'businesses') {
    if (s.length === 1) {
      if (m === 'GET') return at('list_businesses');
      if (m === 'POST') return at('create_business');
      return null;
    }
    const id = s[1]!;
    if (s.length === 2) {
      if (m === 'GET') return at('get_business', id);
      if (m === 'PUT' || m === 'PATCH') return at('update_business', id);
      return null;
    }
    if (s.length === 3) {
      const leaf = s[2];
      if (leaf === 'archive' && m === 'POST') return at('archive_business', id);
      if (leaf === 'listings' && m === 'GET') return at('list_listings', id);
      if (leaf === 'reviews' && m === 'GET') return at('list_reviews', id);
      if (leaf === 'rankings' && m === 'GET') return at('get_rankings', id);
      if (leaf === 'keywords' && m === 'GET') return at('list_keywords', id);
      if (leaf === 'add_keyword' && m === 'POST') return at('add_keyword', id);
      return null;
    }
    if (s[2] === 'reviews' && s[4] === 'responses') {
      if (s.length === 5 && m === 'POST') return at('respond_to_review', id, s[3]!);
      if (s.length === 6 && m === 'GET') return at('get_response_status', id, s[3]!, s[5]!);
    }
    return null;
  }
  if (s[0] === 'keywords' && s.length === 2 && m === 'DELETE') return at('delete_keyword', s[1]!);
  if (s[0] === 'countries') {
    if (s.length === 1 && m === 'GET') return at('list_countries');
    if (s.length === 3 && s[2] === 'states' && m === 'GET') return at('list_states', s[1]!);
  }
  if (s[0] === 'sub_categories' && s.length === 1 && m === 'GET') return at('list_sub_categories');
  return null;
}

export type Outcome = 'ok' | 'not_found' | 'validation' | 'auth_failure';

export interface OperationResult {
  /** The HTTP status when errors are not answered with 200. */
  status: number;
  body: string;
  outcome: Outcome;
  malformed: number;
}

export interface OperationContext {
  world: World;
  account: Account;
  cache: BodyCache;
  malformedRate: number;
  params: string[];
  query: Record<string, unknown>;
  body: unknown;
}

function success(result: unknown): string {
  return `{"success":true,"result":${JSON.stringify(result)}}`;
}

export function failure(status: number, message: string, outcome: Outcome): OperationResult {
  return { status, body: JSON.stringify({ success: false, message }), outcome, malformed: 0 };
}

function ok(body: string, malformed = 0): OperationResult {
  return { status: 200, body, outcome: 'ok', malformed };
}

/** Serve a read from the cache, building and caching it on a miss. */
function cached(ctx: OperationContext, key: string, build: () => CachedBody): OperationResult {
  const fullKey = `${key}|d${ctx.world.day}|m${ctx.malformedRate}`;
  let entry = ctx.cache.get(fullKey);
  if (!entry) {
    entry = build();
    ctx.cache.set(fullKey, entry);
  }
  return ok(entry.body, entry.malformed);
}

function withMalformed(
  ctx: OperationContext,
  records: unknown[],
  kind: MalformedKind,
  ownerId: number,
  stream: string,
): CachedBody {
  const malformed =
    ctx.malformedRate > 0
      ? injectMalformed(ctx.world, records, kind, ownerId, stream, ctx.world.day, ctx.malformedRate)
      : 0;
  return { body: success(records), malformed };
}

/**
 * A business's list of `stream`, served from the cache by the business's version, its
 * records built by `build` on a miss and some served malformed (`withMalformed`).
 */
function cachedBusinessList(
  ctx: OperationContext,
  business: BusinessView,
  kind: MalformedKind,
  stream: string,
  build: () => unknown[],
): OperationResult {
  return cached(ctx, `${stream}:${business.id}:v${business.version}`, () =>
    withMalformed(ctx, build(), kind, business.id, stream),
  );
}

function businessParam(ctx: OperationContext): BusinessView | null {
  const raw = ctx.params[0] ?? '';
  if (!/^\d{1,15}$/.test(raw)) return null;
  return findBusiness(ctx.world, ctx.account, Number(raw));
}

function stateIso(profile: BusinessProfile): string {
  return STATE_BY_ID.get(profile.stateId)?.iso ?? '';
}

function summary(p: BusinessProfile): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    street: p.street,
    city: p.city,
    state_name: stateName(p.stateId),
    postal_code: p.postalCode,
    phone: p.phone,
  };
}

function fullRead(p: BusinessProfile): Record<string, unknown> {
  return {
    ...summary(p),
    latitude: p.latitude,
    longitude: p.longitude,
    biz_url: p.bizUrl,
    owner_first_name: p.ownerFirstName,
    owner_last_name: p.ownerLastName,
    facebook_url: p.facebookUrl,
    twitter_url: p.twitterUrl,
    description: p.description,
    tagline: p.tagline,
    storecode: p.storecode,
    additional_categories: p.additionalCategories,
    business_hours: p.businessHours,
    hide_address: p.hideAddress,
  };
}

type Handler = (ctx: OperationContext) => OperationResult;

const HANDLERS: Record<Operation, Handler> = {
  list_businesses(ctx) {
    const { world, account } = ctx;
    return cached(ctx, `list:${account.index}:v${account.version}`, () =>
      withMalformed(
        ctx,
        listBusinesses(world, account).map((b) => summary(b.profile)),
        'business',
        account.index,
        'businesses',
      ),
    );
  },

  get_business(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    const full = ctx.query['type'] === 'all';
    return cached(ctx, `${full ? 'full' : 'basic'}:${business.id}:v${business.version}`, () => ({
      body: success(
        full
          ? fullRead(business.profile)
          : {
              ...summary(business.profile),
              biz_url: business.profile.bizUrl,
              hide_address: business.profile.hideAddress,
            },
      ),
      malformed: 0,
    }));
  },

  get_business_full: (ctx) => HANDLERS.get_business(ctx),

  create_business(ctx) {
    const { world, account } = ctx;
    const checked = validateBusinessInput(ctx.body, 'create');
    if (!checked.ok) return failure(422, checked.message, 'validation');
    const f = checked.fields;
    const id =
      (account.index + 1) * ID_SPAN + world.businessesPerAccount + account.created.length + 1;
    const [latitude, longitude] = coordinatesFor(f.city ?? '', id);
    const profile: BusinessProfile = {
      id,
      name: f.name ?? '',
      street: f.street ?? '',
      city: f.city ?? '',
      stateId: f.stateId ?? 0,
      countryId: f.countryId ?? 0,
      postalCode: f.postalCode ?? '',
      phone: f.phone ?? '',
      bizUrl: f.bizUrl ?? '',
      hideAddress: f.hideAddress ?? false,
      latitude,
      longitude,
      ownerFirstName: f.ownerFirstName ?? '',
      ownerLastName: f.ownerLastName ?? '',
      facebookUrl: f.facebookUrl ?? null,
      twitterUrl: f.twitterUrl ?? null,
      description: f.description ?? '',
      tagline: f.tagline ?? '',
      storecode: f.storecode ?? '',
      additionalCategories: f.additionalCategories ?? [],
      businessHours: f.hours ?? [],
      subCategoryId: f.subCategoryId ?? 0,
      extra: f.extra,
    };
    const record = mutationsFor(world, id);
    record.profile = profile;
    record.createdDay = world.day;
    account.created.push(id);
    touchBusiness(world, id, true);
    return ok(
      success({
        id,
        name: profile.name,
        street: profile.street,
        city: profile.city,
        state_name: stateName(profile.stateId),
        sub_category_name: SUB_CATEGORY_BY_ID.get(profile.subCategoryId)?.name ?? '',
        postal_code: profile.postalCode,
        phone: profile.phone,
        biz_url: profile.bizUrl,
        hide_address: profile.hideAddress,
      }),
    );
  },

  update_business(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    const checked = validateBusinessInput(ctx.body, 'update');
    if (!checked.ok) return failure(422, checked.message, 'validation');
    const f = checked.fields;
    const p = business.profile;
    let hours = p.businessHours;
    if (f.hours) {
      // Update merges the days it is given into the existing week.
      const byDay = new Map(hours.map((h) => [h.day, h]));
      for (const h of f.hours) byDay.set(h.day, h);
      hours = WEEKDAYS.flatMap((day) => {
        const entry = byDay.get(day);
        return entry ? [entry] : [];
      });
    }
    const next: BusinessProfile = {
      ...p,
      name: f.name ?? p.name,
      street: f.street ?? p.street,
      city: f.city ?? p.city,
      stateId: f.stateId ?? p.stateId,
      countryId: f.countryId ?? p.countryId,
      postalCode: f.postalCode ?? p.postalCode,
      phone: f.phone ?? p.phone,
      bizUrl: f.bizUrl ?? p.bizUrl,
      hideAddress: f.hideAddress ?? p.hideAddress,
      ownerFirstName: f.ownerFirstName ?? p.ownerFirstName,
      ownerLastName: f.ownerLastName ?? p.ownerLastName,
      facebookUrl: f.facebookUrl === undefined ? p.facebookUrl : f.facebookUrl,
      twitterUrl: f.twitterUrl === undefined ? p.twitterUrl : f.twitterUrl,
      description: f.description ?? p.description,
      tagline: f.tagline ?? p.tagline,
      storecode: f.storecode ?? p.storecode,
      additionalCategories: f.additionalCategories ?? p.additionalCategories,
      businessHours: hours,
      subCategoryId: f.subCategoryId ?? p.subCategoryId,
      extra: { ...p.extra, ...f.extra },
    };
    mutationsFor(ctx.world, business.id).profile = next;
    touchBusiness(ctx.world, business.id, true);
    return ok(success({ ...summary(next), biz_url: next.bizUrl }));
  },

  archive_business(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    mutationsFor(ctx.world, business.id).archivedDay = ctx.world.day;
    touchBusiness(ctx.world, business.id, true);
    return ok('{"success":true}');
  },

  list_listings(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    return cachedBusinessList(ctx, business, 'listing', 'listings', () =>
      buildListings(ctx.world, business, ctx.world.day, stateIso(business.profile)),
    );
  },

  list_reviews(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    // Without a category the upstream answers the `review` category.
    const category: Category = ctx.query['category'] === 'social' ? 'social' : 'review';
    return cached(ctx, `reviews:${category}:${business.id}:v${business.version}`, () => {
      const day = ctx.world.day;
      const result = buildReviews(
        ctx.world,
        business,
        day,
        category,
        (item, responses) =>
          respondRefusal(ctx.world, business, item, day, responses.length) === null,
      );
      const malformed =
        ctx.malformedRate > 0
          ? injectMalformedReviews(
              ctx.world,
              result,
              business.id,
              `reviews:${category}`,
              ctx.world.day,
              ctx.malformedRate,
            )
          : 0;
      return { body: success(result), malformed };
    });
  },

  respond_to_review(ctx) {
    const businessId = /^\d{1,15}$/.test(ctx.params[0] ?? '') ? Number(ctx.params[0]) : -1;
    const outcome = submitResponse(
      ctx.world,
      ctx.account,
      businessId,
      ctx.params[1] ?? '',
      ctx.body,
    );
    if (!outcome.ok) {
      return outcome.notFound
        ? failure(404, outcome.message, 'not_found')
        : failure(422, outcome.message, 'validation');
    }
    return ok(
      JSON.stringify({
        success: true,
        message: SANDBOX_MESSAGES.responseSubmitted,
        request_id: outcome.requestId,
      }),
    );
  },

  get_response_status(ctx) {
    // The business in the path is checked like every other operation's: the contract
    // lists no text for op 10 here, so it gets operations 2–8's (docs/upstream.md).
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    const status = responseStatus(
      ctx.world,
      ctx.account,
      business.id,
      ctx.params[1] ?? '',
      ctx.params[2] ?? '',
    );
    if (!status) return failure(404, RESPONSE_ERRORS.invalidRequest, 'not_found');
    // The contract's shape: `{status}` alone, no `success` (docs/upstream.md, Operations).
    return ok(JSON.stringify({ status }));
  },

  get_rankings(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.noBusiness, 'not_found');
    return cached(ctx, `rankings:${business.id}:v${business.version}`, () => ({
      body: success(buildRankings(ctx.world, business, ctx.world.day)),
      malformed: 0,
    }));
  },

  list_keywords(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.invalidLocation, 'not_found');
    return cachedBusinessList(ctx, business, 'keyword', 'keywords', () =>
      listKeywords(ctx.world, business, ctx.world.day),
    );
  },

  add_keyword(ctx) {
    const business = businessParam(ctx);
    if (!business) return failure(404, MESSAGES.invalidLocation, 'not_found');
    const body = ctx.body as Record<string, unknown> | undefined;
    const text = typeof body?.['keyword'] === 'string' ? body['keyword'].trim() : '';
    if (text === '') return failure(422, SANDBOX_MESSAGES.blankKeyword, 'validation');
    const { world } = ctx;
    const existing = listKeywords(world, business, world.day);
    const record = mutationsFor(world, business.id);
    if (record.addedKeywords.length >= MALFORMED_KEYWORD_BASE - USER_ADDED_BASE) {
      return failure(422, SANDBOX_MESSAGES.keywordLimit, 'validation');
    }
    const id = business.id * KEYWORD_ID_SPAN + USER_ADDED_BASE + record.addedKeywords.length;
    // The first keyword of a business is its primary one.
    const primary = existing.length === 0;
    record.addedKeywords.push({ id, keyword: text, primary, createdDay: world.day });
    touchBusiness(world, business.id, false);
    return ok(
      success({
        id,
        keyword: text,
        city: business.profile.city,
        state: stateIso(business.profile),
        primary,
        location_id: business.id,
        archived: false,
      }),
    );
  },

  delete_keyword(ctx) {
    const raw = ctx.params[0] ?? '';
    const fail = failure(404, MESSAGES.invalidKeyword, 'not_found');
    if (!/^\d{1,18}$/.test(raw)) return fail;
    const keywordId = Number(raw);
    const business = findBusiness(ctx.world, ctx.account, Math.floor(keywordId / KEYWORD_ID_SPAN));
    if (!business) return fail;
    const keyword = listKeywords(ctx.world, business, ctx.world.day).find(
      (k) => k.id === keywordId,
    );
    if (!keyword) return fail;
    mutationsFor(ctx.world, business.id).deletedKeywords.add(keywordId);
    touchBusiness(ctx.world, business.id, false);
    return ok(success(`Keyword '${keyword.keyword}' (id ${keyword.id}) has been deleted.`));
  },

  list_states(ctx) {
    const countryId = Number(ctx.params[0]);
    // An unknown country has no states; the contract shows no error for it.
    return cached(ctx, `states:${ctx.params[0]}`, () =>
      withMalformed(
        ctx,
        STATES.filter((s) => s.country_id === countryId).map((s) => ({ ...s })),
        'reference',
        0,
        `states:${countryId}`,
      ),
    );
  },

  list_countries(ctx) {
    return cached(ctx, 'countries', () =>
      withMalformed(
        ctx,
        COUNTRIES.map((c) => ({ ...c })),
        'reference',
        0,
        'countries',
      ),
    );
  },

  list_sub_categories(ctx) {
    // Only id and name: the primary flag is not served (docs/upstream.md, Fields).
    return cached(ctx, 'sub_categories', () =>
      withMalformed(
        ctx,
        SUB_CATEGORIES.map((c) => ({ id: c.id, name: c.name })),
        'reference',
        0,
        'sub_categories',
      ),
    );
  },
};

export function runOperation(operation: Operation, ctx: OperationContext): OperationResult {
  return HANDLERS[operation](ctx);
}
