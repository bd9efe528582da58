/**
 * Run-wide limits and once-per-run work, against the sandbox over real HTTP:
 * - reference data: a credential that arrives while the first attempt is in flight waits
 *   for it, and when that attempt fails, a later credential's attempt writes it;
 * - businesses in flight: one limit across all credentials, not one per credential;
 * - the PostgreSQL pool is sized from that limit.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { poolOf } from '../../src/warehouse/driver/connection.ts';
import { openConfiguredWarehouse } from '../../src/warehouse/driver/open.ts';
import { testBackends } from '../helpers/database.ts';
import { count, sandboxSuite, sync } from './harness.ts';

/** A pass-through proxy that records the most businesses with a request in flight at once. */
async function startConcurrencyProbe(upstream: string) {
  const inFlight = new Map<string, number>();
  let most = 0;
  const server = createServer(async (request, response) => {
    const business = /^\/api\/v2\/businesses\/(\d+)\//.exec(request.url ?? '')?.[1];
    if (business) {
      inFlight.set(business, (inFlight.get(business) ?? 0) + 1);
      most = Math.max(most, inFlight.size);
    }
    try {
      const answer = await fetch(new URL(request.url ?? '/', upstream), {
        method: request.method ?? 'GET',
      });
      const text = await answer.text();
      response.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      });
      response.end(text);
    } finally {
      if (business) {
        const left = (inFlight.get(business) ?? 1) - 1;
        if (left === 0) inFlight.delete(business);
        else inFlight.set(business, left);
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    most: () => most,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(testBackends)('run limits (%s)', (backend) => {
  const suite = sandboxSuite({ seed: 31, accounts: 3, businessesPerAccount: 4 });

  it('reference data: when the first attempt fails, a waiting credential writes it', async () => {
    const warehouse = await suite.createWarehouse(backend);
    // Enough 500s to exhaust every retry of the first list_countries call (12 attempts).
    suite.sandbox.setFaults({
      script: Array.from({ length: 12 }, () => ({ kind: '500', operation: 'list_countries' })),
    });
    const result = await sync(warehouse, suite.api, suite.sandbox.credentials.slice(0, 2), {
      streams: ['reference'],
    });
    expect(await count(warehouse, 'countries')).toBeGreaterThan(0);
    expect(await count(warehouse, 'states')).toBeGreaterThan(0);
    expect(await count(warehouse, 'sub_categories')).toBeGreaterThan(0);
    // The failure was recovered within the run: nothing is missing, so nothing is partial.
    expect(result.status).toBe('succeeded');
  });

  it('businesses in flight: one limit across every credential', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const probe = await startConcurrencyProbe(suite.sandbox.baseUrl);
    try {
      // Latency keeps each business's requests open long enough to overlap.
      suite.sandbox.setFaults({ latencyMs: 15 });
      const credentials: Credential[] = suite.sandbox.credentials.map((c) => ({
        ...c,
        baseUrl: probe.url,
      }));
      const result = await sync(warehouse, suite.api, credentials, {
        streams: ['listings', 'reviews'],
        businessConcurrency: 8,
        overallBusinessConcurrency: 2,
      });
      expect(result.status).toBe('succeeded');
      expect(result.stats.businesses.synced).toBe(12);
      expect(probe.most()).toBe(2);
    } finally {
      await probe.close();
    }
  });

  it.runIf(backend === 'postgres')('sizes the pool from SYNC_CONCURRENCY', async () => {
    const warehouse = await suite.createWarehouse(backend);
    const url = `${warehouse.databaseUrl}?options=-csearch_path%3D${warehouse.searchPath}`;
    const opened = await openConfiguredWarehouse(
      loadConfig({ DATABASE_URL: url, SYNC_CONCURRENCY: '24' }),
    );
    try {
      expect(poolOf(opened.db)?.options.max).toBe(28);
    } finally {
      await opened.close();
    }
  });
});
