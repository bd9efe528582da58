/**
 * The record schemas run compiled (`z.compile`, in each record's module under src/api): zod generates a
 * fast path for the plain form of a record and falls back to its runtime parser for the
 * rest. The oracle here is that runtime parser (`schema.clone()`, which has no fast
 * path): on the sandbox's own answers, read over HTTP, and on each of their fields turned
 * into the values the upstream is known to send wrong, both give the same result, data
 * or issues, to the last field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { businessFullSchema, businessSummarySchema } from '../../src/api/businesses.ts';
import { keywordSchema } from '../../src/api/keywords.ts';
import { listingSchema } from '../../src/api/listings.ts';
import { rankingEntrySchema } from '../../src/api/rankings.ts';
import { reviewSchema } from '../../src/api/reviews.ts';
import { rank } from '../../src/api/schemas.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';

/** What replaces a field, one at a time: absent, empty, of the wrong type, unstorable. */
const ODD_VALUES: readonly unknown[] = [
  undefined,
  null,
  '',
  '  ',
  '-',
  ' 7 ',
  '12',
  '4.5',
  'x\u0000y',
  'lone \ud800 surrogate',
  'a'.repeat(501),
  '2026-02-30',
  '2026-01-01',
  '2026-01-01T10:00:00Z',
  '2026-01-01 10:00:00+0200',
  '0000-01-01',
  '3f2504e0-4f89-11d3-9a0c-0305e82c3301',
  0,
  -1,
  1.5,
  2 ** 31,
  32_768,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  [1, 'a'],
  {},
  { local: 1, organic: '-' },
  { local: 'x', organic: 2 },
];

interface Answers {
  summaries: unknown[];
  fulls: unknown[];
  listings: unknown[];
  reviews: unknown[];
  rankingEntries: unknown[];
  keywords: unknown[];
}

async function readAnswers(sandbox: RunningSandbox): Promise<Answers> {
  const credential = sandbox.credentials[0] as RunningSandbox['credentials'][number];
  const auth = new URLSearchParams({
    auth_token: credential.authToken,
    user_email: credential.userEmail,
  });
  const get = async (path: string, query: Record<string, string> = {}) => {
    const url = `${credential.baseUrl}/api/v2${path}?${new URLSearchParams({ ...query, ...Object.fromEntries(auth) })}`;
    const body = (await (await fetch(url)).json()) as { success: boolean; result: unknown };
    expect(body.success).toBe(true);
    return body.result;
  };
  const answers: Answers = {
    summaries: (await get('/businesses.json')) as unknown[],
    fulls: [],
    listings: [],
    reviews: [],
    rankingEntries: [],
    keywords: [],
  };
  for (const summary of answers.summaries as { id: number }[]) {
    const at = `/businesses/${summary.id}`;
    answers.fulls.push(await get(`${at}.json`));
    answers.listings.push(...((await get(`${at}/listings.json`)) as unknown[]));
    for (const category of ['review', 'social']) {
      const bySite = (await get(`${at}/reviews.json`, { category })) as Record<string, unknown[]>;
      if (!Array.isArray(bySite))
        for (const items of Object.values(bySite)) answers.reviews.push(...items);
    }
    const ranks = (await get(`${at}/rankings.json`)) as Record<string, unknown>;
    if (!Array.isArray(ranks)) answers.rankingEntries.push(...Object.values(ranks));
    answers.keywords.push(...((await get(`${at}/keywords.json`)) as unknown[]));
  }
  return answers;
}

/** Each record as served, then with each of its fields (and its first response's) odd. */
function variants(records: readonly unknown[], limit = 6): unknown[] {
  const out: unknown[] = [...records];
  for (const record of records.slice(0, limit)) {
    if (typeof record !== 'object' || record === null) continue;
    const fields = Object.keys(record);
    for (const field of fields) {
      for (const value of ODD_VALUES) {
        const copy: Record<string, unknown> = { ...(record as Record<string, unknown>) };
        if (value === undefined) delete copy[field];
        else copy[field] = value;
        out.push(copy);
      }
    }
    const responses = (record as { responses?: unknown }).responses;
    if (Array.isArray(responses) && responses.length > 0) {
      for (const field of Object.keys(responses[0] as object)) {
        for (const value of ODD_VALUES) {
          const response = { ...(responses[0] as Record<string, unknown>), [field]: value };
          out.push({ ...(record as object), responses: [response, ...responses.slice(1)] });
        }
      }
    }
  }
  return out;
}

function expectSameAsRuntime(schema: z.ZodType, inputs: readonly unknown[]): void {
  const runtime = schema.clone();
  let parsed = 0;
  for (const input of inputs) {
    const compiled = schema.safeParse(input);
    const expected = runtime.safeParse(input);
    expect(compiled.success, JSON.stringify(input)).toBe(expected.success);
    if (expected.success) {
      parsed += 1;
      expect(compiled.data, JSON.stringify(input)).toStrictEqual(expected.data);
    } else expect(compiled.error?.issues).toStrictEqual(expected.error?.issues);
  }
  // The corpus reaches both outcomes: records that parse and records refused.
  expect(parsed).toBeGreaterThan(0);
  expect(parsed).toBeLessThan(inputs.length);
}

describe('compiled record schemas', () => {
  let sandbox: RunningSandbox;
  let answers: Answers;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, accounts: 1, businessesPerAccount: 4, port: 0 });
    answers = await readAnswers(sandbox);
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  it('read a corpus of every kind of record', () => {
    expect(answers.summaries.length).toBe(4);
    expect(answers.listings.length).toBeGreaterThan(10);
    expect(answers.reviews.length).toBeGreaterThan(10);
    expect(answers.rankingEntries.length).toBeGreaterThan(3);
    expect(answers.keywords.length).toBeGreaterThan(3);
  });

  it.each([
    ['business summary', () => businessSummarySchema, () => answers.summaries],
    ['business profile', () => businessFullSchema, () => answers.fulls],
    ['listing', () => listingSchema, () => answers.listings],
    ['review', () => reviewSchema, () => answers.reviews],
    ['ranking entry', () => rankingEntrySchema, () => answers.rankingEntries],
    ['keyword', () => keywordSchema, () => answers.keywords],
  ] as const)('%s: the same result as the runtime parser', (_name, schema, records) => {
    expectSameAsRuntime(schema() as z.ZodType, variants(records()));
  });

  it('rank: the same result as the runtime parser', () => {
    expectSameAsRuntime(rank as z.ZodType, [...ODD_VALUES, 0, 5, 32_767, ' - ', '007']);
  });
});
