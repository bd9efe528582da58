/**
 * The volume guard on the business list (docs/warehouse.md, "How removals work"), and the
 * archive step's account check, against the sandbox over real HTTP:
 * - a list that answers `success: true` with `[]`, or that collapses, archives nothing on
 *   first sight, raises `volume_drop`, ends the run `partial` and leaves the account unsynced
 *   for `sync_stale`; the next run that reads the same list confirms it and archives;
 * - a business that moved to another credential in the same run is not archived by the
 *   credential it left, whether that one's archive step runs before the move is written
 *   or after (credentials run side by side).
 * The empty list is the sandbox's `empty` answer fault; the collapsed and moved lists come
 * from a small proxy in front of the sandbox that cuts entries out of the list answer and
 * holds answers back to order the two credentials. The order of the two credentials'
 * statements, which no upstream answer can fix, is held by a hook on the warehouse's
 * statements (`aroundStatements`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CompiledQuery, type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { raiseSyncHealthAlerts } from '../../src/alerts/kinds/sync-health.ts';
import type { Credential } from '../../src/api/index.ts';
import { type ApiClient, createApiClient } from '../../src/api/index.ts';
import { parseAlertRules } from '../../src/config/alert-rules.ts';
import { silentLogger } from '../../src/log.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { testBackends } from '../helpers/database.ts';
import { count, sync, worldPerTest } from './harness.ts';

const WORLD = { seed: 41, accounts: 1, businessesPerAccount: 4, startDate: '2026-03-01' };

/** 03:00 UTC on day `n` of March 2026: one nightly run per day. */
function night(n: number): Date {
  return new Date(Date.UTC(2026, 2, n, 3));
}

/** What the proxy sees of a request: the business list, or a read of one business. */
interface ProxiedRequest {
  list: boolean;
  businessId: number | null;
}

/**
 * Forwards to the sandbox. `keep` cuts every other entry out of the business list answer
 * (null: the answer as it is); `gate` is awaited before a request is forwarded.
 */
async function startListProxy(upstream: string) {
  const proxy = {
    url: '',
    keep: null as ReadonlySet<number> | null,
    gate: (_request: ProxiedRequest): Promise<void> | void => {},
    close: () => Promise.resolve(),
  };
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://proxy').pathname;
    const list = request.method === 'GET' && /^\/api\/v2\/businesses(\.json)?$/.test(path);
    const business = /^\/api\/v2\/businesses\/(\d+)/.exec(path)?.[1];
    await proxy.gate({ list, businessId: business ? Number(business) : null });
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const answer = await fetch(new URL(request.url ?? '/', upstream), {
      method: request.method ?? 'GET',
      headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
      ...(body.length > 0 ? { body } : {}),
    });
    let text = await answer.text();
    const keep = proxy.keep;
    if (list && keep && answer.ok) {
      const json = JSON.parse(text) as { success: boolean; result: { id: number }[] };
      text = JSON.stringify({ ...json, result: json.result.filter((b) => keep.has(b.id)) });
    }
    response.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return proxy;
}

/**
 * A client that waits for a held answer: the proxy holds some for as long as the other
 * credential takes, which must not read as a silent upstream (the harness client gives up
 * after 2 s of silence).
 */
function patientApiClient(): ApiClient {
  return createApiClient({
    concurrency: 16,
    accountConcurrency: 8,
    timeouts: { connectMs: 2000, headersMs: 60_000, bodyMs: 60_000 },
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 20, maxRetryAfterMs: 5000 },
    logger: silentLogger(),
  });
}

/**
 * Runs `around` for each statement `db` runs outside a transaction (its own executor;
 * a transaction's statements are not seen), with the statement and a `run` that executes
 * it: the test orders two credentials' statements by when it calls `run`.
 */
function aroundStatements(
  db: Kysely<Database>,
  around: (statement: CompiledQuery, run: () => Promise<unknown>) => Promise<unknown>,
): () => void {
  const executor = db.getExecutor() as unknown as {
    executeQuery: (statement: CompiledQuery, ...rest: unknown[]) => Promise<unknown>;
  };
  const original = executor.executeQuery;
  executor.executeQuery = (statement, ...rest) =>
    around(statement, () => original.call(executor, statement, ...rest));
  return () => {
    executor.executeQuery = original;
  };
}

/** A promise and the function that resolves it. */
function signal() {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe.each(testBackends)('the volume guard on the business list (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  const credential = () => world.sandbox.credentials[0] as Credential;
  const syncNight = (n: number, extra: Parameters<typeof sync>[3] = {}) =>
    sync(world.warehouse, world.api, world.sandbox.credentials, { now: () => night(n), ...extra });
  const liveBusinesses = () => count(world.warehouse, 'businesses', sql`archived_at is null`);

  const volumeDrops = () =>
    world.warehouse.db
      .selectFrom('alerts')
      .select([
        'account_name',
        'business_id',
        'previous_status',
        'status',
        'details',
        'dedupe_key',
        'run_id',
      ])
      .where('kind', '=', 'volume_drop')
      .orderBy('alert_id')
      .execute();

  const account = (name = credential().name) =>
    world.warehouse.db
      .selectFrom('accounts')
      .select(['removals_held', 'last_synced_at'])
      .where('name', '=', name)
      .executeTakeFirstOrThrow();

  it('an empty list archives nothing on first sight, raises volume_drop and ends partial; the next run that reads it again archives', async () => {
    const name = credential().name;
    expect((await syncNight(1)).status).toBe('succeeded');
    expect(await liveBusinesses()).toBe(4);

    world.sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_businesses' }] });
    const first = await syncNight(2);
    expect(first.status).toBe('partial');
    expect(first.stats.credentials).toEqual([
      expect.objectContaining({
        name,
        status: 'partial',
        businesses: 0,
        listHeld: { stored: 4, answered: 0, removing: 4 },
        error: expect.stringContaining('business list answered 0 of the 4 live businesses'),
      }),
    ]);
    expect(first.error).toContain(`credential "${name}": its business list answered 0`);
    expect(first.stats.businesses.archived).toBe(0);
    expect(first.stats.removalsHeld).toBe(1);
    expect(await liveBusinesses()).toBe(4);
    expect(await volumeDrops()).toEqual([
      {
        account_name: name,
        business_id: null,
        previous_status: '4',
        status: '0',
        details: { stream: 'businesses', list: 'businesses', stored: 4, answered: 0, removing: 4 },
        dedupe_key: `volume_drop:account:${name}:businesses:2026-03-02`,
        run_id: first.runId,
      },
    ]);
    // The account was not synced this night: its last sync stays the first night's.
    expect(await account()).toEqual({
      removals_held: {
        businesses: {
          run_id: first.runId,
          held_at: night(2).toISOString(),
          stored: 4,
          answered: 0,
          removing: 4,
        },
      },
      last_synced_at: night(1),
    });
    const row = await world.warehouse.db
      .selectFrom('sync_runs')
      .select('status')
      .where('run_id', '=', first.runId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('partial');

    // The next night answers `[]` again: confirmed, every business of the account is archived.
    world.sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_businesses' }] });
    const second = await syncNight(3);
    expect(second.status).toBe('succeeded');
    expect(second.stats.businesses.archived).toBe(4);
    expect(second.stats.removalsHeld).toBe(0);
    expect(
      await count(world.warehouse, 'businesses', sql`archived_at = ${night(3).toISOString()}`),
    ).toBe(4);
    expect(await account()).toEqual({ removals_held: null, last_synced_at: night(3) });
    expect(await volumeDrops()).toHaveLength(1);
  });

  it('sync_stale still fires for an account whose list was held', async () => {
    const name = credential().name;
    await syncNight(1);
    // The first night's run ended 30 hours before the moment the rule is asked about.
    const now = new Date();
    const lastSuccess = new Date(now.getTime() - 30 * 3_600_000);
    await world.warehouse.db
      .updateTable('sync_runs')
      .set({ finished_at: lastSuccess })
      .where('status', '=', 'succeeded')
      .execute();
    world.sandbox.setFaults({ script: [{ kind: 'empty', operation: 'list_businesses' }] });
    expect((await syncNight(2)).status).toBe('partial');

    const rules = parseAlertRules({ rules: { sync_stale: { enabled: true, hours: 26 } } }, 'test');
    expect(
      await raiseSyncHealthAlerts(world.warehouse.db, rules, {
        now,
        accounts: [name],
        watchingSince: now,
      }),
    ).toBe(1);
    const stale = await world.warehouse.db
      .selectFrom('alerts')
      .select(['account_name', 'dedupe_key', 'details'])
      .where('kind', '=', 'sync_stale')
      .execute();
    expect(stale).toEqual([
      {
        account_name: name,
        dedupe_key: `sync_stale:${name}:${lastSuccess.toISOString()}`,
        details: { lastSuccessAt: lastSuccess.toISOString(), hours: 26 },
      },
    ]);
  });

  it('a collapsing list is held, a list that comes back clears the hold; one business leaving, or any list with the rule off, archives at once', async () => {
    const proxy = await startListProxy(world.sandbox.baseUrl);
    try {
      const proxied = [{ ...credential(), baseUrl: proxy.url }];
      const syncProxied = (n: number, extra: Parameters<typeof sync>[3] = {}) =>
        sync(world.warehouse, world.api, proxied, { now: () => night(n), ...extra });
      await syncProxied(1);
      const ids = (
        await world.warehouse.db
          .selectFrom('businesses')
          .select('business_id')
          .orderBy('business_id')
          .execute()
      ).map((r) => Number(r.business_id));
      expect(ids).toHaveLength(4);

      // One of four answered: three would go (more than half, and at least three).
      proxy.keep = new Set(ids.slice(0, 1));
      const collapsed = await syncProxied(2);
      expect(collapsed.status).toBe('partial');
      expect(collapsed.stats.credentials[0]?.listHeld).toEqual({
        stored: 4,
        answered: 1,
        removing: 3,
      });
      expect(await liveBusinesses()).toBe(4);
      expect((await volumeDrops()).map((a) => [a.previous_status, a.status])).toEqual([['4', '1']]);

      // The list comes back whole: nothing was lost, and the hold is over.
      proxy.keep = null;
      const back = await syncProxied(3);
      expect(back.status).toBe('succeeded');
      expect(back.stats.businesses.archived).toBe(0);
      expect(await liveBusinesses()).toBe(4);
      expect((await account()).removals_held).toBeNull();

      // One business leaving is no drop: archived at once, as always.
      proxy.keep = new Set(ids.slice(1));
      const one = await syncProxied(4);
      expect(one.status).toBe('succeeded');
      expect(one.stats.businesses.archived).toBe(1);
      expect(await liveBusinesses()).toBe(3);
      expect(await volumeDrops()).toHaveLength(1);

      // With the volume_drop rule off, nothing is held: an empty list archives at once.
      const off = parseAlertRules({ rules: { volume_drop: { enabled: false } } }, 'off');
      proxy.keep = new Set();
      const empty = await syncProxied(5, { alertRules: off });
      expect(empty.status).toBe('succeeded');
      expect(empty.stats.businesses.archived).toBe(3);
      expect(await liveBusinesses()).toBe(0);
      expect(await volumeDrops()).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('shards of one night each hold their own part: neither confirms the other', async () => {
    const name = credential().name;
    await syncNight(1);
    world.sandbox.setFaults({
      script: [
        { kind: 'empty', operation: 'list_businesses' },
        { kind: 'empty', operation: 'list_businesses' },
      ],
    });
    const zero = await syncNight(2, { shard: { index: 0, count: 2 } });
    const one = await syncNight(2, { shard: { index: 1, count: 2 } });
    expect([zero.status, one.status]).toEqual(['partial', 'partial']);
    expect(await liveBusinesses()).toBe(4);
    const held = (await account()).removals_held as Record<string, { run_id: string }>;
    expect(Object.keys(held).sort()).toEqual(['businesses:0/2', 'businesses:1/2']);
    expect(held['businesses:0/2']?.run_id).toBe(zero.runId);
    expect(held['businesses:1/2']?.run_id).toBe(one.runId);
    expect((await volumeDrops()).map((a) => a.dedupe_key).sort()).toEqual([
      `volume_drop:account:${name}:businesses:0/2:2026-03-02`,
      `volume_drop:account:${name}:businesses:1/2:2026-03-02`,
    ]);
  });
});

describe.each(testBackends)('a business moved between accounts (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  /**
   * Two credentials on the sandbox's one account, each through its own proxy: `old` lists
   * all four businesses on the first night, then all but `moved`; `new` lists only `moved`.
   */
  async function movedWorld() {
    const sandboxCredential = world.sandbox.credentials[0] as Credential;
    const oldProxy = await startListProxy(world.sandbox.baseUrl);
    const newProxy = await startListProxy(world.sandbox.baseUrl);
    const api = patientApiClient();
    const old: Credential = { ...sandboxCredential, name: 'old', baseUrl: oldProxy.url };
    const moved: Credential = { ...sandboxCredential, name: 'new', baseUrl: newProxy.url };
    const first = await sync(world.warehouse, api, [old], { now: () => night(1) });
    expect(first.status).toBe('succeeded');
    const ids = (
      await world.warehouse.db
        .selectFrom('businesses')
        .select('business_id')
        .orderBy('business_id')
        .execute()
    ).map((r) => Number(r.business_id));
    expect(ids).toHaveLength(4);
    const movedId = ids[1] as number;
    oldProxy.keep = new Set(ids.filter((id) => id !== movedId));
    newProxy.keep = new Set([movedId]);
    return {
      movedId,
      oldProxy,
      newProxy,
      credentials: [old, moved],
      secondNight: () => sync(world.warehouse, api, [old, moved], { now: () => night(2) }),
      close: async () => {
        await api.close();
        await oldProxy.close();
        await newProxy.close();
      },
    };
  }

  const business = (id: number) =>
    world.warehouse.db
      .selectFrom('businesses')
      .select(['account_name', 'archived_at'])
      .where('business_id', '=', id)
      .executeTakeFirstOrThrow();

  it('the old account archives after the new one listed it, before the move is written: not archived', async () => {
    const moved = await movedWorld();
    const newReadsIt = signal();
    const oldDone = signal();
    // `old` syncs its businesses once `new` has listed the moved one and asks for it; the
    // answers about it wait until `old` is done, its archive step included.
    moved.oldProxy.gate = async (request) => {
      if (request.businessId !== null) await newReadsIt.promise;
    };
    moved.newProxy.gate = async (request) => {
      if (request.businessId !== moved.movedId) return;
      newReadsIt.resolve();
      await oldDone.promise;
    };
    let whileHeld: Awaited<ReturnType<typeof business>> | undefined;
    const restore = aroundStatements(world.warehouse.db, async (statement, run) => {
      const result = await run();
      // The last statement of `old`'s part: the account synced, after its archive step.
      if (
        /^update "accounts" set "last_synced_at"/.test(statement.sql) &&
        statement.parameters.includes('old')
      ) {
        whileHeld = await business(moved.movedId);
        oldDone.resolve();
      }
      return result;
    });
    try {
      const run = await moved.secondNight();
      expect(run.status).toBe('succeeded');
      expect(whileHeld).toEqual({ account_name: 'old', archived_at: null });
      expect(run.stats.businesses.archived).toBe(0);
      expect(await business(moved.movedId)).toEqual({ account_name: 'new', archived_at: null });
    } finally {
      restore();
      await moved.close();
    }
  });

  it('the old account archives after the move is written, having read its candidates before: not archived', async () => {
    const moved = await movedWorld();
    const archiving = signal();
    const newDone = signal();
    // `new` lists only once `old` is archiving; `old`'s archiving statement runs once
    // `new` has written the moved business (its account then marked synced).
    moved.newProxy.gate = async (request) => {
      if (request.list) await archiving.promise;
    };
    const restore = aroundStatements(world.warehouse.db, async (statement, run) => {
      if (/^update "businesses" set "archived_at"/.test(statement.sql)) {
        archiving.resolve();
        await newDone.promise;
        return run();
      }
      const result = await run();
      if (
        /^update "accounts" set "last_synced_at"/.test(statement.sql) &&
        statement.parameters.includes('new')
      ) {
        newDone.resolve();
      }
      return result;
    });
    try {
      const run = await moved.secondNight();
      expect(run.status).toBe('succeeded');
      expect(run.stats.businesses.archived).toBe(0);
      expect(await business(moved.movedId)).toEqual({ account_name: 'new', archived_at: null });
      // The other three stay `old`'s, live.
      expect(
        await count(
          world.warehouse,
          'businesses',
          sql`account_name = 'old' and archived_at is null`,
        ),
      ).toBe(3);
    } finally {
      restore();
      await moved.close();
    }
  });
});
