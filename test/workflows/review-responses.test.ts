/**
 * The review-response workflow against the sandbox: every refusal of operation 9 through
 * `api reviews respond` (its code, the upstream's text, and what to do), requests
 * recorded, followed by syncs across sandbox days to `Completed` and `Failed` with each
 * change recorded, the `review_response_failed` alert and its sink messages, and
 * `api reviews response-status`.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlertDispatcher } from '../../src/alerts/dispatcher.ts';
import { alertWebhookBody, slackMessage } from '../../src/alerts/messages.ts';
import type { AlertForDelivery } from '../../src/alerts/outbox.ts';
import {
  type ApiClient,
  listBusinesses,
  listListings,
  listReviews,
  type Review,
} from '../../src/api/index.ts';
import { RESPOND_ADVICE } from '../../src/cli/workflows/command-context.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { SyncResult } from '../../src/sync/run.ts';
import { type TestBackend, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sharedBuild } from '../helpers/warehouse-copies.ts';
import { sync, testApiClient } from '../sync/harness.ts';
import { type CommandRun, type WorkflowRunner, workflowRunner } from './harness.ts';

const UPSTREAM_TEXT = {
  REVIEW_ID_INVALID: 'Review ID is invalid.',
  REVIEW_CONTENT_EMPTY: 'Review content is empty.',
  REVIEW_NOT_YOURS: "Review must pertain to a business you've added.",
  SITE_CREDENTIALS_NOT_SET: 'Site credentials have not been set.',
  RESPOND_NOT_SUPPORTED: 'This operation is currently not supported for this site.',
  RESPONSE_ALREADY_EXISTS: 'A response already exists for this review.',
  RESPONSE_IN_PROGRESS: 'There is already a response submission in progress.',
  RESPONSE_ALREADY_SUBMITTED: 'A response has already been submitted successfully.',
  RESPONSE_PREVIOUSLY_FAILED: 'A response has been submitted previously, which failed.',
} as const;
type RefusalCode = keyof typeof UPSTREAM_TEXT;

type OwnedReview = Review & { businessId: number; hasCreds: boolean };

/** A sandbox, a warehouse that has synced account-1 once, and the reviews it serves. */
interface ResponseWorld {
  sandbox: RunningSandbox;
  warehouse: TestWarehouse;
  api: ApiClient;
  cli: WorkflowRunner;
  reviews: OwnedReview[];
  close(): Promise<void>;
}

interface Submitted {
  review: OwnedReview;
  requestId: string;
  run: CommandRun;
}

const respondArgs = (review: { businessId: number; id: string }, extra: string[] = []) => [
  'api',
  'reviews',
  'respond',
  String(review.businessId),
  review.id,
  ...(extra.includes('--content') ? [] : ['--content', 'Thank you for your review!']),
  ...(extra.includes('--account') ? [] : ['--account', 'account-1']),
  ...extra,
];

const WORLD = { seed: 23, accounts: 2, businessesPerAccount: 8 };

/**
 * Account-1's reviews as the sandbox serves them on day 0, and a warehouse that has synced
 * account-1 once (the reviews are in the warehouse, as after any nightly run).
 */
async function syncAccountOne(warehouse: TestWarehouse): Promise<OwnedReview[]> {
  const sandbox = await startSandbox({ ...WORLD, port: 0 });
  const api = testApiClient();
  try {
    const credential = sandbox.credentials[0]!;
    const reviews: OwnedReview[] = [];
    for (const business of (await listBusinesses(api, credential)).records) {
      const listings = (await listListings(api, credential, business.id)).records;
      const creds = new Map(listings.map((l) => [l.siteName, l.hasSiteCredentials]));
      for (const review of (await listReviews(api, credential, business.id, 'review')).records) {
        reviews.push({
          ...review,
          businessId: business.id,
          hasCreds: creds.get(review.siteName) === true,
        });
      }
    }
    expect((await sync(warehouse, api, [credential])).status).toBe('succeeded');
    return reviews;
  } finally {
    await api.close();
    await sandbox.close();
  }
}

/**
 * That sync, once per backend for the file (made when a test first needs it). Every test
 * responds to reviews, which changes the sandbox's world (the responses, the requests it
 * completes or fails) and the warehouse's rows: each world is a sandbox of its own, the
 * same world on the same day (a sync only reads it), and a copy of the synced warehouse.
 */
const syncedAccountOne = new Map(
  testBackends.map((backend) => [
    backend,
    sharedBuild(backend, syncAccountOne, { readers: false }),
  ]),
);

async function openResponseWorld(backend: TestBackend): Promise<ResponseWorld> {
  const synced = await syncedAccountOne.get(backend)!();
  const sandbox = await startSandbox({ ...WORLD, port: 0 });
  const warehouse = await synced.copy();
  const api = testApiClient();
  const cli = workflowRunner(warehouse, sandbox.credentials);
  const reviews = synced.built;
  return {
    sandbox,
    warehouse,
    api,
    cli,
    reviews,
    close: async () => {
      await api.close();
      await warehouse.close();
      await sandbox.close();
    },
  };
}

/**
 * Enough accepted requests for both outcomes to occur (seed 23 fails some and completes
 * others), and no more: each response re-syncs its business.
 */
const REQUESTS = 8;

/** Responds to respondable reviews without a response until REQUESTS are accepted. */
async function submitFresh(world: ResponseWorld): Promise<Submitted[]> {
  const submitted: Submitted[] = [];
  const fresh = world.reviews.filter((r) => r.canRespond && r.responses.length === 0 && r.hasCreds);
  for (const review of fresh) {
    if (submitted.length === REQUESTS) break;
    const run = await world.cli.run(respondArgs(review));
    if (run.code !== 0) continue;
    submitted.push({ review, requestId: JSON.parse(run.stdout).requestId, run });
  }
  return submitted;
}

/** Sandbox days go by with a sync each, until every request has completed or failed. */
async function settle(world: ResponseWorld): Promise<SyncResult[]> {
  const results: SyncResult[] = [];
  for (let day = 0; day < 5; day++) {
    world.sandbox.advanceDays(1);
    results.push(await sync(world.warehouse, world.api, [world.sandbox.credentials[0]!]));
  }
  return results;
}

/** The refusal's two lines: code and upstream text verbatim, then what to do. */
function expectRefusal(run: CommandRun, code: RefusalCode): void {
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
  expect(run.stderr).toBe(
    `listings-sync: ${code}: ${UPSTREAM_TEXT[code]}\n  ${RESPOND_ADVICE[code]}\n`,
  );
}

describe.each(testBackends)('review responses (%s)', (backend) => {
  // Each test of this block starts from a sandbox and warehouse of its own.
  let world: ResponseWorld;
  let warehouse: TestWarehouse;
  let sandbox: RunningSandbox;
  let api: ApiClient;
  let reviews: OwnedReview[];
  const respond = (review: { businessId: number; id: string }, extra: string[] = []) =>
    world.cli.run(respondArgs(review, extra));

  beforeEach(async () => {
    world = await openResponseWorld(backend);
    ({ warehouse, sandbox, api, reviews } = world);
  });
  afterEach(async () => {
    await world?.close();
  });

  it('shows each refusal of an unusable review with its own advice, and records nothing', async () => {
    const some = reviews[0]!;
    expectRefusal(
      await respond({ businessId: some.businessId, id: crypto.randomUUID() }),
      'REVIEW_ID_INVALID',
    );
    expectRefusal(await respond(some, ['--content', '   ']), 'REVIEW_CONTENT_EMPTY');
    expectRefusal(await respond(some, ['--account', 'account-2']), 'REVIEW_NOT_YOURS');
    const noCreds = reviews.find((r) => !r.hasCreds)!;
    expectRefusal(await respond(noCreds), 'SITE_CREDENTIALS_NOT_SET');
    const unsupported = reviews.find(
      (r) => r.hasCreds && !['Facebook', 'Google', 'Yelp'].includes(r.siteName),
    )!;
    expectRefusal(await respond(unsupported), 'RESPOND_NOT_SUPPORTED');
    // can_respond is false on an answered review (it agrees with op 9): pick by site.
    const answered = reviews.filter(
      (r) =>
        ['Facebook', 'Google', 'Yelp'].includes(r.siteName) && r.responses.length > 0 && r.hasCreds,
    );
    let exists: CommandRun | undefined;
    for (const review of answered) {
      const run = await respond(review);
      if (run.stderr.includes('RESPONSE_ALREADY_EXISTS')) {
        exists = run;
        break;
      }
    }
    expect(exists).toBeDefined();
    expectRefusal(exists!, 'RESPONSE_ALREADY_EXISTS');
    const rows = await warehouse.db.selectFrom('review_response_requests').selectAll().execute();
    expect(rows).toEqual([]);
  });

  it('records each accepted response, and refuses a second one while it is in progress', async () => {
    const submitted = await submitFresh(world);
    for (const { review, requestId, run } of submitted) {
      const out = JSON.parse(run.stdout);
      expect(out).toMatchObject({
        businessId: review.businessId,
        reviewId: review.id,
        status: 'Created',
        requestId,
      });
      expect(run.stderr).toContain(`warehouse: business ${review.businessId} synced again`);
    }
    expect(submitted).toHaveLength(REQUESTS);
    const rows = await warehouse.db
      .selectFrom('review_response_requests')
      .selectAll()
      .orderBy('submitted_at')
      .execute();
    expect(rows.map((r) => r.request_id).sort()).toEqual(submitted.map((s) => s.requestId).sort());
    expect(rows.every((r) => r.status === 'Created' && r.completed_at === null)).toBe(true);
    // submitted_at is the upstream's time (its Date header, to the second): find by id.
    expect(rows.find((r) => r.request_id === submitted[0]!.requestId)).toMatchObject({
      account_name: 'account-1',
      content: 'Thank you for your review!',
      review_id: submitted[0]!.review.id,
    });
    expectRefusal(await respond(submitted[0]!.review), 'RESPONSE_IN_PROGRESS');
  });

  it('follows every request across sandbox days to Completed or Failed, recording each change', async () => {
    const submitted = await submitFresh(world);
    expect(submitted).toHaveLength(REQUESTS);
    const credential = sandbox.credentials[0]!;
    sandbox.advanceDays(1);
    const day1 = await sync(warehouse, api, [credential]);
    expect(day1.stats.responseRequests).toMatchObject({
      checked: submitted.length,
      changed: submitted.length,
    });
    const inProgress = await warehouse.db
      .selectFrom('review_response_requests')
      .select('status')
      .execute();
    expect(new Set(inProgress.map((r) => r.status))).toEqual(new Set(['In Progress']));

    let completed = 0;
    let failed = 0;
    for (let day = 0; day < 4; day++) {
      sandbox.advanceDays(1);
      const result = await sync(warehouse, api, [credential]);
      completed += result.stats.responseRequests.completed;
      failed += result.stats.responseRequests.failed;
    }
    expect(completed + failed).toBe(submitted.length);
    expect(completed).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);

    const rows = await warehouse.db.selectFrom('review_response_requests').selectAll().execute();
    expect(rows.every((r) => r.completed_at instanceof Date)).toBe(true);
    for (const row of rows) {
      const events = await warehouse.db
        .selectFrom('review_response_request_events')
        .selectAll()
        .where('request_id', '=', row.request_id)
        .orderBy('observed_at')
        .execute();
      const path = events.map((e) => e.status);
      expect(path.slice(0, 2)).toEqual(['Created', 'In Progress']);
      expect(path.at(-1)).toBe(row.status);
      expect(['Completed', 'Failed']).toContain(row.status);
      expect(events.slice(1).every((e, i) => e.previous_status === path[i])).toBe(true);
    }

    // A failed request raised one alert, through the outbox.
    const failedRows = rows.filter((r) => r.status === 'Failed');
    const alerts = await warehouse.db
      .selectFrom('alerts')
      .selectAll()
      .where('kind', '=', 'review_response_failed')
      .execute();
    expect(alerts.map((a) => a.dedupe_key).sort()).toEqual(
      failedRows.map((r) => `review_response_failed:${r.request_id}`).sort(),
    );
    expect(alerts[0]).toMatchObject({
      status: 'Failed',
      account_name: 'account-1',
      listing_id: null,
    });
    expect(['Facebook', 'Google', 'Yelp']).toContain(alerts[0]!.site_name);

    // Nothing open: the next sync polls nothing and raises nothing again.
    sandbox.advanceDays(1);
    const after = await sync(warehouse, api, [credential]);
    expect(after.stats.responseRequests.checked).toBe(0);
    expect(
      await warehouse.db
        .selectFrom('alerts')
        .select('alert_id')
        .where('kind', '=', 'review_response_failed')
        .execute(),
    ).toHaveLength(alerts.length);
  });
});

describe.each(testBackends)('review responses, once every request has settled (%s)', (backend) => {
  // These tests only read the settled state (or are refused), so they share one world.
  let world: ResponseWorld;
  let warehouse: TestWarehouse;
  let cli: WorkflowRunner;
  let reviews: OwnedReview[];
  let submitted: Submitted[];
  const respond = (review: { businessId: number; id: string }, extra: string[] = []) =>
    world.cli.run(respondArgs(review, extra));

  beforeAll(async () => {
    world = await openResponseWorld(backend);
    ({ warehouse, cli, reviews } = world);
    submitted = await submitFresh(world);
    expect(submitted).toHaveLength(REQUESTS);
    await settle(world);
  });
  afterAll(async () => {
    await world?.close();
  });

  it('delivers the failed-response alert to the sinks with its own text and body', async () => {
    const sent: AlertForDelivery[] = [];
    const dispatcher = createAlertDispatcher({
      db: warehouse.db,
      sinks: [
        { name: 'slack', grouping: 'each', send: async (alerts) => void sent.push(...alerts) },
      ],
      logger: silentLogger(),
    });
    await dispatcher.dispatch();
    const failed = sent.filter((a) => a.kind === 'review_response_failed');
    expect(failed.length).toBeGreaterThan(0);
    const alert = failed[0]!;
    const request = await warehouse.db
      .selectFrom('review_response_requests')
      .selectAll()
      .where('request_id', '=', alert.responseRequest!.requestId)
      .executeTakeFirstOrThrow();
    const text = slackMessage(alert).text;
    expect(text).toMatch(
      /^:x: A response to a review by .+ on \*(Facebook|Google|Yelp)\* for \*.+\* \*failed\* to post/,
    );
    expect(text).toContain('Response: "Thank you for your review!"');
    expect(text).toContain(
      `Request ${request.request_id}, review ${request.review_id}, business ${request.business_id}, account account-1`,
    );
    expect(alertWebhookBody(alert)).toMatchObject({
      kind: 'review_response_failed',
      dedupe_key: `review_response_failed:${request.request_id}`,
      business: { id: request.business_id },
      review_response: {
        request_id: request.request_id,
        review_id: request.review_id,
        content: 'Thank you for your review!',
        status: 'Failed',
      },
    });
  });

  it('refuses a response once the earlier one completed or failed', async () => {
    const rows = await warehouse.db.selectFrom('review_response_requests').selectAll().execute();
    const done = rows.find((r) => r.status === 'Completed')!;
    const failed = rows.find((r) => r.status === 'Failed')!;
    expectRefusal(
      await respond({ businessId: done.business_id, id: done.review_id }),
      'RESPONSE_ALREADY_SUBMITTED',
    );
    expectRefusal(
      await respond({ businessId: failed.business_id, id: failed.review_id }),
      'RESPONSE_PREVIOUSLY_FAILED',
    );
  });

  it('reads a request on demand with response-status', async () => {
    const { requestId } = submitted[0]!;
    const run = await cli.run([
      'api',
      'reviews',
      'response-status',
      requestId,
      '--account',
      'account-1',
    ]);
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(['Completed', 'Failed']).toContain(out.status);
    expect(out.history[0].status).toBe('Created');
    expect(out.history.at(-1).status).toBe(out.status);

    const unknown = await cli.run([
      'api',
      'reviews',
      'response-status',
      '424242',
      '--account',
      'account-1',
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('give --business-id and --review-id');
    const invalid = await cli.run([
      'api',
      'reviews',
      'response-status',
      '424242',
      '--business-id',
      String(reviews[0]!.businessId),
      '--review-id',
      reviews[0]!.id,
      '--account',
      'account-1',
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe('listings-sync: INVALID_REQUEST_ID: Invalid Request ID\n');
  });
});
