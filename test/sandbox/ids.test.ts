/**
 * Identifiers stay unique at scale: a warehouse keyed by them would otherwise see two
 * upstream rows fight over one key (a response id once repeated among ~20,000).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { call } from './http.ts';

describe('sandbox identifiers', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 42, accounts: 2, businessesPerAccount: 150, port: 0 });
    sandbox.advanceDays(20);
  });
  afterAll(() => sandbox?.close());

  it('never repeats a review or response id across businesses', async () => {
    const seen = { review: new Set<string>(), response: new Set<string>() };
    let responses = 0;
    let reviews = 0;
    for (const credential of sandbox.credentials) {
      const list = await call(credential, 'GET', '/businesses.json');
      for (const business of list.json.result as { id: number }[]) {
        const [review, social] = await Promise.all([
          call(credential, 'GET', `/businesses/${business.id}/reviews.json`, {
            query: { category: 'review' },
          }),
          call(credential, 'GET', `/businesses/${business.id}/reviews.json`, {
            query: { category: 'social' },
          }),
        ]);
        for (const body of [review.json, social.json]) {
          for (const items of Object.values(
            body.result as Record<string, { id: string; responses: { id: string }[] }[]>,
          )) {
            for (const item of items) {
              reviews += 1;
              seen.review.add(item.id);
              for (const response of item.responses) {
                responses += 1;
                seen.response.add(response.id);
              }
            }
          }
        }
      }
    }
    expect(responses).toBeGreaterThan(3000);
    expect(seen.review.size).toBe(reviews);
    expect(seen.response.size).toBe(responses);
  });
});
