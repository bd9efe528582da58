/**
 * Conformance of the 17 operations to the seed: paths with and without `.json`, response
 * shapes, authentication, account isolation, and every error row of the Errors table on
 * exactly the operations it lists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { call, validBusiness } from './http.ts';

let sandbox: RunningSandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 11, accounts: 2, businessesPerAccount: 12 });
});
afterAll(async () => {
  await sandbox.close();
});

const first = () => sandbox.credentials[0]!;
const second = () => sandbox.credentials[1]!;

async function firstBusinessId(): Promise<number> {
  const list = await call(first(), 'GET', '/businesses');
  return list.json.result[0].id;
}

describe('credentials', () => {
  it('are deterministic from the seed, one per account', async () => {
    const again = await startSandbox({ port: 0, seed: 11, accounts: 2, businessesPerAccount: 12 });
    try {
      expect(again.credentials.map(({ baseUrl: _, ...c }) => c)).toEqual(
        sandbox.credentials.map(({ baseUrl: _, ...c }) => c),
      );
    } finally {
      await again.close();
    }
    expect(first()).toMatchObject({ name: 'account-1', userEmail: 'owner1@sandbox.example' });
    expect(first().authToken).toMatch(/^sbx_[0-9a-f]{32}$/);
    expect(sandbox.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe('every operation, with and without .json', () => {
  it('answers the read operations on both spellings with the same bytes', async () => {
    const id = await firstBusinessId();
    const paths = [
      '/businesses',
      `/businesses/${id}`,
      `/businesses/${id}/listings`,
      `/businesses/${id}/reviews`,
      `/businesses/${id}/rankings`,
      `/businesses/${id}/keywords`,
      '/countries',
      '/countries/1/states',
      '/sub_categories',
    ];
    for (const path of paths) {
      const plain = await call(first(), 'GET', path);
      const suffixed = await call(first(), 'GET', `${path}.json`);
      expect(plain.status, path).toBe(200);
      expect(plain.json.success, path).toBe(true);
      expect(suffixed.text, path).toBe(plain.text);
    }
    const full = await call(first(), 'GET', `/businesses/${id}.json`, { query: { type: 'all' } });
    expect(full.json.result.description).toBeTypeOf('string');
  });

  it('answers the write operations on both spellings', async () => {
    const created = await call(first(), 'POST', '/businesses.json', {
      body: { business: validBusiness() },
    });
    expect(created.json.success).toBe(true);
    const id = created.json.result.id;
    const updated = await call(first(), 'PUT', `/businesses/${id}.json`, {
      body: { business: { name: 'Renamed' } },
    });
    expect(updated.json.result.name).toBe('Renamed');
    const keyword = await call(first(), 'POST', `/businesses/${id}/add_keyword.json`, {
      body: { keyword: 'plumber austin' },
    });
    expect(keyword.json.success).toBe(true);
    const deleted = await call(first(), 'DELETE', `/keywords/${keyword.json.result.id}.json`);
    expect(deleted.json.success).toBe(true);
    const archived = await call(first(), 'POST', `/businesses/${id}/archive.json`);
    expect(archived.json).toEqual({ success: true });
    const created2 = await call(first(), 'POST', '/businesses', {
      body: { business: validBusiness() },
    });
    const id2 = created2.json.result.id;
    expect(id2).not.toBe(id);
    expect(
      (
        await call(first(), 'PUT', `/businesses/${id2}`, {
          body: { business: { phone: '512-555-0100' } },
        })
      ).json.success,
    ).toBe(true);
    const kw2 = await call(first(), 'POST', `/businesses/${id2}/add_keyword`, {
      body: { keyword: 'drain cleaning' },
    });
    expect((await call(first(), 'DELETE', `/keywords/${kw2.json.result.id}`)).json.success).toBe(
      true,
    );
    expect((await call(first(), 'POST', `/businesses/${id2}/archive`)).json).toEqual({
      success: true,
    });
  });
});

describe('response shapes', () => {
  it('lists business summaries with exactly the summary fields', async () => {
    const list = await call(first(), 'GET', '/businesses');
    expect(list.json.result.length).toBeGreaterThan(5);
    for (const business of list.json.result) {
      expect(Object.keys(business)).toEqual([
        'id',
        'name',
        'street',
        'city',
        'state_name',
        'postal_code',
        'phone',
      ]);
      expect(business.phone).toMatch(/^\d{3}-\d{3}-\d{4}$/);
    }
  });

  it('reads basic and full businesses', async () => {
    const id = await firstBusinessId();
    const basic = await call(first(), 'GET', `/businesses/${id}`);
    expect(Object.keys(basic.json.result)).toEqual([
      'id',
      'name',
      'street',
      'city',
      'state_name',
      'postal_code',
      'phone',
      'biz_url',
      'hide_address',
    ]);
    const full = (await call(first(), 'GET', `/businesses/${id}`, { query: { type: 'all' } })).json
      .result;
    for (const key of [
      'latitude',
      'longitude',
      'biz_url',
      'owner_first_name',
      'owner_last_name',
      'facebook_url',
      'twitter_url',
      'description',
      'tagline',
      'storecode',
      'additional_categories',
      'business_hours',
      'hide_address',
    ]) {
      expect(full, key).toHaveProperty(key);
    }
    expect(full.business_hours).toHaveLength(7);
    for (const entry of full.business_hours) {
      expect(Object.keys(entry)).toEqual(['day', 'start_time', 'end_time']);
      if (entry.start_time !== null) expect(entry.start_time).toMatch(/^\d{2}:\d{2}$/);
    }
  });

  it('serves listings with the seed spread and quirks', async () => {
    const list = (await call(first(), 'GET', '/businesses')).json.result;
    const listings: Record<string, unknown>[] = [];
    for (const b of list)
      listings.push(...(await call(first(), 'GET', `/businesses/${b.id}/listings`)).json.result);
    const perBusiness = listings.length / list.length;
    expect(perBusiness).toBeGreaterThan(35);
    expect(perBusiness).toBeLessThan(46);
    const byStatus = (s: string) => listings.filter((l) => l.status === s).length;
    expect(byStatus('Accurate')).toBeGreaterThan(listings.length / 2);
    expect(byStatus('Inaccurate')).toBeGreaterThan(0);
    expect(byStatus('Not Present')).toBeGreaterThan(0);
    const short = listings.filter((l) => Object.keys(l).length === 6);
    expect(short.length).toBeGreaterThan(0);
    for (const l of short) {
      expect(Object.keys(l).sort()).toEqual([
        'id',
        'site_name',
        'site_password',
        'site_username',
        'status',
        'sync_status',
      ]);
    }
    expect(listings.some((l) => typeof l.live_link === 'number')).toBe(true);
    expect(
      listings.some((l) => typeof l.live_link === 'string' && l.live_link.startsWith('https://')),
    ).toBe(true);
    expect(listings.some((l) => l.order_status === 'success')).toBe(true);
    expect(listings.some((l) => l.site_username !== null && l.site_password !== null)).toBe(true);
    expect(new Set(listings.map((l) => l.sync_status))).toEqual(
      new Set(['success', 'error', 'in progress']),
    );
    expect(new Set(listings.map((l) => l.id)).size).toBe(listings.length);
    const sites = new Set(listings.map((l) => l.site_name));
    for (const site of [
      'Google',
      'Facebook',
      'Yelp',
      'Bing',
      'Yahoo Local',
      'Yellowpages',
      'Foursquare',
    ]) {
      expect(sites.has(site), site).toBe(true);
    }
  });

  it('serves reviews keyed by site, review category by default, social on request', async () => {
    const id = await firstBusinessId();
    const byDefault = await call(first(), 'GET', `/businesses/${id}/reviews`);
    const reviews = await call(first(), 'GET', `/businesses/${id}/reviews`, {
      query: { category: 'review' },
    });
    const social = await call(first(), 'GET', `/businesses/${id}/reviews`, {
      query: { category: 'social' },
    });
    expect(byDefault.text).toBe(reviews.text);
    const reviewItems = Object.values(reviews.json.result).flat() as Record<string, unknown>[];
    const socialItems = Object.values(social.json.result).flat() as Record<string, unknown>[];
    expect(reviewItems.length + socialItems.length).toBeGreaterThanOrEqual(20);
    for (const [site, items] of Object.entries(reviews.json.result) as [
      string,
      Record<string, unknown>[],
    ][]) {
      for (const item of items) {
        expect(item.type).toBe('Review');
        // Only respondable sites, and never a review already answered (op 9's rules).
        if (item.can_respond) expect(['Facebook', 'Google', 'Yelp']).toContain(site);
        if ((item.responses as unknown[]).length > 0) expect(item.can_respond).toBe(false);
        expect(item.id).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
        expect(item.date).toMatch(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$/);
        expect(Array.isArray(item.responses)).toBe(true);
      }
    }
    for (const item of socialItems) {
      expect(['Photo', 'Comment', 'Tweet', 'Attraction', 'LikesCount', 'Message']).toContain(
        item.type,
      );
      expect(item.can_respond).toBe(false);
    }
  });

  it('covers every social type, both date forms and responses across the account', async () => {
    const list = (await call(first(), 'GET', '/businesses')).json.result;
    const types = new Set<string>();
    const dates = { plain: 0, iso: 0 };
    let withResponses = 0;
    let likes = 0;
    for (const b of list) {
      for (const category of ['review', 'social']) {
        const result = (
          await call(first(), 'GET', `/businesses/${b.id}/reviews`, { query: { category } })
        ).json.result;
        for (const item of Object.values(result).flat() as Record<string, unknown>[]) {
          types.add(item.type as string);
          if (String(item.date).includes('T')) dates.iso++;
          else dates.plain++;
          if ((item.responses as unknown[]).length > 0) withResponses++;
          if (typeof item.likes_count === 'number' && 'likes_change' in item) likes++;
        }
      }
    }
    expect(types).toEqual(
      new Set(['Review', 'Photo', 'Comment', 'Tweet', 'Attraction', 'LikesCount', 'Message']),
    );
    expect(dates.plain).toBeGreaterThan(0);
    expect(dates.iso).toBeGreaterThan(0);
    expect(withResponses).toBeGreaterThan(0);
    expect(likes).toBeGreaterThan(0);
  });

  it('serves rankings and keywords per the seed', async () => {
    const id = await firstBusinessId();
    const keywords = (await call(first(), 'GET', `/businesses/${id}/keywords`)).json.result;
    expect(keywords.length).toBeGreaterThanOrEqual(5);
    expect(keywords.length).toBeLessThanOrEqual(15);
    expect(keywords[0].primary).toBe(true);
    for (const k of keywords) {
      expect(Object.keys(k)).toEqual([
        'id',
        'keyword',
        'city',
        'state',
        'primary',
        'location_id',
        'archived',
      ]);
      expect(k.location_id).toBe(id);
    }
    const rankings = (await call(first(), 'GET', `/businesses/${id}/rankings`)).json.result;
    for (const k of keywords) {
      const ranks = rankings[k.keyword];
      expect(ranks, k.keyword).toBeDefined();
      for (const site of [
        'Google Maps',
        'Google',
        'Yahoo Local',
        'Yahoo',
        'Bing',
        'Yelp',
        'Yellowpages',
      ]) {
        expect(ranks[site] === '-' || Number.isInteger(ranks[site]), site).toBe(true);
      }
      expect(Number.isInteger(ranks.Google_new.local)).toBe(true);
      expect(Number.isInteger(ranks.Google_new.organic)).toBe(true);
    }
  });

  it('serves reference data: countries, states with iso, sub categories with id and name only', async () => {
    const countries = (await call(first(), 'GET', '/countries')).json.result;
    expect(countries).toContainEqual({ id: 1, name: 'United States' });
    expect(countries).toContainEqual({ id: 2, name: 'Canada' });
    const states = (await call(first(), 'GET', '/countries/1/states')).json.result;
    expect(states).toContainEqual({ id: 44, name: 'Texas', iso: 'TX', country_id: 1 });
    expect(states.length).toBe(51);
    expect((await call(first(), 'GET', '/countries/2/states')).json.result).toContainEqual(
      expect.objectContaining({ name: 'Ontario', iso: 'ON' }),
    );
    expect((await call(first(), 'GET', '/countries/999/states')).json).toEqual({
      success: true,
      result: [],
    });
    const categories = (await call(first(), 'GET', '/sub_categories')).json.result;
    expect(categories.length).toBeGreaterThanOrEqual(90);
    for (const c of categories) expect(Object.keys(c)).toEqual(['id', 'name']);
  });

  it('returns the create and update field sets', async () => {
    const created = await call(first(), 'POST', '/businesses', {
      body: { business: validBusiness() },
    });
    expect(Object.keys(created.json.result)).toEqual([
      'id',
      'name',
      'street',
      'city',
      'state_name',
      'sub_category_name',
      'postal_code',
      'phone',
      'biz_url',
      'hide_address',
    ]);
    expect(created.json.result).toMatchObject({
      state_name: 'Texas',
      sub_category_name: 'Plumbers',
    });
    const id = created.json.result.id;
    const list = (await call(first(), 'GET', '/businesses')).json.result;
    expect(list.map((b: { id: number }) => b.id)).toContain(id);
    const updated = await call(first(), 'PUT', `/businesses/${id}`, {
      body: { business: { name: 'New Name', state_id: 5 } },
    });
    expect(Object.keys(updated.json.result)).toEqual([
      'id',
      'name',
      'street',
      'city',
      'state_name',
      'postal_code',
      'phone',
      'biz_url',
    ]);
    expect(updated.json.result).toMatchObject({ name: 'New Name', state_name: 'California' });
    const read = (await call(first(), 'GET', `/businesses/${id}`)).json.result;
    expect(read.name).toBe('New Name');
  });

  it('adds keywords (first one primary) and deletes them with a confirmation', async () => {
    const id = (await call(first(), 'POST', '/businesses', { body: { business: validBusiness() } }))
      .json.result.id;
    const k1 = (
      await call(first(), 'POST', `/businesses/${id}/add_keyword`, {
        body: { keyword: 'plumber austin' },
      })
    ).json.result;
    const k2 = (
      await call(first(), 'POST', `/businesses/${id}/add_keyword`, {
        body: { keyword: 'drain cleaning' },
        form: true,
      })
    ).json.result;
    expect(k1).toMatchObject({
      keyword: 'plumber austin',
      primary: true,
      location_id: id,
      archived: false,
      city: 'Austin',
    });
    expect(k2).toMatchObject({ keyword: 'drain cleaning', primary: false });
    const deleted = await call(first(), 'DELETE', `/keywords/${k1.id}`);
    expect(deleted.json).toEqual({
      success: true,
      result: `Keyword 'plumber austin' (id ${k1.id}) has been deleted.`,
    });
    const keywords = (await call(first(), 'GET', `/businesses/${id}/keywords`)).json.result;
    expect(keywords.map((k: { id: number }) => k.id)).toEqual([k2.id]);
    expect((await call(first(), 'DELETE', `/keywords/${k1.id}`)).json.message).toBe(
      'Invalid keyword id',
    );
    expect(
      Object.keys((await call(first(), 'GET', `/businesses/${id}/rankings`)).json.result),
    ).toEqual(['drain cleaning']);
  });

  it('archives: the business leaves the list and then reads as missing', async () => {
    const list = (await call(first(), 'GET', '/businesses')).json.result;
    const id = list[list.length - 1].id;
    await call(first(), 'POST', `/businesses/${id}/archive`);
    const after = (await call(first(), 'GET', '/businesses')).json.result;
    expect(after.map((b: { id: number }) => b.id)).not.toContain(id);
    expect((await call(first(), 'GET', `/businesses/${id}`)).json.message).toBe(
      "This business doesn't exist",
    );
    expect((await call(first(), 'GET', `/businesses/${id}/keywords`)).json.message).toBe(
      'Invalid location id',
    );
  });
});

describe('authentication and isolation', () => {
  it('refuses a missing or wrong token or e-mail on every operation', async () => {
    const paths: Array<[string, string]> = [
      ['GET', '/businesses'],
      ['GET', '/businesses/10000001'],
      ['POST', '/businesses'],
      ['PUT', '/businesses/10000001'],
      ['POST', '/businesses/10000001/archive'],
      ['GET', '/businesses/10000001/listings'],
      ['GET', '/businesses/10000001/reviews'],
      ['POST', '/businesses/10000001/reviews/00000000-0000-4000-8000-000000000000/responses'],
      ['GET', '/businesses/10000001/reviews/00000000-0000-4000-8000-000000000000/responses/1'],
      ['GET', '/businesses/10000001/rankings'],
      ['GET', '/businesses/10000001/keywords'],
      ['POST', '/businesses/10000001/add_keyword'],
      ['DELETE', '/keywords/10000001000'],
      ['GET', '/countries/1/states'],
      ['GET', '/countries'],
      ['GET', '/sub_categories'],
    ];
    const wrongEmail = { ...first(), userEmail: second().userEmail };
    const wrongToken = { ...first(), authToken: 'sbx_nope' };
    for (const [method, path] of paths) {
      for (const credential of [wrongEmail, wrongToken]) {
        const answer = await call(credential, method, path);
        expect(answer.status, `${method} ${path}`).toBe(401);
        expect(answer.json).toEqual({ success: false, message: 'Authentication Failure' });
      }
      const anonymous = await call(first(), method, path, { anonymous: true });
      expect(anonymous.json.message).toBe('Authentication Failure');
    }
  });

  it('keeps each account to its own businesses; ids are unique across accounts', async () => {
    const mine = (await call(first(), 'GET', '/businesses')).json.result.map(
      (b: { id: number }) => b.id,
    );
    const theirs = (await call(second(), 'GET', '/businesses')).json.result.map(
      (b: { id: number }) => b.id,
    );
    expect(mine.filter((id: number) => theirs.includes(id))).toEqual([]);
    const other = theirs[0];
    expect((await call(first(), 'GET', `/businesses/${other}`)).json.message).toBe(
      "This business doesn't exist",
    );
    expect((await call(first(), 'GET', `/businesses/${other}/keywords`)).json.message).toBe(
      'Invalid location id',
    );
    const keyword = (await call(second(), 'GET', `/businesses/${other}/keywords`)).json.result[0];
    expect((await call(first(), 'DELETE', `/keywords/${keyword.id}`)).json.message).toBe(
      'Invalid keyword id',
    );
  });
});

describe('error rows on exactly their operations', () => {
  const missing = '99999999';
  it("answers `This business doesn't exist` on ops 2, 3, 5, 6, 7, 8, 11", async () => {
    const cases: Array<[string, string, unknown?]> = [
      ['GET', `/businesses/${missing}`],
      ['GET', `/businesses/${missing}?type=all`],
      ['PUT', `/businesses/${missing}`, { business: { name: 'Xyz' } }],
      ['POST', `/businesses/${missing}/archive`],
      ['GET', `/businesses/${missing}/listings`],
      ['GET', `/businesses/${missing}/reviews`],
      ['GET', `/businesses/${missing}/rankings`],
      ['GET', '/businesses/abc'],
    ];
    for (const [method, path, body] of cases) {
      const [p, q] = path.split('?');
      const answer = await call(first(), method, p!, {
        body,
        query: q ? Object.fromEntries(new URLSearchParams(q)) : {},
      });
      expect(answer.status, path).toBe(404);
      expect(answer.json, path).toEqual({ success: false, message: "This business doesn't exist" });
    }
  });

  it('answers `Invalid location id` on ops 12 and 13', async () => {
    for (const [method, path] of [
      ['GET', `/businesses/${missing}/keywords`],
      ['POST', `/businesses/${missing}/add_keyword`],
    ] as const) {
      const answer = await call(
        first(),
        method,
        path,
        method === 'POST' ? { body: { keyword: 'x' } } : {},
      );
      expect(answer.json).toEqual({ success: false, message: 'Invalid location id' });
    }
  });

  it('answers `Invalid keyword id` on op 14, `Invalid Request ID` on op 10, `Review ID is invalid.` on op 9', async () => {
    expect((await call(first(), 'DELETE', '/keywords/123')).json).toEqual({
      success: false,
      message: 'Invalid keyword id',
    });
    expect((await call(first(), 'DELETE', '/keywords/abc')).json.message).toBe(
      'Invalid keyword id',
    );
    const id = await firstBusinessId();
    const review = (
      Object.values(
        (await call(first(), 'GET', `/businesses/${id}/reviews`)).json.result,
      ).flat()[0] as { id: string }
    ).id;
    const status = await call(first(), 'GET', `/businesses/${id}/reviews/${review}/responses/42`);
    expect(status.json).toEqual({ success: false, message: 'Invalid Request ID' });
    const bogus = await call(first(), 'POST', `/businesses/${id}/reviews/not-a-uuid/responses`, {
      body: { content: 'hi' },
    });
    expect(bogus.json).toEqual({ success: false, message: 'Review ID is invalid.' });
    const forged = await call(
      first(),
      'POST',
      `/businesses/${id}/reviews/${review.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))}/responses`,
      { body: { content: 'hi' } },
    );
    expect(forged.json.message).toBe('Review ID is invalid.');
  });

  it('answers errors with HTTP 200 when errorsWith200 is set', async () => {
    sandbox.setFaults({ errorsWith200: true });
    try {
      const auth = await call({ ...first(), authToken: 'x' }, 'GET', '/businesses');
      expect(auth.status).toBe(200);
      expect(auth.json).toEqual({ success: false, message: 'Authentication Failure' });
      const missingBusiness = await call(first(), 'GET', `/businesses/${missing}`);
      expect(missingBusiness.status).toBe(200);
      expect(missingBusiness.json.message).toBe("This business doesn't exist");
      const invalid = await call(first(), 'POST', '/businesses', {
        body: { business: validBusiness({ phone: '5' }) },
      });
      expect(invalid.status).toBe(200);
      expect(invalid.json.message).toBe('The business was not created. Phone is invalid.');
    } finally {
      sandbox.setFaults({ errorsWith200: false });
    }
  });
});
