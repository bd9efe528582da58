/**
 * A PostgreSQL warehouse that stops answering (its processes frozen: here a TCP proxy on
 * loopback that holds every byte, as a stopped server's kernel does) fails the run within
 * the configured bounds: the run ends `failed` with a message naming the timeout and its
 * setting, logs it, releases the sync lock, and the CLI exits 1. A run whose end could be
 * recorded once the database was back is `failed`, not `interrupted`; one whose end could
 * not be is marked by the next run without claiming its process was killed.
 *
 * PostgreSQL only: PGlite runs inside the process and cannot freeze apart from it.
 */
import { once } from 'node:events';
import net from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EXIT_FOR_STATUS } from '../../src/cli/command/exit-codes.ts';
import { loadConfig } from '../../src/config/index.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  describeDatabaseError,
  isDatabaseTimeout,
} from '../../src/warehouse/driver/database-errors.ts';
import { queryTimeoutMs } from '../../src/warehouse/driver/timeouts.ts';
import { tryAcquireSyncLock } from '../../src/warehouse/runs/sync-lock.ts';
import { copyRows } from '../../src/warehouse/write/bulk-write.ts';
import { startCli } from '../helpers/cli.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { sync, testApiClient } from '../sync/harness.ts';

interface FreezableProxy {
  port: number;
  /** Hold every byte in both directions from now on: the server is "stopped". */
  freeze(): void;
  /** Deliver what was held, in order, and forward again: the server "continues". */
  thaw(): void;
  /**
   * Once each connection that had bytes held has settled: closed (by either side), or,
   * after `thaw`, handed a byte from the server to the client (the server's answer to
   * what was held). Waits on the sockets, not the clock. Resolves to how many had bytes
   * held.
   */
  settled(): Promise<number>;
  close(): Promise<void>;
}

async function startFreezableProxy(host: string, port: number): Promise<FreezableProxy> {
  let frozen = false;
  let held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  // The connections whose bytes were held (the ones a frozen server left waiting), each
  // with the promise of its settling (`settled`).
  const holding = new Map<net.Socket, Promise<void>>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    sockets.add(client).add(upstream);
    let answered = () => {};
    const hold = () => {
      if (holding.has(client)) return;
      const answer = new Promise<void>((resolve) => {
        answered = resolve;
      });
      holding.set(client, Promise.race([answer, once(client, 'close').then(() => {})]));
    };
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk) => {
        if (frozen) {
          hold();
          held.push(() => to.write(chunk));
          return;
        }
        to.write(chunk);
        if (to === client) answered();
      });
    };
    forward(client, upstream);
    forward(upstream, client);
    // A closed socket is seen by the other side at once: the kernel, not the stopped
    // process, answers for TCP. (Here it also ends the server's session, and its locks.)
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      const pending = held;
      held = [];
      for (const deliver of pending) deliver();
    },
    settled: async () => {
      await Promise.all(holding.values());
      return holding.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function viaProxy(databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}

/** A logger whose lines are kept, calling `on(message)` for each record as it is written. */
function watchedLogger(on: (msg: string) => void = () => {}) {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'info',
    destination: {
      write(chunk: string) {
        for (const line of chunk.split('\n').filter(Boolean)) {
          lines.push(line);
          on(String((JSON.parse(line) as { msg?: unknown }).msg));
        }
      },
    },
  });
  return {
    logger,
    lines,
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

// Small bounds, so the frozen database is given up on in well under a second a wait.
const TIMEOUTS = { connectMs: 500, statementMs: 300, lockMs: 300 };

const postgresOnly = testBackends.includes('postgres') ? describe : describe.skip;

postgresOnly('a frozen database (postgres)', () => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let proxy: FreezableProxy;
  const api = testApiClient();

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, accounts: 1, businessesPerAccount: 4 });
    warehouse = await createTestWarehouse('postgres');
  });
  beforeEach(async () => {
    await truncateAll(warehouse);
    const target = new URL(warehouse.databaseUrl!);
    proxy = await startFreezableProxy(target.hostname, Number(target.port || 5432));
    return async () => {
      proxy.thaw();
      await proxy.close();
    };
  });
  afterAll(async () => {
    await api.close();
    await warehouse?.close();
    await sandbox?.close();
  });

  async function viaFrozenProxy(): Promise<Warehouse> {
    return openWarehouse({
      databaseUrl: viaProxy(warehouse.databaseUrl!, proxy.port),
      searchPath: warehouse.searchPath!,
      timeouts: TIMEOUTS,
    });
  }

  it('cannot be opened: the error names DATABASE_CONNECT_TIMEOUT_MS', async () => {
    proxy.freeze();
    const error = await viaFrozenProxy().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain(
      'no database connection within 500 ms (DATABASE_CONNECT_TIMEOUT_MS)',
    );
  });

  it('mid-run: the run ends failed naming the timeout, logs it, releases the lock, and records its end once the database is back', async () => {
    const frozenWarehouse = await viaFrozenProxy();
    const watched = watchedLogger((msg) => {
      // Frozen as soon as the businesses are listed: their transactions hang.
      if (msg === 'businesses listed') proxy.freeze();
      // The database comes back while the run retries recording its end.
      if (msg === 'could not record the end of the run; retrying') proxy.thaw();
    });
    try {
      const result = await sync(frozenWarehouse, api, sandbox.credentials, {
        logger: watched.logger,
      });
      expect(result.status).toBe('failed');
      expect(EXIT_FOR_STATUS[result.status]).toBe(1);
      expect(result.error).toContain('The warehouse stopped answering');
      expect(result.error).toContain('DATABASE_STATEMENT_TIMEOUT_MS');

      const stops = watched
        .records()
        .filter((r) => r['msg'] === 'the run stops: the warehouse failed');
      expect(stops).toHaveLength(1);
      expect(JSON.stringify(stops[0])).toContain('DATABASE_STATEMENT_TIMEOUT_MS');
    } finally {
      await frozenWarehouse.close();
    }

    const row = await warehouse.db
      .selectFrom('sync_runs')
      .select(['status', 'error'])
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('failed');
    expect(row.error).toContain('DATABASE_STATEMENT_TIMEOUT_MS');

    // The sync lock was released: another run takes it at once.
    const lock = await tryAcquireSyncLock(warehouse, 'listings-sync:sync');
    expect(lock).not.toBeNull();
    await lock?.release();
  });

  it('a lock not granted in time fails the businesses that need it, not the run', async () => {
    const bounded = await openWarehouse({
      databaseUrl: warehouse.databaseUrl!,
      searchPath: warehouse.searchPath!,
      // Under the statement timeout, so that the lock wait is what trips.
      timeouts: { ...TIMEOUTS, lockMs: 100 },
    });
    // Another session holds the listings table, as a long migration or a BI export might.
    const holder = new pg.Client({
      connectionString: warehouse.databaseUrl!,
      options: `-c search_path=${warehouse.searchPath}`,
    });
    await holder.connect();
    const watched = watchedLogger();
    try {
      await holder.query('begin');
      await holder.query('lock table listings in access exclusive mode');
      const result = await sync(bounded, api, sandbox.credentials, { logger: watched.logger });
      expect(result.status).toBe('partial');
      expect(result.stats.businesses.failed).toBe(4);
      const failures = watched.records().filter((r) => r['msg'] === 'business failed');
      expect(failures).toHaveLength(4);
      for (const failure of failures) {
        expect(failure['reason']).toBe(
          'a lock was not granted within 100 ms (DATABASE_LOCK_TIMEOUT_MS)',
        );
      }
    } finally {
      await holder.query('rollback');
      await holder.end();
      await bounded.close();
    }
    const row = await warehouse.db
      .selectFrom('sync_runs')
      .select('status')
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('partial');
    // What did not need the lock is written.
    expect(
      await warehouse.db.selectFrom('countries').select('country_id').execute(),
    ).not.toHaveLength(0);
  });

  it('cannot be closed by the server: close() cuts the connections instead of waiting for ever', async () => {
    const frozenWarehouse = await viaFrozenProxy();
    await frozenWarehouse.db.selectFrom('sync_runs').select('run_id').execute();
    proxy.freeze();
    await frozenWarehouse.close();
    // Reaching this line is the assertion; the pool is gone.
    await expect(
      frozenWarehouse.db.selectFrom('sync_runs').select('run_id').execute(),
    ).rejects.toThrow();
  });

  const COUNTRY_COLUMNS = { country_id: 'bigint', name: 'text' } as const;
  const frozenCountries = [990_001, 990_002].map((id) => ({ country_id: id, name: `F${id}` }));

  it('does not answer a COPY in a transaction: the transaction fails in time, naming the bound', async () => {
    const frozenWarehouse = await viaFrozenProxy();
    try {
      const error = await frozenWarehouse.db
        .transaction()
        .execute(async (trx) => {
          // The proxy holds the bytes, not the server's clock: a stopped server would not
          // end an idle transaction, so this one may sit idle for ever.
          await sql`set local idle_in_transaction_session_timeout = 0`.execute(trx);
          proxy.freeze();
          await copyRows(trx, 'countries', COUNTRY_COLUMNS, frozenCountries);
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      // The rollback queued behind the COPY fails with the COPY's error, which is the one
      // the transaction reports.
      expect(isDatabaseTimeout(error)).toBe(true);
      expect(describeDatabaseError(error, TIMEOUTS)).toContain(
        `the database did not answer within ${queryTimeoutMs(TIMEOUTS)} ms (DATABASE_STATEMENT_TIMEOUT_MS`,
      );
      // Given up on, the COPY's connection is let go: it closes while the server is still
      // frozen (one kept waiting would time the test out).
      expect(await proxy.settled()).toBeGreaterThan(0);
    } finally {
      proxy.thaw();
      await frozenWarehouse.close();
    }
  });

  it('answers a COPY given up on once it is back: nobody reads that answer, and the pool goes on', async () => {
    const frozenWarehouse = await viaFrozenProxy();
    try {
      // Outside a transaction, so that no failed rollback discards the connection: the
      // COPY alone decides what becomes of it.
      const error = await frozenWarehouse.db
        .connection()
        .execute(async (connection) => {
          await connection.selectFrom('countries').select('country_id').execute();
          proxy.freeze();
          await copyRows(connection, 'countries', COUNTRY_COLUMNS, frozenCountries);
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(isDatabaseTimeout(error)).toBe(true);
      // The server gets the COPY now and answers it: were that answer read by the stream
      // that gave up, it would throw in the socket's reader and end the process (and this
      // test with it). The connection is cut instead, and the pool never lends it again:
      // the next query, sent at once, goes on another connection, not behind the
      // abandoned COPY.
      proxy.thaw();
      const stored = await frozenWarehouse.db
        .selectFrom('countries')
        .select('country_id')
        .where('country_id', 'in', [990_001, 990_002])
        .execute();
      // `settled` waits until the late answer has gone to the client or the connection
      // is closed, so that a crash would happen inside this test.
      expect(await proxy.settled()).toBeGreaterThan(0);
      expect(stored).toEqual([]);
    } finally {
      await frozenWarehouse.close();
    }
  });

  it('through the CLI: exit 1, the outcome in the log, and the next run does not say the process was killed', async () => {
    const credential = sandbox.credentials[0]!;
    const url = new URL(viaProxy(warehouse.databaseUrl!, proxy.port));
    url.searchParams.set('options', `-c search_path=${warehouse.searchPath}`);
    const cli = startCli(['sync'], {
      DATABASE_URL: url.toString(),
      DATABASE_CONNECT_TIMEOUT_MS: String(TIMEOUTS.connectMs),
      DATABASE_STATEMENT_TIMEOUT_MS: String(TIMEOUTS.statementMs),
      DATABASE_LOCK_TIMEOUT_MS: String(TIMEOUTS.lockMs),
      LISTINGS_BASE_URL: credential.baseUrl,
      LISTINGS_AUTH_TOKEN: credential.authToken,
      LISTINGS_USER_EMAIL: credential.userEmail,
    });
    void cli.waitForStderr('"msg":"businesses listed"').then(
      () => proxy.freeze(),
      () => {},
    );
    const finished = await cli.done;
    const { stderr } = finished;
    expect(finished.code).toBe(1);
    expect(stderr).toContain('"msg":"the run stops: the warehouse failed"');
    expect(stderr).toContain('DATABASE_STATEMENT_TIMEOUT_MS');
    // Its outcome could not be written while the database was frozen: the log keeps it.
    expect(stderr).toContain('could not record the end of the run: it stays `running`');
    expect(stderr).not.toContain(credential.authToken);

    proxy.thaw();
    // The CLI's connections are gone, and with them its lock: the next run starts.
    const next = await sync(warehouse, api, sandbox.credentials);
    expect(next.status).toBe('succeeded');
    const runs = await warehouse.db
      .selectFrom('sync_runs')
      .select(['status', 'error'])
      .orderBy('started_at')
      .execute();
    expect(runs.map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    expect(runs[0]?.error).toContain('No outcome was recorded');
    expect(runs[0]?.error).toContain('could not reach the database to record its end');
  });
});

describe('database timeouts (configuration)', () => {
  it('default to 10 s, 60 s and 10 s, take 0 for "no limit", and name the rule when wrong', () => {
    const defaults = loadConfig({});
    expect([
      defaults.databaseConnectTimeoutMs,
      defaults.databaseStatementTimeoutMs,
      defaults.databaseLockTimeoutMs,
    ]).toEqual([10_000, 60_000, 10_000]);
    const off = loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_LOCK_TIMEOUT_MS: '0' });
    expect([off.databaseStatementTimeoutMs, off.databaseLockTimeoutMs]).toEqual([0, 0]);
    expect(() => loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: '5' })).toThrow(
      'DATABASE_CONNECT_TIMEOUT_MS must be a whole number from 100 to 600000 (got "5")',
    );
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '1.5' })).toThrow(
      'DATABASE_STATEMENT_TIMEOUT_MS must be a whole number',
    );
  });

  it('tells a busy pool from a database that does not answer', () => {
    const t = { connectMs: 700, statementMs: 300, lockMs: 100 };
    const poolWait = new Error('timeout exceeded when trying to connect');
    expect(describeDatabaseError(poolWait, t)).toBe(
      'no free connection in the pool within 700 ms (DATABASE_CONNECT_TIMEOUT_MS): every connection was busy',
    );
    expect(isDatabaseTimeout(poolWait)).toBe(false);
    const silent = new Error('Query read timeout');
    expect(describeDatabaseError(silent, t)).toContain(
      'the database did not answer within 450 ms (DATABASE_STATEMENT_TIMEOUT_MS, 300 ms, plus a margin)',
    );
    expect(isDatabaseTimeout(silent)).toBe(true);
    const cancelled = Object.assign(new Error('canceling statement due to statement timeout'), {
      code: '57014',
    });
    expect(describeDatabaseError(cancelled, t)).toBe(
      'a statement ran longer than 300 ms and was cancelled (DATABASE_STATEMENT_TIMEOUT_MS)',
    );
    expect(isDatabaseTimeout(cancelled)).toBe(false);
  });

  it('waits for an answer a margin past the statement timeout, and not at all when it is off', () => {
    expect(queryTimeoutMs({ connectMs: 1, statementMs: 60_000, lockMs: 1 })).toBe(65_000);
    expect(queryTimeoutMs({ connectMs: 1, statementMs: 300, lockMs: 1 })).toBe(450);
    expect(queryTimeoutMs({ connectMs: 1, statementMs: 0, lockMs: 1 })).toBe(0);
  });
});
