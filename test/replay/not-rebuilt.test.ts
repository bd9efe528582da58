/**
 * A replay never reports success over a missing night (docs/replay.md; docs/running.md,
 * "Exit codes"): a business-night it cannot rebuild (here, a kept body that no longer
 * decompresses, so its read cannot be served as the night read it) is named, by night and
 * business, and `replay --into` and `replay --in-place` (with and without `--dry-run`)
 * exit 3; in place, that business is kept as it was.
 */
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type CommandWarehouse, createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from '../sync/harness.ts';

const WORLD = { seed: 5, accounts: 1, businessesPerAccount: 3, startDate: '2026-05-10' };

describe.each(testBackends)('replay over a night it cannot rebuild (%s)', (backend) => {
  let target: CommandWarehouse;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;

  beforeEach(async () => {
    target = await createCommandWarehouse(backend);
    sandbox = await startSandbox({ ...WORLD, port: 0 });
    const api = testApiClient();
    try {
      for (let night = 0; night < 2; night++) {
        if (night > 0) sandbox.advanceDays(1);
        const at = new Date(`${sandbox.today()}T04:00:00Z`);
        expect(
          (await sync(target.warehouse, api, sandbox.credentials, { now: () => at })).status,
        ).toBe('succeeded');
      }
    } finally {
      await api.close();
    }
    env = { ...target.env, LOG_LEVEL: 'warn' };
  });
  afterEach(async () => {
    await sandbox?.close();
    await target?.close();
  });

  it('names every business-night it could not rebuild and exits 3, --into and --in-place', async () => {
    const db = target.warehouse.db;
    // The last night's rankings body of one business: every read that kept it is unservable.
    const { rows: picked } = await sql<{ body_hash: string; business_id: string }>`
      select body_hash, business_id::text from raw_reads
       where operation = 'get_rankings' and business_id is not null
       order by observed_at desc, business_id limit 1`.execute(db);
    const { body_hash: hash, business_id: businessId } = picked[0] as {
      body_hash: string;
      business_id: string;
    };
    const { rows: nights } = await sql<{ night: string }>`
      select distinct to_char(observed_at at time zone 'UTC', 'YYYY-MM-DD') as night
        from raw_reads where body_hash = ${hash} and business_id = ${businessId}
       order by 1`.execute(db);
    expect(nights.length).toBeGreaterThan(0);
    await sql`update raw_bodies set bytes = '\\x00ff'::bytea where body_hash = decode(${hash}, 'hex')`.execute(
      db,
    );
    const named = (stdout: string) =>
      [
        ...stdout.matchAll(
          /^ {2}(\d{4}-\d{2}-\d{2}) business (\d+) \(account [^,]+, run [0-9a-f-]{36}\): the kept body of \/businesses\/\d+\/rankings\.json/gm,
        ),
      ].map((m) => `${m[1]} ${m[2]}`);
    const expected = nights.map((n) => `${n.night} ${businessId}`);

    const into = await runCli(['replay', '--into', 'rebuilt'], env);
    expect(into.code, into.stderr).toBe(3);
    expect(into.stdout).toMatch(/^Replay incomplete: replayed 2 run\(s\)/);
    expect(into.stdout).toContain(
      `Not rebuilt: ${expected.length} business-night(s); schema "rebuilt" lacks their rows:`,
    );
    expect(named(into.stdout)).toEqual(expected);

    const before = await sql<{ n: number }>`
      select count(*)::int as n from rank_history h join rank_series s using (series_id)
       where s.business_id = ${businessId}`.execute(db);
    const dry = await runCli(['replay', '--in-place', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(3);
    expect(named(dry.stdout)).toEqual(expected);
    expect(dry.stdout).toContain(
      `  business ${businessId}: the replay did not write every night of its window`,
    );
    const done = await runCli(['replay', '--in-place'], env);
    expect(done.code, done.stderr).toBe(3);
    expect(named(done.stdout)).toEqual(expected);
    // Kept as it was: none of its ranks went.
    const after = await sql<{ n: number }>`
      select count(*)::int as n from rank_history h join rank_series s using (series_id)
       where s.business_id = ${businessId}`.execute(db);
    expect(after.rows).toEqual(before.rows);
  });
});
