/**
 * `listings-sync raw show`, `raw stats` and `replay` as a user runs them, against an
 * embedded warehouse that two sandbox nights filled (docs/replay.md, "The raw
 * zone").
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { listBusinesses, OPERATIONS } from '../../src/api/index.ts';
import { readRawStats, renderRawStats } from '../../src/cli/commands/raw-show.ts';
import {
  BODY_ENCODING,
  bodyHash,
  compressBody,
  compressDelta,
  DELTA_ENCODING,
} from '../../src/raw/body.ts';
import { insertRawBodies, insertRawReads, type RawReadToInsert } from '../../src/raw/reads.ts';
import { pruneRawZone } from '../../src/raw/retention.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type CommandWarehouse, createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { type TestWarehouse, testBackends } from '../helpers/database.ts';
import { sync, testApiClient } from '../sync/harness.ts';

const WORLD = { seed: 5, accounts: 1, businessesPerAccount: 3, startDate: '2026-05-10' };

describe('raw zone commands (pglite)', () => {
  let target: CommandWarehouse;
  let sandbox: RunningSandbox;
  let businessId: number;
  let env: Record<string, string>;

  beforeAll(async () => {
    target = await createCommandWarehouse('pglite');
    sandbox = await startSandbox({ ...WORLD, port: 0 });
    const api = testApiClient();
    const warehouse = target.warehouse;
    try {
      for (let night = 0; night < 2; night++) {
        if (night > 0) sandbox.advanceDays(1);
        const at = new Date(`${sandbox.today()}T04:00:00Z`);
        expect((await sync(warehouse, api, sandbox.credentials, { now: () => at })).status).toBe(
          'succeeded',
        );
      }
      businessId = (await listBusinesses(api, sandbox.credentials[0]!)).records[0]!.id;
    } finally {
      await api.close();
    }
    env = { ...target.env, LOG_LEVEL: 'warn' };
  });
  afterAll(async () => {
    await sandbox?.close();
    await target?.close();
  });

  it('raw show prints what the upstream answered on a night, pretty or byte for byte', async () => {
    const shown = await runCli(
      [
        'raw',
        'show',
        '--business',
        String(businessId),
        '--date',
        '2026-05-10',
        '--operation',
        'list_listings',
      ],
      env,
    );
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^# 2026-05-10T04:00:00.000Z account-1 list_listings /businesses/${businessId}/listings.json HTTP 200 run [0-9a-f-]{36}\\n\\{\\n  "success": true`,
      ),
    );
    // The marker docs/warehouse.md ("Raw zone") gives for a kept-out credential.
    expect(shown.stdout).toContain('[kept out of the raw zone]');

    const raw = await runCli(
      ['raw', 'show', '--business', String(businessId), '--operation', 'list_listings', '--raw'],
      env,
    );
    expect(raw.code).toBe(0);
    // The latest night by default, as received: one JSON document, not pretty-printed.
    const body = JSON.parse(raw.stdout) as { success: boolean; result: unknown[] };
    expect(body.success).toBe(true);
    expect(raw.stdout.trim()).not.toContain('\n');

    const none = await runCli(
      ['raw', 'show', '--business', String(businessId), '--date', '2026-01-01'],
      env,
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      `listings-sync: The raw zone holds no read of business ${businessId} on 2026-01-01.\n`,
    );

    // A name that is no operation lists the operations; one with no read that night,
    // those the raw zone holds.
    const unknown = await runCli(
      ['raw', 'show', '--business', String(businessId), '--operation', 'listings'],
      env,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'listings-sync: --operation listings is not an operation (did you mean list_listings?). ' +
        `The operations: ${OPERATIONS.join(', ')}.\n`,
    );
    const unread = await runCli(
      [
        'raw',
        'show',
        '--business',
        String(businessId),
        '--date',
        '2026-05-10',
        '--operation',
        'add_keyword',
      ],
      env,
    );
    expect(unread.code).toBe(1);
    expect(unread.stderr).toMatch(
      new RegExp(
        `^listings-sync: The raw zone holds no read of business ${businessId} on 2026-05-10 by add_keyword\\. It holds reads of it that night by: [a-z_, ]*\\blist_listings\\b[a-z_, ]*\\.\n$`,
      ),
    );
  });

  it('raw stats prints the size, each night, what content addressing saved and the oldest night replay can rebuild', async () => {
    const stats = await runCli(['raw', 'stats'], env);
    expect(stats.code).toBe(0);
    expect(stats.stdout).toMatch(/^Raw zone: \d+ reads, \d+ distinct bodies\n/);
    expect(stats.stdout).toMatch(/\n2026-05-10 +\d+ /);
    expect(stats.stdout).toMatch(/\n2026-05-11 +\d+ /);
    expect(stats.stdout).toMatch(/saved by content addressing: \d+\.\d %/);
    // Nothing pruned: replay rebuilds from the first night.
    expect(stats.stdout).toContain('\n  oldest night replay can rebuild: 2026-05-10\n');
  });

  it('replay builds a schema, and refuses a range the raw zone does not cover', async () => {
    const done = await runCli(['replay', '--into', 'rebuilt'], env);
    expect(done.stderr).toContain('replay: run 2/2 (2026-05-11)');
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^Replayed 2 run\(s\), \d+ kept reads, into schema "rebuilt" of /);
    // As many runs as `runs` lists there: one per credential (here one) of each kept run.
    expect(done.stdout).toContain(
      '\nSchema "rebuilt" holds 2 run(s), one per credential of each (DATABASE_SCHEMA=rebuilt listings-sync runs lists them).\n',
    );

    const early = await runCli(['replay', '--from', '2026-05-01', '--into', 'early'], env);
    expect(early.code).toBe(1);
    expect(early.stderr).toBe(
      'listings-sync: The raw zone does not cover --from 2026-05-01: it holds reads from 2026-05-10 to 2026-05-11.\n',
    );
    const again = await runCli(['replay', '--into', 'rebuilt'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('Schema "rebuilt" already holds tables');
  });

  it('replay --in-place --dry-run shows what would change; --in-place rebuilds and can run again', async () => {
    const both = await runCli(['replay', '--in-place', '--into', 'x', '--from', '2026-05-10'], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe(
      'listings-sync: --in-place rebuilds the whole live schema and takes no --into, --from; to replay a part, use --into SCHEMA.\n',
    );
    const neither = await runCli(['replay'], env);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toBe(
      'listings-sync: replay needs --into SCHEMA (a fresh schema) or --in-place.\n',
    );

    const dryRunAlone = await runCli(['replay', '--dry-run', '--into', 'x'], env);
    expect(dryRunAlone.code).toBe(2);
    expect(dryRunAlone.stderr).toBe(
      'listings-sync: --dry-run goes with --in-place (replay --into writes a fresh schema only).\n',
    );

    const dry = await runCli(['replay', '--in-place', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(
      /^Would rebuild 3 business\(es\) of schema "public" of .+ from 2 run\(s\), \d+ kept reads, in [\d.]+ s\.\nThe raw zone covers from 2026-05-10T\S+ on \(per business: from its first kept read\); every row older is kept as it was\.\nNo table would change\.\nDry run: nothing was committed\./,
    );

    const done = await runCli(['replay', '--in-place'], env);
    expect(done.stderr).toContain('replay: run 2/2 (2026-05-11)');
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(
      /^Rebuilt 3 business\(es\) of schema "public" of .+ from 2 run\(s\), \d+ kept reads, in [\d.]+ s\.\n/,
    );
    expect(done.stdout).toContain('No table changed.');
    // The raw zone is as it was: both nights still show.
    const stats = await runCli(['raw', 'stats'], env);
    expect(stats.code).toBe(0);
    expect(stats.stdout).toMatch(/\n2026-05-10 +\d+ /);
    expect(stats.stdout).toMatch(/\n2026-05-11 +\d+ /);

    // Nothing is left to drop: it runs again, on PGlite too.
    const again = await runCli(['replay', '--in-place'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('No table changed.');
  });
});

describe.each(testBackends)('raw show and raw stats on kept bodies (%s)', (backend) => {
  let target: CommandWarehouse;
  let warehouse: TestWarehouse;
  beforeEach(async () => {
    target = await createCommandWarehouse(backend);
    warehouse = target.warehouse;
  });
  afterEach(async () => {
    await target.close();
  });

  const whole = (text: string) => ({
    body_hash: bodyHash(text),
    encoding: BODY_ENCODING,
    size: Buffer.byteLength(text),
    bytes: compressBody(text),
    base_hash: null,
  });
  const read = (
    run: string,
    at: Date,
    business: number | null,
    text: string,
    operation = business === null ? 'list_businesses' : 'list_listings',
  ) =>
    ({
      run_id: run,
      account_name: 'account-1',
      business_id: business,
      operation,
      request:
        business === null
          ? '/businesses.json'
          : `/businesses/${business}/${operation === 'list_listings' ? 'listings' : 'reviews'}.json`,
      attempt: 1,
      status: 200,
      observed_at: at,
      body_hash: bodyHash(text),
      uncommitted: false,
    }) satisfies RawReadToInsert;

  it('raw show names a body it cannot read and its request as replay does, and shows the others', async () => {
    const at = new Date('2026-11-20T02:00:00Z');
    const listings = JSON.stringify({ success: true, result: [{ id: 1, status: 'live' }] });
    const reviews = JSON.stringify({ success: true, result: { google: [{ id: 9 }] } });
    const cut = whole(reviews);
    // A body cut short on disk: brotli's own word for it is "unexpected end of file".
    await insertRawBodies(warehouse.db, [
      whole(listings),
      { ...cut, bytes: cut.bytes.subarray(0, cut.bytes.byteLength - 4) },
    ]);
    const run = randomUUID();
    await insertRawReads(warehouse.db, [
      read(run, at, 1, listings),
      read(run, new Date(at.getTime() + 1_000), 1, reviews, 'list_reviews'),
    ]);
    const env = { ...target.env, LOG_LEVEL: 'warn' };
    const named =
      `listings-sync: 2026-11-20 business 1 (account account-1, run ${run}): ` +
      `the kept body of /businesses/1/reviews.json (${bodyHash(reviews)}) cannot be read: unexpected end of file\n`;
    const shown = await runCli(['raw', 'show', '--business', '1', '--date', '2026-11-20'], env);
    expect(shown.stderr).toBe(named);
    expect(shown.code).toBe(3);
    expect(shown.stdout).toBe(
      `# 2026-11-20T02:00:00.000Z account-1 list_listings /businesses/1/listings.json HTTP 200 run ${run}\n` +
        `${JSON.stringify(JSON.parse(listings), null, 2)}\n` +
        `# 2026-11-20T02:00:01.000Z account-1 list_reviews /businesses/1/reviews.json HTTP 200 run ${run}\n` +
        '(its kept body cannot be read: see standard error)\n',
    );
    const raw = await runCli(['raw', 'show', '--business', '1', '--raw'], env);
    expect(raw.stderr).toBe(named);
    expect(raw.code).toBe(3);
    expect(raw.stdout).toBe(`${listings}\n`);
  });

  /** A listings answer of 200 listings, one status changed where `changed` says. */
  const answer = (changed: number | null) =>
    JSON.stringify({
      success: true,
      result: Array.from({ length: 200 }, (_, i) => ({
        id: 5000 + i,
        site: `site-${(i * 7919) % 997}`,
        status: i === changed ? 'broken' : i % 3 ? 'live' : 'pending',
      })),
    });

  it("counts a base retention left behind as what it is, and never prints a negative 'saved' share", async () => {
    // Night 1 reads business 1's listings whole; 40 days later its answer (one status
    // changed) is kept as a delta against it, read by businesses 1 and 2 alike. Retention
    // at 30 days deletes night 1's reads: the whole body stays, only as the delta's base.
    const base = answer(null);
    const changed = answer(7);
    const now = new Date('2026-11-20T02:00:00Z');
    const before = new Date(now.getTime() - 40 * 86_400_000);
    const delta = compressDelta(changed, base);
    await insertRawBodies(warehouse.db, [
      whole(base),
      whole('list then'),
      whole('list now'),
      {
        body_hash: bodyHash(changed),
        encoding: DELTA_ENCODING,
        size: Buffer.byteLength(changed),
        bytes: delta,
        base_hash: bodyHash(base),
      },
    ]);
    const [then, later] = [randomUUID(), randomUUID()];
    await insertRawReads(warehouse.db, [
      read(then, before, null, 'list then'),
      read(then, new Date(before.getTime() + 60_000), 1, base),
      read(later, now, null, 'list now'),
      read(later, new Date(now.getTime() + 60_000), 1, changed),
      read(later, new Date(now.getTime() + 61_000), 2, changed),
    ]);
    expect(await pruneRawZone(warehouse.db, 30)).toMatchObject({ reads: 2, bodies: 1 });

    const stats = await readRawStats(warehouse.db);
    const baseBytes = compressBody(base).byteLength;
    const list = compressBody('list now').byteLength;
    // What the reads refer to, against one body per read: the delta once for two reads.
    expect(stats.savedShare).toBeCloseTo(
      1 - (delta.byteLength + list) / (2 * delta.byteLength + list),
    );
    expect(stats).toMatchObject({
      reads: 3,
      bodies: 3,
      storedBytes: baseBytes + delta.byteLength + list,
      basesOnly: 1,
      basesOnlyBytes: baseBytes,
    });
    const text = renderRawStats(stats);
    expect(baseBytes).toBeLessThan(1024);
    expect(text).toContain(
      `\n  kept only as the base of deltas: 1 body, ${baseBytes} B (no read refers to it; the deltas read decode from it)\n`,
    );
    expect(text).toContain(
      `\n  saved by content addressing: ${(stats.savedShare * 100).toFixed(1)} % of the body bytes one body per read would take\n`,
    );
    expect(stats.savedShare).toBeGreaterThan(0);
  });
});
