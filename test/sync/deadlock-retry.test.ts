/**
 * Deadlocks cannot cost a night (docs/running.md, "Error codes", `TRANSACTION_ABORTED`): a
 * business's transaction that PostgreSQL aborts for a deadlock (40P01) is run again whole,
 * the retry logged at warn, and the business is written once. The deadlock is a real one:
 * a second connection holds a row the business's transaction will write, waits until that
 * transaction waits on it, then asks for a lock on a table the transaction already wrote;
 * PostgreSQL's deadlock check (the sync's session, 1 s) breaks the cycle by aborting the
 * sync's transaction. The bound and the final failure's wording are checked with the
 * abort thrown at the same boundary, since a deadlock on every attempt cannot be arranged
 * without racing the retry.
 */
import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import {
  retryingAborts,
  TRANSACTION_ATTEMPTS,
  TransactionAbortedError,
} from '../../src/sync/transaction-retry.ts';
import { skipOnPglite, testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { nightOf, sync, worldPerTest } from './harness.ts';

const WORLD = { seed: 11, accounts: 1, businessesPerAccount: 2, startDate: '2026-06-01' };

describe.each(testBackends)('a deadlock in a business transaction (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  it('runs the business again after PostgreSQL aborts it for a real deadlock', async (context) => {
    skipOnPglite(context, backend, 'one connection: no second transaction to deadlock with');
    const credential = world.sandbox.credentials[0] as Credential;
    const night = (extra: Parameters<typeof sync>[3] = {}) =>
      sync(world.warehouse, world.api, [credential], {
        now: () => nightOf(world.sandbox),
        ...extra,
      });
    expect((await night()).status).toBe('succeeded');
    const [first] = (await listBusinesses(world.api, credential)).records
      .map((b) => b.id)
      .sort((x, y) => x - y) as [number];
    const versionsBefore = await sql<{ n: number }>`
      select count(*)::int as n from business_versions`.execute(world.warehouse.db);

    const { logger, lines } = memoryLogger('info');
    await world.warehouse.db.connection().execute(async (other) => {
      await sql`begin`.execute(other);
      // This session never runs the deadlock check first: the sync's session (1 s) does.
      await sql`set local deadlock_timeout = '120s'`.execute(other);
      await sql`select 1 from business_answers where business_id = ${first} for update`.execute(
        other,
      );
      // Every read again, so the business's transaction ends by writing business_answers.
      const running = night({ logger, reapply: true });
      const blocked = await vi.waitFor(
        async () => {
          const { rows } = await sql<{ pid: number }>`
            select pid from pg_stat_activity
             where pg_backend_pid() = any(pg_blocking_pids(pid))`.execute(other);
          expect(rows).toHaveLength(1);
          return (rows[0] as { pid: number }).pid;
        },
        { timeout: 60_000, interval: 20 },
      );
      // A table that transaction has written: asking to lock it closes the cycle.
      const { rows: written } = await sql<{ name: string }>`
        select c.relname as name from pg_locks l join pg_class c on c.oid = l.relation
         where l.pid = ${blocked} and l.granted and c.relname = 'businesses'`.execute(other);
      expect(written.length).toBeGreaterThan(0);
      // Granted once the sync's transaction is aborted and rolled back.
      await sql`lock table businesses in exclusive mode`.execute(other);
      await sql`rollback`.execute(other);
      const result = await running;
      expect(result.status).toBe('succeeded');
      expect(result.stats.businesses.failed).toBe(0);
    });

    const retried = lines()
      .map((line) => JSON.parse(line) as { level: string; msg: string; sqlState?: string })
      .filter((line) => line.sqlState === '40P01');
    expect(retried.map((line) => [line.level, line.msg])).toEqual([
      [
        'warn',
        `business ${first}: its transaction was aborted by a deadlock (40P01); running it again (attempt 2 of ${TRANSACTION_ATTEMPTS})`,
      ],
    ]);
    // Written once: no business version appended twice, its answers recorded.
    const versionsAfter = await sql<{ n: number }>`
      select count(*)::int as n from business_versions`.execute(world.warehouse.db);
    expect(versionsAfter.rows).toEqual(versionsBefore.rows);
  });

  it('gives up after a bounded number of attempts and names the business and the abort', async () => {
    const { logger, lines } = memoryLogger('info');
    let attempts = 0;
    const serialization = Object.assign(new Error('could not serialize access'), {
      code: '40001',
    });
    const failure = await retryingAborts(
      async () => {
        attempts += 1;
        throw serialization;
      },
      { businessId: 42, credential: 'main' },
      logger,
    ).catch((error: unknown) => error);
    expect(attempts).toBe(TRANSACTION_ATTEMPTS);
    expect(failure).toBeInstanceOf(TransactionAbortedError);
    expect((failure as TransactionAbortedError).code).toBe('TRANSACTION_ABORTED');
    expect((failure as Error).message).toBe(
      `business 42: its transaction was aborted by a serialization failure (40001) on each of its ${TRANSACTION_ATTEMPTS} attempts, so nothing of it was written this run (another writer held its rows: a run beside this one, or serve); the next run writes it`,
    );
    expect(lines().filter((line) => line.includes('"level":"warn"'))).toHaveLength(
      TRANSACTION_ATTEMPTS - 1,
    );
    // Any other error is not retried.
    let others = 0;
    await expect(
      retryingAborts(
        async () => {
          others += 1;
          throw new Error('boom');
        },
        { businessId: 42, credential: 'main' },
        silentLogger(),
      ),
    ).rejects.toThrow('boom');
    expect(others).toBe(1);
  });
});
