/**
 * Review responses: every refusal of operation 9 with its exact text, and the request
 * lifecycle of operation 10 across clock advances.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { call } from './http.ts';

let sandbox: RunningSandbox;

interface Candidate {
  businessId: number;
  reviewId: string;
  site: string;
  credentials: boolean;
  responses: number;
}

const candidates: Candidate[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 5, accounts: 2, businessesPerAccount: 10 });
  const me = sandbox.credentials[0]!;
  for (const business of (await call(me, 'GET', '/businesses')).json.result) {
    const listings = (await call(me, 'GET', `/businesses/${business.id}/listings`)).json.result;
    const withCredentials = new Set(
      listings
        .filter((l: { site_username: unknown }) => l.site_username)
        .map((l: { site_name: string }) => l.site_name),
    );
    const reviews = (await call(me, 'GET', `/businesses/${business.id}/reviews`)).json.result;
    for (const [site, items] of Object.entries(reviews) as [
      string,
      { id: string; responses: unknown[] }[],
    ][]) {
      for (const item of items) {
        candidates.push({
          businessId: business.id,
          reviewId: item.id,
          site,
          credentials: withCredentials.has(site),
          responses: item.responses.length,
        });
      }
    }
  }
});
afterAll(async () => {
  await sandbox.close();
});

const respondable = (c: Candidate) => ['Facebook', 'Google', 'Yelp'].includes(c.site);

const MISSING = Symbol('missing');

async function respond(c: Candidate, content: unknown = 'Thank you for the review!', account = 0) {
  return call(
    sandbox.credentials[account]!,
    'POST',
    `/businesses/${c.businessId}/reviews/${c.reviewId}/responses`,
    {
      body: content === MISSING ? {} : { content },
    },
  );
}

async function status(c: Candidate, requestId: number) {
  return call(
    sandbox.credentials[0]!,
    'GET',
    `/businesses/${c.businessId}/reviews/${c.reviewId}/responses/${requestId}`,
  );
}

describe('operation 9 refusals', () => {
  it('refuses empty or missing content', async () => {
    const c = candidates[0]!;
    for (const content of ['', '   ', MISSING, 42]) {
      const answer = await respond(c, content);
      expect(answer.status).toBe(422);
      expect(answer.json).toEqual({ success: false, message: 'Review content is empty.' });
    }
  });

  it("refuses another account's review", async () => {
    const answer = await respond(candidates[0]!, 'hello', 1);
    expect(answer.json).toEqual({
      success: false,
      message: "Review must pertain to a business you've added.",
    });
  });

  it('refuses a respondable site without credentials', async () => {
    const c = candidates.find((x) => respondable(x) && !x.credentials);
    expect(c).toBeDefined();
    expect((await respond(c!)).json).toEqual({
      success: false,
      message: 'Site credentials have not been set.',
    });
  });

  it('refuses a site other than Facebook, Google and Yelp', async () => {
    const c = candidates.find((x) => !respondable(x) && x.credentials);
    expect(c).toBeDefined();
    expect((await respond(c!)).json).toEqual({
      success: false,
      message: 'This operation is currently not supported for this site.',
    });
  });

  it('refuses a review that already has a response, and earlier submissions in the data', async () => {
    const messages = new Set<string>();
    for (const c of candidates.filter((x) => respondable(x) && x.credentials && x.responses > 0)) {
      messages.add((await respond(c)).json.message);
    }
    expect(messages).toContain('A response already exists for this review.');
    // Generated earlier submissions: some still running, some failed.
    const fresh = candidates.filter((x) => respondable(x) && x.credentials && x.responses === 0);
    const refusals = new Set<string>();
    for (const c of fresh) {
      const answer = await respond(c, 'Thanks!');
      if (!answer.json.success) refusals.add(answer.json.message);
    }
    expect(refusals).toContain('There is already a response submission in progress.');
    expect(refusals).toContain('A response has been submitted previously, which failed.');
  });
});

describe('the response request lifecycle', () => {
  it('moves requests Created → In Progress → Completed or Failed, one step a day', async () => {
    // A fresh sandbox, so that no earlier test has submitted anything.
    const own = await startSandbox({ port: 0, seed: 5, accounts: 2, businessesPerAccount: 10 });
    const original = sandbox;
    sandbox = own;
    try {
      const submitted: Array<{ c: Candidate; requestId: number }> = [];
      for (const c of candidates.filter(
        (x) => respondable(x) && x.credentials && x.responses === 0,
      )) {
        const answer = await respond(c, `Response to ${c.reviewId}`);
        if (!answer.json.success) continue;
        expect(Object.keys(answer.json).sort()).toEqual(['message', 'request_id', 'success']);
        expect(Number.isInteger(answer.json.request_id)).toBe(true);
        submitted.push({ c, requestId: answer.json.request_id });
      }
      expect(submitted.length).toBeGreaterThan(10);
      expect(new Set(submitted.map((s) => s.requestId)).size).toBe(submitted.length);

      const first = submitted[0]!;
      expect((await status(first.c, first.requestId)).json).toEqual({ status: 'Created' });
      expect((await respond(first.c)).json.message).toBe(
        'There is already a response submission in progress.',
      );

      sandbox.advanceDays(1);
      for (const s of submitted) {
        expect((await status(s.c, s.requestId)).json).toEqual({ status: 'In Progress' });
      }
      sandbox.advanceDays(1);
      const dayTwo = new Set<string>();
      for (const s of submitted) dayTwo.add((await status(s.c, s.requestId)).json.status);
      expect(dayTwo).toContain('Retry In Progress');
      sandbox.advanceDays(1);

      const finals = new Map<string, typeof submitted>();
      for (const s of submitted) {
        const st = (await status(s.c, s.requestId)).json.status;
        finals.set(st, [...(finals.get(st) ?? []), s]);
      }
      expect([...finals.keys()].sort()).toEqual(['Completed', 'Failed']);

      const completed = finals.get('Completed')![0]!;
      const reviews = (
        await call(sandbox.credentials[0]!, 'GET', `/businesses/${completed.c.businessId}/reviews`)
      ).json.result;
      const review = (
        Object.values(reviews).flat() as { id: string; responses: { content: string }[] }[]
      ).find((r) => r.id === completed.c.reviewId)!;
      expect(review.responses.map((r) => r.content)).toEqual([
        `Response to ${completed.c.reviewId}`,
      ]);
      expect((await respond(completed.c)).json.message).toBe(
        'A response has already been submitted successfully.',
      );
      const failed = finals.get('Failed')![0]!;
      expect((await respond(failed.c)).json.message).toBe(
        'A response has been submitted previously, which failed.',
      );

      // Another account cannot read the request's status: the business is not its own.
      const foreign = await call(
        sandbox.credentials[1]!,
        'GET',
        `/businesses/${first.c.businessId}/reviews/${first.c.reviewId}/responses/${first.requestId}`,
      );
      expect(foreign.json).toEqual({ success: false, message: "This business doesn't exist" });
    } finally {
      sandbox = original;
      await own.close();
    }
  });
});
