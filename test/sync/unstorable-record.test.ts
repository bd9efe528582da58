/**
 * End to end: the sandbox serves a review whose content holds a NUL character (a value
 * PostgreSQL's text cannot store). The sandbox never generates one, so a small proxy in
 * front of it rewrites that one review on the wire; everything else is the sandbox's own
 * answer over real HTTP. The run ends `partial`, the review is quarantined with a reason
 * naming its field, and a listing of the same business that turned Inaccurate that day
 * still raises its alert.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { type ApiClient, listListings } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from './harness.ts';

/** Forwards to the sandbox; one review (category `review`) of `target.businessId` gets a NUL. */
async function startNulProxy(upstream: string, target: { businessId: number | null }) {
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const answer = await fetch(new URL(request.url ?? '/', upstream), {
      method: request.method ?? 'GET',
      headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
      ...(body.length > 0 ? { body } : {}),
    });
    let text = await answer.text();
    const reviews = /^\/api\/v2\/businesses\/(\d+)\/reviews\.json\?.*category=review\b/.exec(
      request.url ?? '',
    );
    if (reviews && Number(reviews[1]) === target.businessId && answer.ok) {
      const json = JSON.parse(text) as { result: Record<string, Array<{ content: string }>> };
      const first = Object.values(json.result).find((list) => list.length > 0)?.[0];
      if (first) first.content = `before\u0000after`;
      text = JSON.stringify(json);
    }
    response.writeHead(answer.status, { 'content-type': 'application/json' });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(testBackends)('a record the database cannot store (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let proxy: Awaited<ReturnType<typeof startNulProxy>>;
  let warehouse: TestWarehouse;
  let api: ApiClient;
  const target: { businessId: number | null } = { businessId: null };

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 23, accounts: 1, businessesPerAccount: 6, port: 0 });
    proxy = await startNulProxy(sandbox.baseUrl, target);
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await proxy?.close();
    await sandbox?.close();
  });

  it('quarantines the review, commits the rest of its business and raises the alert', async () => {
    const credential: Credential = { ...sandbox.credentials[0]!, baseUrl: proxy.url };
    expect((await sync(warehouse, api, [credential])).status).toBe('succeeded');

    // Move the sandbox's clock until a listing turns Inaccurate; that business is the target.
    let newlyInaccurate: { businessId: number; listingId: number } | undefined;
    for (let day = 0; day < 30 && !newlyInaccurate; day++) {
      sandbox.advanceDays(1);
      const stored = await warehouse.db
        .selectFrom('listings')
        .select(['business_id', 'listing_id', 'status'])
        .execute();
      for (const row of stored) {
        if (row.status === 'Inaccurate') continue;
        const served = await listListings(api, credential, row.business_id);
        const now = served.records.find((l) => l.id === row.listing_id);
        if (now?.status === 'Inaccurate') {
          newlyInaccurate = { businessId: row.business_id, listingId: row.listing_id };
          break;
        }
      }
    }
    expect(newlyInaccurate).toBeDefined();
    const { businessId, listingId } = newlyInaccurate!;
    target.businessId = businessId;

    const result = await sync(warehouse, api, [credential]);

    expect(result.status).toBe('partial');
    expect(result.stats.quarantined).toBe(1);
    expect(result.stats.businesses.failed).toBe(0);
    const quarantined = await warehouse.db
      .selectFrom('quarantine')
      .select(['business_id', 'stream', 'reason', 'run_id'])
      .execute();
    expect(quarantined).toEqual([
      {
        business_id: businessId,
        stream: 'reviews',
        reason: expect.stringMatching(/^content: contains a NUL character/),
        run_id: result.runId,
      },
    ]);
    const { rows } = await sql<{ content: string }>`
      select payload->>'content' as content from quarantine`.execute(warehouse.db);
    expect(rows[0]?.content).toBe('before\ufffdafter');
    const alerts = await warehouse.db
      .selectFrom('alerts')
      .select(['business_id', 'listing_id', 'status'])
      .where('business_id', '=', businessId)
      .execute();
    expect(alerts).toContainEqual({
      business_id: businessId,
      listing_id: listingId,
      status: 'Inaccurate',
    });
    const listing = await warehouse.db
      .selectFrom('listings')
      .select('status')
      .where('business_id', '=', businessId)
      .where('listing_id', '=', listingId)
      .executeTakeFirstOrThrow();
    expect(listing.status).toBe('Inaccurate');
  });
});
