/**
 * `Invalid Request ID` when polling a review response request (operation 10) is
 * permanent: the request is closed as `Invalid`, and later runs neither poll it again
 * nor end `partial` because of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import {
  openResponseRequests,
  recordResponseRequest,
  responseRequestEvents,
} from '../../src/warehouse/runs/review-response-requests.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from './harness.ts';

describe.each(testBackends)('a response request the upstream does not know (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 2, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  it('is closed as Invalid and never makes a later run partial', async () => {
    const credential = sandbox.credentials[0]!;
    expect((await sync(warehouse, api, [credential])).status).toBe('succeeded');
    const review = await warehouse.db
      .selectFrom('reviews')
      .select(['review_id', 'business_id'])
      .where('category', '=', 'review')
      .limit(1)
      .executeTakeFirstOrThrow();
    await recordResponseRequest(warehouse.db, {
      requestId: '987654321',
      accountName: credential.name,
      businessId: review.business_id,
      reviewId: review.review_id,
      content: 'Thank you!',
      submittedAt: new Date('2026-01-01T00:00:00Z'),
    });

    const first = await sync(warehouse, api, [credential]);
    expect(first.status).toBe('succeeded');
    expect(first.stats.responseRequests).toMatchObject({ invalid: 1, errors: 0 });
    const row = await warehouse.db
      .selectFrom('review_response_requests')
      .select(['status', 'completed_at', 'last_error'])
      .where('request_id', '=', '987654321')
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('Invalid');
    expect(row.completed_at).toBeInstanceOf(Date);
    expect(row.last_error).toMatch(/Invalid Request ID/);
    expect(await openResponseRequests(warehouse.db, { accountName: credential.name })).toEqual([]);
    expect((await responseRequestEvents(warehouse.db, '987654321')).map((e) => e.status)).toEqual([
      'Created',
      'Invalid',
    ]);

    const polled = { ...sandbox.stats().byOperation['get_response_status'] };
    expect(Object.values(polled).reduce((a, b) => a + b, 0)).toBe(1);
    const second = await sync(warehouse, api, [credential]);
    expect(second.status).toBe('succeeded');
    expect(second.stats.responseRequests).toMatchObject({ invalid: 0, errors: 0, checked: 0 });
    expect({ ...sandbox.stats().byOperation['get_response_status'] }).toEqual(polled);
  });
});
