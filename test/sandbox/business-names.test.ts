/**
 * The sandbox names its businesses after their category in the English singular:
 * "Harbor Bakery", never "Harbor Bakerie" (`Bakeries`, `Travel Agencies`,
 * `Storage Facilities`, `Churches`). Every category's noun, and the names a world serves
 * over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUB_CATEGORIES } from '../../src/sandbox/reference-data.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { businessNoun } from '../../src/sandbox/world.ts';
import { call } from './http.ts';

/** Nouns an English plural rule applied backwards leaves broken. */
const NOT_ENGLISH = /\b\w+(ie|che|she|xe)\b/;

describe('sandbox business names', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 7, accounts: 1, businessesPerAccount: 400, port: 0 });
  });
  afterAll(() => sandbox?.close());

  it("each category's noun is its English singular", () => {
    expect(businessNoun('Bakeries')).toBe('Bakery');
    expect(businessNoun('Travel Agencies')).toBe('Travel Agency');
    expect(businessNoun('Storage Facilities')).toBe('Storage Facility');
    expect(businessNoun('Pharmacies')).toBe('Pharmacy');
    expect(businessNoun('Breweries')).toBe('Brewery');
    expect(businessNoun('Churches')).toBe('Church');
    expect(businessNoun('Plumbers')).toBe('Plumber');
    expect(businessNoun('Day Spas')).toBe('Day Spa');
    expect(businessNoun('Car Wash')).toBe('Car Wash');
    expect(businessNoun('Pizza')).toBe('Pizza');
    for (const { name } of SUB_CATEGORIES)
      expect(businessNoun(name), name).not.toMatch(NOT_ENGLISH);
  });

  it('the names the sandbox serves read as English', async () => {
    const credential = sandbox.credentials[0]!;
    const names: string[] = [];
    for (let page = 1; names.length < 400; page++) {
      const list = await call(credential, 'GET', '/businesses.json', {
        query: { page: String(page) },
      });
      const result = list.json.result as { name: string }[];
      if (result.length === 0) break;
      names.push(...result.map((b) => b.name));
    }
    expect(names.length).toBeGreaterThan(100);
    expect(names.filter((name) => NOT_ENGLISH.test(name))).toEqual([]);
    // The world holds some of the categories that used to come out wrong.
    expect(
      names.some((name) => /\b(Bakery|Agency|Facility|Pharmacy|Brewery|Church)\b/.test(name)),
    ).toBe(true);
  });
});
