/**
 * The places where the sandbox used to be kinder than the contract it stands for
 * (docs/upstream.md, "What the sandbox assumes"): op 13's form bodies, op 10's business
 * check, both forms of response request ids, `can_respond` agreeing with op 9, hidden
 * addresses, webhook time and account, and the fault settings' key list.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HIDDEN_ADDRESS_SITES } from '../../src/sandbox/reference-data.ts';
import {
  type RunningSandbox,
  type SandboxCredential,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { runCli } from '../helpers/cli.ts';
import { call, control, validBusiness } from './http.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let sandbox: RunningSandbox;

beforeEach(async () => {
  sandbox = await startSandbox({ port: 0, seed: 5, accounts: 2, businessesPerAccount: 4 });
});
afterEach(async () => {
  await sandbox.close();
});

const me = () => sandbox.credentials[0]!;

async function firstBusinessId(credential: SandboxCredential = me()): Promise<number> {
  return (await call(credential, 'GET', '/businesses')).json.result[0].id;
}

function authUrl(credential: SandboxCredential, path: string): string {
  const url = new URL(`${credential.baseUrl}/api/v2${path}`);
  url.searchParams.set('auth_token', credential.authToken);
  url.searchParams.set('user_email', credential.userEmail);
  return url.toString();
}

interface ReviewItem {
  id: string;
  can_respond: boolean;
  responses: unknown[];
}

async function reviewsOf(credential: SandboxCredential, businessId: number) {
  const answer = await call(credential, 'GET', `/businesses/${businessId}/reviews`);
  return Object.entries(answer.json.result as Record<string, ReviewItem[]>).flatMap(
    ([site, items]) => items.map((item) => ({ site, ...item })),
  );
}

/** Submit a response to the first review that takes one; its request id and where it lives. */
async function submitFirstAnswerable(credential: SandboxCredential) {
  for (const business of (await call(credential, 'GET', '/businesses')).json.result) {
    for (const review of await reviewsOf(credential, business.id)) {
      if (!review.can_respond) continue;
      const answer = await call(
        credential,
        'POST',
        `/businesses/${business.id}/reviews/${review.id}/responses`,
        { body: { content: 'Thanks for the visit!' } },
      );
      expect(answer.json.success).toBe(true);
      return {
        businessId: business.id as number,
        reviewId: review.id,
        requestId: answer.json.request_id,
      };
    }
  }
  throw new Error('no answerable review in this sandbox');
}

describe('operation 13 (add_keyword) bodies', () => {
  it('adds a keyword sent as JSON, as urlencoded form data and as multipart form data', async () => {
    const id = await firstBusinessId();
    const path = `/businesses/${id}/add_keyword`;
    const json = await call(me(), 'POST', path, { body: { keyword: 'json plumber' } });
    const urlencoded = await call(me(), 'POST', path, {
      body: { keyword: 'urlencoded plumber' },
      form: true,
    });
    const form = new FormData();
    form.set('keyword', 'multipart plumber');
    const multipartResponse = await fetch(authUrl(me(), path), { method: 'POST', body: form });
    const multipart = await multipartResponse.json();

    expect(json.json.result.keyword).toBe('json plumber');
    expect(urlencoded.json.result.keyword).toBe('urlencoded plumber');
    expect(multipartResponse.status).toBe(200);
    expect(multipart).toMatchObject({ success: true, result: { keyword: 'multipart plumber' } });
    const listed = (await call(me(), 'GET', `/businesses/${id}/keywords`)).json.result.map(
      (k: { keyword: string }) => k.keyword,
    );
    expect(listed).toEqual(
      expect.arrayContaining(['json plumber', 'urlencoded plumber', 'multipart plumber']),
    );
  });

  it('refuses a broken multipart body with a text of its own', async () => {
    const id = await firstBusinessId();
    const response = await fetch(authUrl(me(), `/businesses/${id}/add_keyword`), {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: 'no boundary here',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      success: false,
      message: 'The request body is not valid multipart form data.',
    });
  });

  it("answers a multipart body without a keyword with the sandbox's own blank-keyword text", async () => {
    const id = await firstBusinessId();
    const form = new FormData();
    form.set('other', 'x');
    const response = await fetch(authUrl(me(), `/businesses/${id}/add_keyword`), {
      method: 'POST',
      body: form,
    });
    expect(await response.json()).toEqual({ success: false, message: "Keyword can't be blank" });
  });
});

describe('operation 10 (response status)', () => {
  it('checks the business in its path like the other operations', async () => {
    const { businessId, reviewId, requestId } = await submitFirstAnswerable(me());
    const path = (business: number) =>
      `/businesses/${business}/reviews/${reviewId}/responses/${requestId}`;

    expect((await call(me(), 'GET', path(businessId))).json).toEqual({ status: 'Created' });
    expect((await call(me(), 'GET', path(99999))).json).toEqual({
      success: false,
      message: "This business doesn't exist",
    });
    // Another business of the same account exists, but the request is not one of its own.
    const others = (await call(me(), 'GET', '/businesses')).json.result.filter(
      (b: { id: number }) => b.id !== businessId,
    );
    expect((await call(me(), 'GET', path(others[0].id))).json).toEqual({
      success: false,
      message: 'Invalid Request ID',
    });
  });

  it('issues numeric request ids to account-1 and uuids to account-2, and reads both back', async () => {
    const numeric = await submitFirstAnswerable(sandbox.credentials[0]!);
    const uuid = await submitFirstAnswerable(sandbox.credentials[1]!);

    expect(Number.isInteger(numeric.requestId)).toBe(true);
    expect(uuid.requestId).toMatch(UUID);
    for (const [credential, submitted] of [
      [sandbox.credentials[0]!, numeric],
      [sandbox.credentials[1]!, uuid],
    ] as const) {
      const answer = await call(
        credential,
        'GET',
        `/businesses/${submitted.businessId}/reviews/${submitted.reviewId}/responses/${String(submitted.requestId).toUpperCase()}`,
      );
      expect(answer.json).toEqual({ status: 'Created' });
    }
  });
});

describe('can_respond', () => {
  it('is true exactly where operation 9 then accepts a response', async () => {
    let accepted = 0;
    let refusedOnRespondableSite = 0;
    for (const business of (await call(me(), 'GET', '/businesses')).json.result) {
      for (const review of await reviewsOf(me(), business.id)) {
        const answer = await call(
          me(),
          'POST',
          `/businesses/${business.id}/reviews/${review.id}/responses`,
          { body: { content: 'Thank you!' } },
        );
        expect({ id: review.id, accepted: answer.json.success === true }).toEqual({
          id: review.id,
          accepted: review.can_respond,
        });
        if (review.can_respond) accepted++;
        else if (['Facebook', 'Google', 'Yelp'].includes(review.site)) refusedOnRespondableSite++;
      }
    }
    // Both sides occur, so the comparison above covers a refusal on a respondable site.
    expect(accepted).toBeGreaterThan(0);
    expect(refusedOnRespondableSite).toBeGreaterThan(0);
  });

  it('turns false once a response is submitted', async () => {
    const { businessId, reviewId } = await submitFirstAnswerable(me());
    const after = (await reviewsOf(me(), businessId)).find((r) => r.id === reviewId);
    expect(after?.can_respond).toBe(false);
  });
});

describe('hide_address', () => {
  it('lists a business that hides its address only where hidden addresses are supported, without a street', async () => {
    const hidden = await call(me(), 'POST', '/businesses', {
      body: { business: validBusiness({ name: 'Hidden Plumbing', hide_address: true }) },
    });
    const shown = await call(me(), 'POST', '/businesses', {
      body: { business: validBusiness({ name: 'Shown Plumbing' }) },
    });
    const hiddenListings = (
      await call(me(), 'GET', `/businesses/${hidden.json.result.id}/listings`)
    ).json.result as Array<{ site_name: string; street?: string; status: string }>;
    const shownListings = (await call(me(), 'GET', `/businesses/${shown.json.result.id}/listings`))
      .json.result as Array<{ site_name: string; street?: string }>;

    expect(hiddenListings.length).toBeGreaterThan(0);
    for (const listing of hiddenListings) {
      expect(HIDDEN_ADDRESS_SITES.has(listing.site_name)).toBe(true);
      if (listing.status !== 'Not Present') expect(listing.street).toBe('');
    }
    expect(shownListings.some((l) => !HIDDEN_ADDRESS_SITES.has(l.site_name))).toBe(true);
    expect(shownListings.some((l) => l.street === '100 Congress Ave')).toBe(true);
  });

  it('takes effect on update', async () => {
    const id = await firstBusinessId();
    await call(me(), 'PUT', `/businesses/${id}`, { body: { business: { hide_address: true } } });
    const listings = (await call(me(), 'GET', `/businesses/${id}/listings`)).json.result as Array<{
      site_name: string;
    }>;
    expect(listings.map((l) => l.site_name).filter((s) => !HIDDEN_ADDRESS_SITES.has(s))).toEqual(
      [],
    );
  });
});

describe('webhook deliveries', () => {
  let receiver: Server;
  let url: string;
  const bodies: string[] = [];

  beforeEach(async () => {
    bodies.length = 0;
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  });
  afterEach(async () => {
    await new Promise((resolve) => receiver.close(resolve));
  });

  it("carry the sandbox clock's day and the emitting account's id", async () => {
    sandbox.advanceDays(40);
    const second = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url,
      secret: 's',
      account: 'account-2',
    });
    const byDefault = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url,
      secret: 's',
    });
    expect([second.json.delivered, byDefault.json.delivered]).toEqual([1, 1]);
    const events = bodies.map((b) => JSON.parse(b));
    expect(sandbox.today()).toBe('2026-02-10');
    expect(events.map((e) => e.timestamp.slice(0, 10))).toEqual(['2026-02-10', '2026-02-10']);
    expect(events.map((e) => e.account_id)).toEqual([1002, 1001]);
  });

  it('refuses an unknown account, naming the valid ones', async () => {
    const answer = await control(sandbox.baseUrl, 'POST', '/__sandbox/webhooks/emit', {
      url,
      secret: 's',
      account: 'account-9',
    });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('account must be one of account-1, account-2.');
    expect(bodies).toEqual([]);
  });
});

describe('fault settings', () => {
  it('accepts latency and jitter as aliases of latencyMs and jitterMs', async () => {
    const answer = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', {
      latency: 5,
      jitter: 1,
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ latencyMs: 5, jitterMs: 1 });
    await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', { latencyMs: 0, jitterMs: 0 });
  });

  it('refuses an unknown key with the list of valid keys', async () => {
    const answer = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', { delay: 5 });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe(
      'Unknown fault setting "delay"; the settings are latencyMs, jitterMs, errorRate, rateLimitPerSecond, retryAfterSeconds, resetRate, hangRate, malformedRate, errorsWith200, script (latency and jitter are accepted for latencyMs and jitterMs).',
    );
    expect((await control(sandbox.baseUrl, 'GET', '/__sandbox/faults')).json.latencyMs).toBe(0);
  });

  it('refuses an alias given together with its key', async () => {
    const answer = await control(sandbox.baseUrl, 'PUT', '/__sandbox/faults', {
      latency: 5,
      latencyMs: 6,
    });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('Give latencyMs or latency, not both.');
  });
});

describe('the sandbox command', () => {
  it.each(['--error-rate', '--reset-rate', '--hang-rate', '--malformed-rate'])(
    'treats %s 2 as a usage error naming the flag',
    async (flag) => {
      const result = await runCli(['sandbox', '--port', '0', flag, '2'], {});
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${flag} must be a number from 0 to 1.`);
      expect(result.stderr).not.toContain('errorRate');
      expect(result.stdout).not.toContain('Serving');
    },
  );

  it('refuses a start date that is not on the calendar, rather than rolling it over', async () => {
    await expect(startSandbox({ port: 0, startDate: '2026-02-30' })).rejects.toThrow(
      'startDate must be a date as YYYY-MM-DD (got "2026-02-30").',
    );
  });

  it.each(['2026-13-01', '2026-02-30', '26-01-01'])(
    'treats --start-date %s as a usage error naming the flag',
    async (date) => {
      const result = await runCli(['sandbox', '--port', '0', '--start-date', date], {});
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--start-date must be a calendar date as YYYY-MM-DD.');
      expect(result.stdout).not.toContain('Serving');
    },
  );
});
