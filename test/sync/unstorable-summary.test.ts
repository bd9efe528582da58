/**
 * A business whose list entry (operation 1) holds a value the warehouse cannot store, a
 * NUL in its name, is still listed: that record is quarantined, and the business is
 * neither archived nor left behind. It syncs under the profile last stored; a listing
 * refused for the same NUL keeps its stored row, and the other listings and their alerts
 * commit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from './harness.ts';

describe.each(testBackends)('a listed business the warehouse cannot store (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let api: ApiClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 12, accounts: 1, businessesPerAccount: 2, port: 0 });
    warehouse = await createTestWarehouse(backend);
    api = testApiClient();
  });
  afterAll(async () => {
    await api?.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  /** The upstream's own view of a business's listings, read past the client. */
  async function upstream(path: string, init?: RequestInit): Promise<unknown> {
    const credential = sandbox.credentials[0]!;
    const query = new URLSearchParams({
      auth_token: credential.authToken,
      user_email: credential.userEmail,
    });
    const response = await fetch(`${sandbox.baseUrl}/api/v2${path}?${query}`, init);
    return ((await response.json()) as { result: unknown }).result;
  }

  async function statuses(businessId: number): Promise<Record<number, string>> {
    const listings = (await upstream(`/businesses/${businessId}/listings`)) as {
      id: number;
      status: string;
    }[];
    return Object.fromEntries(listings.map((l) => [l.id, l.status]));
  }

  async function stored(businessId: number): Promise<Record<number, string>> {
    const rows = await warehouse.db
      .selectFrom('listings')
      .select(['listing_id', 'status'])
      .where('business_id', '=', businessId)
      .where('removed_at', 'is', null)
      .execute();
    return Object.fromEntries(rows.map((r) => [Number(r.listing_id), r.status]));
  }

  it('quarantines the list entry; the business is not archived and its listings and alerts commit', async () => {
    const credential = sandbox.credentials[0]!;
    expect((await sync(warehouse, api, [credential])).status).toBe('succeeded');
    const businesses = (await upstream('/businesses')) as { id: number; name: string }[];
    const target = businesses[1]!;
    const before = await stored(target.id);
    expect(before).toEqual(await statuses(target.id));

    // The sandbox, like the upstream, stores any text it is given.
    await upstream(`/businesses/${target.id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ business: { name: `${target.name}\u0000 (old)` } }),
    });
    // Days pass until one of its listings turns Inaccurate upstream.
    let days = 0;
    const turned = () =>
      statuses(target.id).then((now) =>
        Object.entries(now).some(([id, s]) => s === 'Inaccurate' && before[Number(id)] !== s),
      );
    while (!(await turned())) {
      sandbox.advanceDays(1);
      days += 1;
      expect(days).toBeLessThan(60);
    }

    const result = await sync(warehouse, api, [credential]);
    expect(result.status).toBe('partial');

    const quarantined = await warehouse.db
      .selectFrom('quarantine')
      .select(['stream', 'reason'])
      .execute();
    expect(quarantined).toContainEqual({
      stream: 'businesses',
      reason: expect.stringMatching(/name: contains a NUL character/),
    });
    const business = await warehouse.db
      .selectFrom('businesses')
      .select(['name', 'archived_at'])
      .where('business_id', '=', target.id)
      .executeTakeFirstOrThrow();
    expect(business).toEqual({ name: target.name, archived_at: null });
    // A listing that shows the name carries the NUL too: that record is quarantined and its
    // stored row kept (not marked removed); every other listing commits, with its alert.
    const listings = (await upstream(`/businesses/${target.id}/listings`)) as {
      id: number;
      status: string;
      name?: string;
    }[];
    const refused = listings.filter((l) => l.name?.includes('\u0000')).map((l) => l.id);
    const readable = listings.filter((l) => !refused.includes(l.id));
    expect(refused.length).toBeGreaterThan(0);
    expect(readable.length).toBeGreaterThan(0);
    const expected = Object.fromEntries([
      ...refused.map((id) => [id, before[id]]),
      ...readable.map((l) => [l.id, l.status]),
    ]);
    expect(await stored(target.id)).toEqual(expected);
    const newlyInaccurate = readable
      .filter((l) => l.status === 'Inaccurate' && before[l.id] !== 'Inaccurate')
      .map((l) => Number(l.id))
      .sort();
    const alerts = await warehouse.db
      .selectFrom('alerts')
      .select('listing_id')
      .where('business_id', '=', target.id)
      .where('kind', '=', 'listing_inaccurate')
      .execute();
    expect(alerts.map((a) => Number(a.listing_id)).sort()).toEqual(newlyInaccurate);

    // A re-sync of another business (what every `api` write runs) is not made partial by
    // an entry outside its scope; one of this business still is.
    const other = businesses[0]!.id;
    expect((await sync(warehouse, api, [credential], { businessIds: [other] })).status).toBe(
      'succeeded',
    );
    expect((await sync(warehouse, api, [credential], { businessIds: [target.id] })).status).toBe(
      'partial',
    );
  });
});
