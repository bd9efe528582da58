/**
 * `listings-sync warehouse copy`: a PGlite warehouse a real sync filled (two nights
 * against the sandbox: history, raw zone, runs) copied into a PostgreSQL database of the
 * test's own, in-process through `main(argv, io)`. What the copy leaves is checked
 * independently of the command: every row's text on both sides, and the printed hash
 * recomputed here. PostgreSQL tests skip when TEST_DATABASE_URL is unset.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/warehouse/database.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { runCli as run, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { cloneDatabasePrefix } from '../helpers/database.ts';
import { adminQuery, databaseUrlFor } from '../helpers/warehouse-template.ts';

/** Read here rather than through config.ts: a test-only variable. */
const serverUrl = process.env['TEST_DATABASE_URL']?.trim() || undefined;

/** A password the test server ignores (trust), to prove it is never printed. */
const PASSWORD = 'Copy-s3cret-pw';

/** The source's tables, from the catalog, the migrator's bookkeeping aside. */
async function tablesOf(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE'
      and table_name not like 'kysely_migration%'
    order by table_name`.execute(db);
  return rows.map((r) => r.name);
}

/** Every table's rows as text, sorted: what a faithful copy must reproduce exactly. */
async function snapshot(db: Kysely<Database>): Promise<Map<string, string[]>> {
  return db.transaction().execute(async (trx) => {
    await sql`set local timezone = 'UTC'`.execute(trx);
    await sql`set local extra_float_digits = 1`.execute(trx);
    const out = new Map<string, string[]>();
    for (const table of await tablesOf(trx as unknown as Kysely<Database>)) {
      const { rows } = await sql<{ r: string }>`
        select x::text as r from ${sql.table(table)} as x`.execute(trx);
      out.set(
        table,
        rows.map((row) => row.r).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }
    return out;
  });
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** The content hash as docs/backup-restore.md defines it, computed here from the rows. */
function contentHash(rows: readonly string[]): string {
  return md5(rows.map(md5).sort().join(''));
}

describe('warehouse copy: what it refuses before touching anything', () => {
  it('needs a PostgreSQL target (exit 2), and never echoes a bad --to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-copy-'));
    const none = await run(['warehouse', 'copy', '--from', dir], {});
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('needs a PostgreSQL target: set DATABASE_URL');
    const wrong = await run(['warehouse', 'copy', '--to', `mysql://u:${PASSWORD}@h/db`], {});
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--to must be a postgres:// or postgresql:// URL');
    expect(wrong.stderr + wrong.stdout).not.toContain(PASSWORD);
  });

  it('names a --from that holds no PGlite warehouse (exit 1) and creates nothing there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-copy-'));
    const result = await run(
      ['warehouse', 'copy', '--from', join(dir, 'nothing'), '--to', 'postgres://h/db'],
      {},
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `There is no PGlite warehouse to copy in ${join(dir, 'nothing')}`,
    );
    expect(result.stderr).toContain('Pass --from');
  });
});

describe.skipIf(!serverUrl)('warehouse copy from PGlite into PostgreSQL', () => {
  let fixture: SyncCommandFixture;
  /** The PGlite source, filled once and only ever read by the tests below. */
  let sourceDir: string;
  let source: Map<string, string[]>;
  let target: { url: string; shown: string; name: string };
  let opened: Warehouse[] = [];

  beforeAll(async () => {
    fixture = await startSyncFixture(
      'pglite',
      { seed: 41, accounts: 2, businessesPerAccount: 4 },
      { directory: true },
    );
    const env = await fixture.prepare({ migrate: true });
    sourceDir = fixture.pgliteDir;
    const first = await run(['sync'], env);
    expect(first.code, first.stderr).toBe(0);
    fixture.sandbox.advanceDays(1);
    const second = await run(['sync'], env);
    expect(second.code, second.stderr).toBe(0);
    const db = await openWarehouse({ pgliteDataDir: sourceDir });
    try {
      source = await snapshot(db.db);
    } finally {
      await db.close();
    }
    // What the copy must carry: history, the raw zone, runs, reference data. (Two nights
    // of one month leave rank_months_past empty: the catalog copies it like the others.)
    for (const table of [
      'accounts',
      'businesses',
      'listings',
      'listing_status_history',
      'reviews',
      'rank_series',
      'rank_months_current',
      'raw_bodies',
      'raw_read_sets',
      'sync_runs',
    ]) {
      expect(source.get(table)?.length, table).toBeGreaterThan(0);
    }
  });
  afterAll(async () => {
    await fixture?.close();
  });

  beforeEach(async () => {
    const name = `${cloneDatabasePrefix()}copy_${randomBytes(5).toString('hex')}`;
    await adminQuery(serverUrl!, `create database "${name}"`);
    const url = new URL(databaseUrlFor(serverUrl!, name));
    url.password = PASSWORD;
    if (!url.username) url.username = 'postgres';
    target = { url: url.toString(), shown: url.toString().replace(PASSWORD, '[REDACTED]'), name };
    opened = [];
  });
  afterEach(async () => {
    for (const w of opened) await w.close();
    await adminQuery(serverUrl!, `drop database if exists "${target.name}" with (force)`);
  });

  async function openTarget(): Promise<Kysely<Database>> {
    const w = await openWarehouse({ databaseUrl: target.url });
    opened.push(w);
    return w.db;
  }

  const copy = (...args: string[]) =>
    run(['warehouse', 'copy', '--from', sourceDir, ...args], { DATABASE_URL: target.url });

  it('copies every table into an empty database, verified: the rows, ids and hashes of the source', async () => {
    const result = await copy();
    expect(result.code, result.stderr).toBe(0);
    const output = result.stdout + result.stderr;
    expect(output).not.toContain(PASSWORD);
    expect(result.stdout).toContain(`into PostgreSQL at ${target.shown.replace(/\/$/, '')}`);
    expect(result.stdout).toMatch(/every row count and content hash matches the source/);

    const db = await openTarget();
    const copied = await snapshot(db);
    expect([...copied.keys()]).toEqual([...source.keys()]);
    for (const [table, rows] of source) expect(copied.get(table), table).toEqual(rows);

    // The printed table: one line per table, its count and the hash recomputed here.
    for (const [table, rows] of source) {
      const line = result.stdout.split('\n').find((l) => l.startsWith(`${table} `));
      expect(line, table).toBeDefined();
      const cells = (line as string).trim().split(/\s{2,}/);
      const count = rows.length.toLocaleString('en-US');
      expect(cells, table).toEqual([table, count, count, contentHash(rows).slice(0, 12), 'yes']);
    }
    // Progress per table on standard error.
    expect(result.stderr).toContain('copied rank_months_current: ');

    // Identity columns continue after the copied ids.
    const { rows } = await sql<{ next: number; max: number }>`
      select nextval(pg_get_serial_sequence('raw_read_sets', 'set_id')) as next,
             (select max(set_id) from raw_read_sets) as max`.execute(db);
    expect(rows[0]?.next).toBe((rows[0]?.max ?? 0) + 1);
  });

  it('with DATABASE_SCHEMA, copies into that schema of the target, created for it, and nowhere else', async () => {
    const result = await run(['warehouse', 'copy', '--from', sourceDir], {
      DATABASE_URL: target.url,
      DATABASE_SCHEMA: 'copied',
    });
    expect(result.code, result.stderr).toBe(0);
    const w = await openWarehouse({ databaseUrl: target.url, searchPath: 'copied' });
    opened.push(w);
    const copied = await snapshot(w.db);
    expect([...copied.keys()]).toEqual([...source.keys()]);
    for (const [table, rows] of source) expect(copied.get(table), table).toEqual(rows);
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.tables where table_schema = 'public'`.execute(
      w.db,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('refuses a target that holds rows (exit 1), naming the tables and --replace, and changes nothing', async () => {
    const first = await copy();
    expect(first.code, first.stderr).toBe(0);
    const db = await openTarget();
    await sql`update businesses set name = 'Kept by the operator' where business_id = (select min(business_id) from businesses)`.execute(
      db,
    );
    const before = await snapshot(db);

    const again = await copy();
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/The target already holds rows in \d+ table\(s\): accounts, /);
    expect(again.stderr).toContain('pass --replace');
    expect(again.stderr).not.toContain(PASSWORD);
    expect(await snapshot(db)).toEqual(before);
  });

  it('with --replace, converges on the source whatever the target held, run after run', async () => {
    expect((await copy()).code).toBe(0);
    const db = await openTarget();
    await sql`delete from listing_status_history where business_id in (select business_id from businesses order by business_id limit 2)`.execute(
      db,
    );
    await sql`update reviews set title = 'changed on the target'`.execute(db);
    await sql`insert into countries (country_id, name) select max(country_id) + 1000, 'Extra' from countries`.execute(
      db,
    );

    for (let round = 0; round < 2; round++) {
      const result = await copy('--replace');
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/replacing the rows of \d+ table\(s\)/);
      const copied = await snapshot(db);
      for (const [table, rows] of source)
        expect(copied.get(table), `${round}: ${table}`).toEqual(rows);
    }
  });

  it('a failure mid-copy rolls back: the target keeps what it held, and a rerun converges', async () => {
    expect((await copy()).code).toBe(0);
    const db = await openTarget();
    await sql`update businesses set name = 'Kept by the operator' where business_id = (select min(business_id) from businesses)`.execute(
      db,
    );
    // An operator's constraint that refuses the rows of a table copied after others (by
    // name among the tables no foreign key orders): the copy fails part-way.
    await sql`alter table sync_runs add constraint refuse_copy check (status = 'none') not valid`.execute(
      db,
    );
    const before = await snapshot(db);

    const failed = await copy('--replace');
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('failed and was rolled back: the target is as it was');
    expect(failed.stderr).toContain('refuse_copy');
    // Part-way: tables with rows were copied before the refusal.
    expect(failed.stderr).toMatch(/copied \w+: [1-9][\d,]* rows/);
    expect(failed.stderr).not.toContain(PASSWORD);
    expect(await snapshot(db)).toEqual(before);

    await sql`alter table sync_runs drop constraint refuse_copy`.execute(db);
    const rerun = await copy('--replace');
    expect(rerun.code, rerun.stderr).toBe(0);
    const copied = await snapshot(db);
    for (const [table, rows] of source) expect(copied.get(table), table).toEqual(rows);
  });

  it('a copy that does not verify is rolled back, naming the table that differs', async () => {
    // The target migrated first, with an operator's trigger that alters what lands in one
    // table: counts agree, content does not.
    const migrated = await run(['migrate'], { DATABASE_URL: target.url });
    expect(migrated.code, migrated.stderr).toBe(0);
    const db = await openTarget();
    await sql`create function shout() returns trigger language plpgsql as $$
      begin new.name := upper(new.name); return new; end $$`.execute(db);
    await sql`create trigger shout before insert on countries for each row execute function shout()`.execute(
      db,
    );
    const before = await snapshot(db);

    const result = await copy();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'The copy does not match the source in countries (row count or content hash), so it was rolled back',
    );
    const line = result.stdout.split('\n').find((l) => l.startsWith('countries '));
    expect(line).toMatch(/NO$/);
    expect(result.stdout.split('\n').find((l) => l.startsWith('businesses '))).toMatch(/yes$/);
    expect(await snapshot(db)).toEqual(before);
  });
});
