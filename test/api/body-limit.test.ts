/**
 * Upstream bodies are bounded (LISTINGS_MAX_BODY_BYTES): a body past the limit fails its
 * call as soon as the limit is crossed, without buffering the rest, and is not retried;
 * in a sync it fails that business's stream and the run goes on to end `partial`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createConfiguredApiClient } from '../../src/api/client.ts';
import { ApiError, createApiClient, listBusinesses } from '../../src/api/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';

const MiB = 1024 * 1024;

/**
 * A server whose one answer is a JSON body that never ends (the sandbox serves only
 * bodies it can build): 64 KiB chunks of one string field, for as long as the client reads.
 */
async function startEndlessBody(): Promise<{
  url: string;
  requests: () => number;
  bytesWritten: () => number;
  close: () => Promise<void>;
}> {
  let requests = 0;
  let bytes = 0;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server = http.createServer((_request, response) => {
    requests += 1;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"success":true,"result":[{"id":1,"name":"');
    const pump = () => {
      while (!response.destroyed) {
        bytes += chunk.length;
        if (!response.write(chunk)) {
          response.once('drain', pump);
          return;
        }
      }
    };
    response.on('close', () => response.removeAllListeners('drain'));
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    bytesWritten: () => bytes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('upstream body limit (client)', () => {
  it('fails a call whose body never ends at the limit, naming the limit and its setting, without retrying', async () => {
    const upstream = await startEndlessBody();
    const api = createApiClient({ maxBodyBytes: MiB, retry: { baseDelayMs: 1, maxDelayMs: 2 } });
    try {
      const credential = {
        name: 'endless',
        baseUrl: upstream.url,
        authToken: 'tok-endless-secret',
        userEmail: 'ops@example.com',
      };
      const error = await listBusinesses(api, credential).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe('RESPONSE_TOO_LARGE');
      expect((error as ApiError).retryable).toBe(false);
      expect((error as ApiError).message).toContain(
        'larger than 1048576 bytes, the limit set by LISTINGS_MAX_BODY_BYTES',
      );
      expect((error as ApiError).message).not.toContain('tok-endless-secret');
      // One request: a body that is too large now is too large on a retry.
      expect(upstream.requests()).toBe(1);
      // The client stopped reading near the limit: the server could not push 64 MiB in.
      expect(upstream.bytesWritten()).toBeLessThan(64 * MiB);
    } finally {
      await api.close();
      await upstream.close();
    }
  });

  it('accepts a body under the limit', async () => {
    const sandbox = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 2 });
    // A list of two businesses is about 400 bytes.
    const api = createApiClient({ maxBodyBytes: 4096 });
    try {
      const list = await listBusinesses(api, sandbox.credentials[0]!);
      expect(list.records).toHaveLength(2);
    } finally {
      await api.close();
      await sandbox.close();
    }
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => createApiClient({ maxBodyBytes: 0 })).toThrow(
      'maxBodyBytes must be a positive integer',
    );
  });
});

describe('LISTINGS_MAX_BODY_BYTES (configuration)', () => {
  it('defaults to 16 MiB and names the rule when out of range', () => {
    expect(loadConfig({}).upstreamMaxBodyBytes).toBe(16 * MiB);
    expect(loadConfig({ LISTINGS_MAX_BODY_BYTES: '8192' }).upstreamMaxBodyBytes).toBe(8192);
    expect(() => loadConfig({ LISTINGS_MAX_BODY_BYTES: '10' })).toThrow(
      'LISTINGS_MAX_BODY_BYTES must be a whole number from 1024 to 1073741824 (got "10")',
    );
  });
});

describe.each(testBackends)('upstream body limit in a sync (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;

  beforeAll(async () => {
    // Three businesses: their list, profiles, rankings, keywords and the reference data are
    // each under 4 KiB; their listings and reviews are 12-23 KiB.
    sandbox = await startSandbox({ seed: 1, accounts: 1, businessesPerAccount: 3 });
    warehouse = await createTestWarehouse(backend);
  });
  afterEach(async () => {
    await truncateAll(warehouse);
  });
  afterAll(async () => {
    await warehouse?.close();
    await sandbox?.close();
  });

  it('fails the streams whose bodies are over the limit, writes the rest, and ends partial', async () => {
    const config = loadConfig({ LISTINGS_MAX_BODY_BYTES: '8192', LOG_LEVEL: 'silent' });
    const { logger, lines } = memoryLogger('warn');
    const api = createConfiguredApiClient(config, logger);
    try {
      const result = await runSync({
        warehouse,
        api,
        credentials: sandbox.credentials,
        logger,
        trigger: 'test',
      });
      expect(result.status).toBe('partial');
      expect(result.stats.businesses.failed).toBe(3);

      const counts = await sql<{ table: string; n: number }>`
        select 'businesses' as table, count(*)::int as n from businesses
        union all select 'keywords', count(*)::int from keywords
        union all select 'rank_observations', count(*)::int from rank_observations
        union all select 'countries', count(*)::int from countries
        union all select 'listings', count(*)::int from listings
        union all select 'reviews', count(*)::int from reviews`.execute(warehouse.db);
      const n = Object.fromEntries(counts.rows.map((r) => [r.table, r.n]));
      expect(n['businesses']).toBe(3);
      expect(n['keywords']).toBeGreaterThan(0);
      expect(n['rank_observations']).toBeGreaterThan(0);
      expect(n['countries']).toBeGreaterThan(0);
      expect(n['listings']).toBe(0);
      expect(n['reviews']).toBe(0);

      const runs = await warehouse.db.selectFrom('sync_runs').select(['status']).execute();
      expect(runs).toEqual([{ status: 'partial' }]);

      const failures = lines()
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter(
          (record) => record['msg'] === 'stream failed; its stored rows are left as they were',
        );
      // Every business's listings and reviews, and no other stream.
      expect(result.stats.streamFailures).toBe(failures.length);
      expect(failures.filter((f) => f['stream'] === 'listings')).toHaveLength(3);
      expect(failures.filter((f) => f['stream'] === 'reviews').length).toBeGreaterThanOrEqual(3);
      expect(new Set(failures.map((f) => f['stream']))).toEqual(new Set(['listings', 'reviews']));
      for (const failure of failures) {
        const err = failure['err'] as { code?: string; message?: string };
        expect(err.code).toBe('RESPONSE_TOO_LARGE');
        expect(err.message).toContain('the limit set by LISTINGS_MAX_BODY_BYTES');
      }
    } finally {
      await api.close();
    }
  });
});
