/**
 * PostgreSQL runs a parameterised statement it has seen before as a named prepared
 * statement on each connection (src/warehouse/driver/preparing-client.ts), so it parses and
 * plans it once per connection instead of on every business; statements without parameters
 * (DDL, scripts of several statements) are never prepared.
 *
 * PostgreSQL only: these read the pg client's traffic. PGlite's own named statements
 * (src/warehouse/driver/pglite/kysely.ts) are tested in pglite-named-statements.test.ts.
 */
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { writeReadsIfBodiesKept } from '../../src/raw/reads.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { writeListingFixes } from '../../src/warehouse/tables/listing-fixes.ts';
import { upsertRows } from '../../src/warehouse/write/bulk-write.ts';
import {
  createTestWarehouse,
  skipOnPglite,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

describe.each(testBackends)('named prepared statements (%s)', (backend) => {
  const opened: (Warehouse | TestWarehouse)[] = [];
  afterEach(async () => {
    for (const w of opened.splice(0).reverse()) await w.close();
  });

  /** A warehouse of one connection, so that what it prepared is visible to its next query. */
  async function oneConnection(): Promise<Warehouse> {
    const test = await createTestWarehouse(backend);
    opened.push(test);
    const warehouse = await openWarehouse({
      databaseUrl: test.databaseUrl as string,
      searchPath: 'public',
      poolSize: 1,
    });
    opened.push(warehouse);
    return warehouse;
  }

  async function prepared(w: Warehouse): Promise<string[]> {
    const { rows } = await sql<{ statement: string }>`
      select statement from pg_prepared_statements order by statement`.execute(w.db);
    return rows.map((r) => r.statement);
  }

  it('prepares a parameterised statement the second time its text runs, and answers each run with its own values', async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const w = await oneConnection();
    const run = async (n: number) =>
      (await sql<{ n: number }>`select ${n}::int + 1000 as n`.execute(w.db)).rows[0]?.n;
    expect(await run(1)).toBe(1001);
    expect(await prepared(w)).toEqual([]);
    expect(await run(2)).toBe(1002);
    expect(await run(3)).toBe(1003);
    expect(await prepared(w)).toEqual(['select $1::int + 1000 as n']);
  });

  it("plans the once-per-business statements whose costs hang on their arrays' lengths generically after five runs, not afresh at every business", async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const w = await oneConnection();
    const since = new Date(Date.UTC(2026, 0, 1));
    for (let n = 1; n <= 9; n++) {
      // Like a night's businesses: each its own id and its own number of reads and listings.
      const bodies = Array.from({ length: n }, (_, i) => ({
        hash: (n * 16 + i).toString(16).padStart(64, '0'),
        businessId: 70_000 + n,
        accountName: 'a',
        operation: 'list_listings',
        request: `/businesses/${70_000 + n}/listings.json`,
      }));
      const reads = bodies.map((body) => ({
        run_id: '00000000-0000-4000-8000-000000000001',
        account_name: body.accountName,
        business_id: body.businessId,
        operation: body.operation,
        request: body.request,
        attempt: 1,
        status: 200,
        observed_at: since,
        body_hash: body.hash,
        uncommitted: false,
      }));
      await writeReadsIfBodiesKept(w.db, bodies, since, reads);
      const at = new Date(since.getTime() + n * 86_400_000);
      const opened = Array.from({ length: n }, (_, i) => ({
        listingId: 1_000 * n + i,
        siteName: 'Yelp',
        firstSeen: true,
      }));
      await writeListingFixes(w.db, 70_000 + n, at, opened, [1_000 * (n - 1)]);
    }
    const { rows } = await sql<{ statement: string; generic: number; custom: number }>`
      select statement, generic_plans::int as generic, custom_plans::int as custom
        from pg_prepared_statements
       where statement like '%raw_bodies k%' or statement like '%insert into listing_fixes%'`.execute(
      w.db,
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      // Prepared at its second run: eight runs, at most PostgreSQL's five custom plans.
      expect(row.custom, row.statement).toBeLessThanOrEqual(5);
      expect(row.generic, row.statement).toBeGreaterThanOrEqual(3);
    }
  });

  it('gives each warehouse its own names: one that used up its 200 leaves the next its own', async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const first = await oneConnection();
    // 201 texts, each run twice: the first warehouse names 200 and runs the last unnamed.
    for (let i = 0; i <= 200; i++) {
      for (let run = 0; run < 2; run++) {
        await sql`select ${i}::int + ${sql.lit(i)} as n`.execute(first.db);
      }
    }
    expect((await prepared(first)).length).toBe(200);
    const second = await oneConnection();
    for (let run = 0; run < 2; run++) await sql`select ${run}::int * 7 as n`.execute(second.db);
    expect(await prepared(second)).toEqual(['select $1::int * 7 as n']);
  });

  it('never prepares a statement without parameters, nor a script of several', async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const w = await oneConnection();
    for (let i = 0; i < 3; i++) {
      await sql`select 2000 as n`.execute(w.db);
      await sql.raw('create temporary table if not exists t (n int); select 1').execute(w.db);
    }
    expect(await prepared(w)).toEqual([]);
  });

  it('writes and reads through the Kysely builders as before on a prepared statement', async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const w = await oneConnection();
    for (const name of ['a', 'b', 'c']) {
      await w.db
        .insertInto('accounts')
        .values({ name, user_email: `${name}@example.com`, base_url: 'http://x' })
        .execute();
    }
    const names = await w.db.selectFrom('accounts').select('name').orderBy('name').execute();
    expect(names.map((r) => r.name)).toEqual(['a', 'b', 'c']);
    expect((await prepared(w)).some((s) => s.startsWith('insert into "accounts"'))).toBe(true);
  });

  it('sends a bulk statement shape as one text, built by Kysely once, so its second run is prepared', async (context) => {
    skipOnPglite(context, backend, 'no pg driver, no wire protocol');
    const w = await oneConnection();
    const plan = {
      table: 'countries',
      key: ['country_id'],
      columns: { country_id: 'bigint', name: 'text' },
      compare: ['name'],
    } as const;
    const write = (names: string[]) =>
      upsertRows(
        w.db,
        plan,
        names.map((name, i) => ({ country_id: 880_001 + i, name })),
      );
    expect(await write(['A', 'B'])).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect(await write(['A', 'b', 'C'])).toEqual({ inserted: 1, updated: 1, unchanged: 1 });
    expect((await prepared(w)).filter((s) => s.startsWith('insert into "countries"'))).toEqual([
      'insert into "countries" ("country_id", "name") select * from unnest($1::bigint[], $2::text[]) as "u" on conflict ("country_id") do update set "name" = "excluded"."name" where ("countries"."name") is distinct from ("excluded"."name") returning ("xmax" = 0) as "inserted"',
    ]);
  });
});
