/**
 * `listings-sync raw show`, `raw stats` and `replay` as a user runs them, against an
 * embedded warehouse that two sandbox nights filled (docs/replay.md, "The raw
 * zone").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listBusinesses, OPERATIONS } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type CommandWarehouse, createCommandWarehouse, runCli } from '../helpers/cli.ts';
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
