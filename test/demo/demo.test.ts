/**
 * The demo, shrunk (a few days, a few businesses): what it prints is what the warehouse
 * holds, and running it again carries on instead of writing the same history twice.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  it,
  onTestFinished,
} from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { type DemoOptions, type DemoResult, runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { attachWarehouse, startCli } from '../helpers/cli.ts';
import { createTestWarehouse, type TestWarehouse } from '../helpers/database.ts';
import { copyPgliteWarehouse } from '../helpers/warehouse-copies.ts';

const END = '2026-03-10';

describe('demo', () => {
  let dir: string;
  /** The test's warehouse: an in-memory PGlite the demo is handed (its `warehouse` option). */
  let warehouse: TestWarehouse;
  const options = (): DemoOptions => ({
    days: 3,
    accounts: 2,
    businessesPerAccount: 3,
    warehouse,
    reportPath: join(dir, 'report.html'),
    endDate: END,
  });

  async function demo(
    extra: Partial<DemoOptions> = {},
  ): Promise<{ lines: string[]; result: DemoResult }> {
    const lines: string[] = [];
    const result = await runDemo(loadConfig({}), silentLogger(), {
      ...options(),
      ...extra,
      write: (line) => lines.push(line),
    });
    return { lines, result };
  }

  /** Counts straight from the tables, written independently of the demo's own queries. */
  async function warehouseCounts(wh: Warehouse = warehouse) {
    {
      const one = async (query: ReturnType<typeof sql>) =>
        Number(((await query.execute(wh.db)).rows[0] as { n: number }).n);
      const statuses = (
        await sql<{ status: string; n: number }>`
          select l.status, count(*)::int as n from listings l, businesses b
          where b.business_id = l.business_id and l.removed_at is null and b.archived_at is null
          group by l.status`.execute(wh.db)
      ).rows;
      const days = (
        await sql<{
          d: string;
        }>`select distinct observed_on as d from rank_observations order by 1`.execute(wh.db)
      ).rows.map((r) => r.d);
      return {
        accounts: await one(sql`select count(*) as n from accounts`),
        businesses: await one(sql`select count(*) as n from businesses where archived_at is null`),
        listings: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
        reviews: await one(sql`select count(*) as n from reviews r, businesses b
          where b.business_id = r.business_id and b.archived_at is null
            and r.removed_at is null and r.category = 'review'`),
        keywords: await one(sql`select count(*) as n from (select distinct k.business_id, k.keyword
          from keywords k, businesses b where b.business_id = k.business_id
            and b.archived_at is null and k.deleted_at is null) x`),
        alerts: await one(sql`select count(*) as n from alerts where kind = 'listing_inaccurate'`),
        rankObservations: await one(sql`select count(*) as n from rank_observations`),
        statusHistory: await one(sql`select count(*) as n from listing_status_history`),
        reviewVersions: await one(sql`select count(*) as n from review_versions`),
        businessVersions: await one(sql`select count(*) as n from business_versions`),
        syncRuns: await one(sql`select count(*) as n from sync_runs`),
        // The Slack digests: one per account and run that raised anything.
        digests: await one(
          sql`select count(*) as n from (select distinct account_name, run_id from alerts) x`,
        ),
        days,
      };
    }
  }

  type Counts = Awaited<ReturnType<typeof warehouseCounts>>;

  /** `  label   N…` from the printed summary. */
  const printed = (lines: string[], label: string): string => {
    const line = lines.find((l) => l.trimStart().startsWith(label));
    if (!line) throw new Error(`no "${label}" line in:\n${lines.join('\n')}`);
    return line.trimStart().slice(label.length).trim();
  };
  const leadingNumber = (text: string) => Number(text.match(/^[\d,]+/)?.[0].replace(/,/g, ''));

  /**
   * The first run, to the end date, in a directory and a warehouse of its own, and what
   * the warehouse holds after it: run once per file (it is the same every time) and never
   * written again; a test that carries on from it works on a copy (firstRun).
   */
  let first: {
    dir: string;
    warehouse: TestWarehouse;
    lines: string[];
    result: DemoResult;
    counts: Counts;
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'listings-demo-first-'));
    warehouse = await createTestWarehouse('pglite');
    const run = await demo();
    first = { dir, warehouse, ...run, counts: await warehouseCounts() };
  });
  afterAll(async () => {
    await first?.warehouse.close();
    if (first) await rm(first.dir, { recursive: true, force: true });
  });

  // Each test has its own directory and warehouse; one that carries on from the first run
  // gets a copy of its warehouse.
  const others: TestWarehouse[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'listings-demo-'));
    warehouse = await createTestWarehouse('pglite');
  });
  afterEach(async () => {
    await warehouse?.close();
    for (const other of others.splice(0)) await other.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * The first run's warehouse, copied into this test's: its rows put into a warehouse of
   * the pool (a tenth of the CPU of a new instance from its dump, clonePgliteWarehouse).
   */
  async function firstRun() {
    await warehouse.close();
    warehouse = await copyPgliteWarehouse(first.warehouse);
    return first;
  }

  it('simulates the days up to the end date, and prints what the warehouse holds', async () => {
    const { lines, result, counts: afterFirst } = first;
    // A baseline day and then `days` more, ending on the end date, each synced once.
    expect(result.startDate).toBe('2026-03-07');
    expect(result.daysSimulated).toBe(4);
    expect(result.syncs.map((s) => s.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
    expect(afterFirst.days).toEqual(['2026-03-07', '2026-03-08', '2026-03-09', '2026-03-10']);
    expect(afterFirst.syncRuns).toBe(4);

    expect(leadingNumber(printed(lines, 'accounts'))).toBe(afterFirst.accounts);
    expect(leadingNumber(printed(lines, 'businesses'))).toBe(afterFirst.businesses);
    const listingsLine = printed(lines, 'listings');
    const total = Object.values(afterFirst.listings).reduce((a, b) => a + b, 0);
    expect(leadingNumber(listingsLine)).toBe(total);
    for (const [status, n] of Object.entries(afterFirst.listings)) {
      expect(listingsLine).toContain(`${n.toLocaleString('en-US')} ${status}`);
    }
    expect(leadingNumber(printed(lines, 'reviews'))).toBe(afterFirst.reviews);
    expect(leadingNumber(printed(lines, 'keywords tracked'))).toBe(afterFirst.keywords);
    expect(leadingNumber(printed(lines, 'alerts raised'))).toBe(afterFirst.alerts);
    expect(afterFirst.alerts).toBeGreaterThan(0);
    // Two examples under the alerts line, and the way on.
    const alertsAt = lines.findIndex((l) => l.trimStart().startsWith('alerts raised'));
    expect(lines[alertsAt + 1]).toMatch(/^ {4}2026-03-\d\d {2}.+ \(#\d+\) on .+: .+ → Inaccurate/);
    expect(lines[alertsAt + 2]).toMatch(/→ Inaccurate/);
    expect(lines).toContain(
      `Slack would get ${afterFirst.digests} message(s): one digest per account and day.`,
    );
    expect(afterFirst.digests).toBeGreaterThan(0);
    expect(afterFirst.digests).toBeLessThan(afterFirst.alerts);
    expect(lines.join('\n')).toContain(`Report: ${join(first.dir, 'report.html')}`);
    expect(lines.join('\n')).toContain('npx listings-sync sync');
    expect(existsSync(join(first.dir, 'report.html'))).toBe(true);
  });

  it('without an end date it ends on the last whole day, and stores nothing dated after the clock', async () => {
    // 07:34 on the 11th: the 11th's reviews may be dated later today, so it is not simulated.
    const wall = new Date('2026-03-11T07:34:00Z');
    const { lines, result } = await demo({ days: 1, endDate: undefined, clock: () => wall });
    expect(result.startDate).toBe('2026-03-09');
    expect(lines.join('\n')).toContain('Simulating 2026-03-09 to 2026-03-10');
    expect((await warehouseCounts()).days.at(-1)).toBe('2026-03-10');
    const wh = warehouse;
    {
      const latest = (
        await sql<{ what: string; at: Date | null }>`
          select 'alert detected' as what, max(detected_at) as at from alerts
          union all select 'review dated', max(reviewed_at) from reviews
          union all select 'review seen', max(last_seen_at) from reviews
          union all select 'listing observed', max(observed_at) from listing_status_history`.execute(
          wh.db,
        )
      ).rows;
      expect(latest.filter((r) => r.at !== null).length).toBeGreaterThanOrEqual(3);
      for (const { what, at } of latest) {
        if (at) expect(new Date(at).getTime(), what).toBeLessThanOrEqual(wall.getTime());
      }
      // Each day is synced at its end: everything the sandbox dated that day came before.
      const lastSeen = latest.find((r) => r.what === 'review seen')?.at;
      expect(new Date(lastSeen!).toISOString()).toBe('2026-03-10T23:59:59.999Z');
    }
  });

  it('a second run on the same day adds nothing', async () => {
    const { counts: afterFirst } = await firstRun();
    const again = await demo();
    expect(again.result.daysSimulated).toBe(0);
    expect(again.result.startDate).toBe('2026-03-07');
    expect(again.lines.join('\n')).toContain('Already simulated through 2026-03-10');
    expect(await warehouseCounts()).toEqual(afterFirst);
  });

  it('a run on a later day carries on from the next day, at the same start date', async () => {
    const { counts: afterFirst } = await firstRun();
    // No --days: a resumed demo carries on to its end date, whatever the span it began with.
    const later = await demo({ endDate: '2026-03-12', days: undefined });
    expect(later.result.startDate).toBe('2026-03-07');
    expect(later.result.daysSimulated).toBe(2);
    const after = await warehouseCounts();
    expect(after.days).toEqual([...afterFirst.days, '2026-03-11', '2026-03-12']);
    expect(after.syncRuns).toBe(afterFirst.syncRuns + 2);
    // The same history as one uninterrupted run to that day: nothing twice, nothing skipped.
    const continuousWarehouse = await createTestWarehouse('pglite');
    others.push(continuousWarehouse);
    const continuous = await runDemo(loadConfig({}), silentLogger(), {
      ...options(),
      warehouse: continuousWarehouse,
      reportPath: join(dir, 'continuous.html'),
      endDate: '2026-03-12',
      days: 5,
      write: () => {},
    });
    expect(continuous.startDate).toBe('2026-03-07');
    expect(after).toEqual(await warehouseCounts(continuousWarehouse));
    // And the printed numbers still match.
    expect(leadingNumber(printed(later.lines, 'alerts raised'))).toBe(after.alerts);
  });

  it('`listings-sync runs` shows the upstream day each demo run read, not only when it ran', async () => {
    const pglite = join(dir, 'runs-pglite');
    onTestFinished(attachWarehouse(pglite, first.warehouse).detach);
    const runs = await startCli(['runs'], { PGLITE_DATA_DIR: pglite }).done;
    expect(runs.code, runs.stderr).toBe(0);
    const rows = runs.stdout
      .split('\n')
      .filter((line) => / demo /.test(line))
      .map((line) =>
        line
          .trim()
          .split(/\s{2,}/)
          .slice(1, 3),
      );
    // Newest first: the four simulated days, which the wall-clock start times (seconds
    // apart) do not show.
    expect(rows).toEqual([
      ['2026-03-10', 'succeeded'],
      ['2026-03-09', 'succeeded'],
      ['2026-03-08', 'succeeded'],
      ['2026-03-07', 'succeeded'],
    ]);
  });

  it('an existing demo refuses --days and --businesses that would shape another, keeps its size when resumed, and --fresh rebuilds it', async () => {
    const { counts: afterFirst } = await firstRun();
    onTestFinished(attachWarehouse(join(dir, '.data/demo'), warehouse).detach);
    // Four days after the first run's last: the 11th to the 13th are still to sync.
    const at = { cwd: dir, now: () => new Date('2026-03-14T12:00:00Z') };
    for (const [args, refused] of [
      [['--days', '1'], '--days would make another'],
      [['--businesses', '5'], '--businesses would make another'],
      [['--days', '7', '--businesses', '5'], '--days and --businesses would make another'],
    ] as const) {
      const ended = await startCli(['demo', ...args], {}, at).done;
      expect(ended.code, ended.stderr).toBe(2);
      expect(ended.stderr).toContain(
        'listings-sync: the demo in embedded PGlite in ./.data/demo already holds the days from 2026-03-07 of 3 businesses per account; ' +
          `${refused}. \`npm start -- --fresh ${args.join(' ')}\` rebuilds it so (the stored demo is deleted); ` +
          '`npm start` carries the stored one on to the last whole day.',
      );
      expect(await warehouseCounts()).toEqual(afterFirst);
    }
    // Resumed without options: to the last whole day, from the sandbox it was built from
    // (3 businesses an account, none new).
    const resumedRun = await startCli(['demo'], {}, at).done;
    expect(resumedRun.code, resumedRun.stderr).toBe(0);
    expect(resumedRun.stdout).toContain(
      'Resuming after 2026-03-10, the last day synced in full: simulating 3 more day(s) to 2026-03-13.',
    );
    const resumed = await warehouseCounts();
    expect(resumed.days).toEqual([...afterFirst.days, '2026-03-11', '2026-03-12', '2026-03-13']);
    const size = async () =>
      (
        await sql<{
          n: number;
        }>`select max(business_id % 10000000)::int as n from businesses`.execute(warehouse.db)
      ).rows[0]?.n;
    expect(await size()).toBe(3);
    // Options that say what the stored demo is (from the 7th, 6 days before the 13th; 3
    // businesses) shape no other.
    const same = await startCli(['demo', '--days', '6', '--businesses', '3'], {}, at).done;
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain('Already simulated through 2026-03-13; nothing new to sync.');

    const fresh = await startCli(['demo', '--fresh', '--days', '1', '--businesses', '1'], {}, at)
      .done;
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toContain('Warehouse: embedded PGlite in ./.data/demo, emptied (--fresh)');
    expect(fresh.stdout).toContain('Simulating 2026-03-12 to 2026-03-13 (2 syncs)');
    const rebuilt = await warehouseCounts();
    expect(rebuilt.days).toEqual(['2026-03-12', '2026-03-13']);
    expect(rebuilt.syncRuns).toBe(2);
    expect(await size()).toBe(1);
  });

  it('`listings-sync demo --days N --businesses N` simulates that many, and refuses what it cannot', async () => {
    const attached = attachWarehouse(join(dir, '.data/demo'), warehouse);
    onTestFinished(attached.detach);
    const small = startCli(
      ['demo', '--days', '2', '--businesses', '1'],
      {},
      {
        cwd: dir,
        now: () => new Date(`${END}T12:00:00Z`),
      },
    );
    const ended = await small.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toContain('Simulating 2026-03-07 to 2026-03-09 (3 syncs)');
    // The last whole day before the command's clock (12:00 on the 10th) is the 9th.
    expect((await warehouseCounts()).businesses).toBe(2);
    for (const [args, message] of [
      [['--days', '0'], '--days must be a whole number from 1 to 365.'],
      [['--businesses', 'ten'], '--businesses must be a whole number from 1 to 1000.'],
    ] as const) {
      const refused = await startCli(['demo', ...args], {}, { cwd: dir }).done;
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(message);
    }
  });

  it.each([
    ['just after midnight', '2026-03-11T00:00:05Z', '2026-03-10'],
    ['just before midnight', '2026-03-10T23:59:55Z', '2026-03-09'],
  ])(
    '`listings-sync demo` %s ends on the last whole day and dates nothing after its clock',
    async (_, at, lastDay) => {
      // (sync_runs keeps the real times its runs took, which a test's clock does not move.)
      const clock = new Date(at);
      onTestFinished(attachWarehouse(join(dir, '.data/demo'), warehouse).detach);
      const ended = await startCli(
        ['demo', '--days', '1', '--businesses', '1'],
        {},
        {
          cwd: dir,
          now: () => clock,
        },
      ).done;
      expect(ended.code, ended.stderr).toBe(0);
      expect((await warehouseCounts()).days.at(-1)).toBe(lastDay);
      const { rows } = await sql<{ what: string; at: Date | null }>`
      select 'alert detected' as what, max(detected_at) as at from alerts
      union all select 'review dated', max(reviewed_at) from reviews
      union all select 'review seen', max(last_seen_at) from reviews
      union all select 'response dated', max(responded_at) from review_responses
      union all select 'listing observed', max(observed_at) from listing_status_history`.execute(
        warehouse.db,
      );
      for (const row of rows) {
        if (row.at)
          expect(new Date(row.at).getTime(), row.what).toBeLessThanOrEqual(clock.getTime());
      }
      expect(rows.find((r) => r.what === 'review dated')?.at).not.toBeNull();
    },
  );

  // The command's own demo, with its defaults: a first day of 50 businesses before the
  // stop. Its warehouse, ./.data/demo under the command's working directory, is the test's
  // (attached to that directory).
  it('`listings-sync demo` runs in-process and, stopped as by SIGTERM, ends after the day in flight with exit 143, saying so', async () => {
    const attached = attachWarehouse(join(dir, '.data/demo'), warehouse);
    onTestFinished(attached.detach);
    const demo = startCli(['demo'], {}, { cwd: dir, now: () => new Date(`${END}T12:00:00Z`) });
    await demo.waitForStderr('"msg":"demo day synced"');
    demo.stop('SIGTERM');
    const ended = await demo.done;
    // 128 + SIGTERM's 15, as a shell reports a process SIGTERM ended.
    expect(ended.code, ended.stderr).toBe(143);
    expect(ended.stdout).toMatch(/Sandbox of the upstream API \(seed \d+, from 2026-02-07\)/);
    // The stop lands after day 1's line, on day 2 or (were day 2 done already) day 3: the
    // days before it synced in full, never all 31.
    const said =
      /^Stopped by SIGTERM on (2026-02-\d\d), day ([23]) of the 31 to sync: ([12]) day\(s\) synced in full \(2026-02-07 … (2026-02-0\d)\)/m.exec(
        ended.stdout,
      );
    expect(said, ended.stdout).not.toBeNull();
    const [, day, number, inFull, lastInFull] = said!;
    expect(Number(inFull)).toBe(Number(number) - 1);
    expect(day).toBe(`2026-02-0${7 + Number(inFull)}`);
    expect(lastInFull).toBe(`2026-02-0${6 + Number(inFull)}`);
    expect(ended.stdout).toContain(
      `Warehouse after 2026-02-07 … ${lastInFull}, the days synced in full`,
    );
    expect(ended.stdout).not.toMatch(/^\d+ day\(s\) synced in/m);
    // No report of a stopped demo: the next run writes it.
    expect(ended.stdout).toContain('No report written: the demo was stopped.');
    expect(existsSync(join(dir, 'report.html'))).toBe(false);
    // The demo's own warehouse, under the command's working directory.
    const days = (await warehouseCounts()).days;
    expect(days[0]).toBe('2026-02-07');
    expect(days.length).toBeLessThanOrEqual(Number(number));
  });
});
