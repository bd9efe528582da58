/**
 * The embedded warehouse's named statements (src/warehouse/driver/pglite/kysely.ts):
 * inside a transaction, a parameterised text seen before runs under a name, with the same
 * rows and counts as through PGlite's `query()`; a failed one leaves its transaction to
 * the caller as `query()` does (a savepoint rolled back, the rest committed); and a text
 * the session lost runs through `query()` from then on. A PGlite of its own, in memory,
 * with one table: no warehouse schema is needed, and the test discards the session's
 * prepared statements, which a pooled warehouse must keep.
 */
import { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/warehouse/database.ts';
import { pgliteKysely } from '../../src/warehouse/driver/pglite/kysely.ts';
import { pgliteParsers } from '../../src/warehouse/driver/type-parsers.ts';

// biome-ignore lint/suspicious/noExplicitAny: a table of the test's own
type Db = Kysely<any>;

describe('named statements on PGlite', () => {
  let pglite: PGlite;
  let db: Db;

  beforeEach(async () => {
    pglite = await PGlite.create({ parsers: pgliteParsers });
    db = pgliteKysely(pglite) as Kysely<Database> as Db;
    await pglite.exec(
      'create table items (id bigint primary key, name text not null, seen date, tags text[])',
    );
  });
  afterEach(async () => {
    await db.destroy();
  });

  /** The session's named statements whose text is `text`. */
  async function prepared(text: string): Promise<number> {
    const { rows } = await pglite.query<{ n: number }>(
      'select count(*)::int as n from pg_prepared_statements where statement = $1',
      [text],
    );
    return rows[0]?.n ?? 0;
  }

  const INSERT = 'insert into items (id, name, seen, tags) values ($1, $2, $3, $4) returning *';
  const SELECT = 'select id, name, seen, tags from items where id >= $1 order by id';

  it('runs a repeated text under a name, with the rows and counts query() gives', async () => {
    const inTransaction = await db.transaction().execute(async (trx) => {
      const inserted = [];
      for (let i = 1; i <= 4; i++) {
        const values = [i, `item ${i}`, `2026-12-0${i}`, [`t${i}`, null]];
        inserted.push(await trx.executeQuery(CompiledQuery.raw(INSERT, values)));
      }
      const read = [];
      for (let i = 0; i < 3; i++) read.push(await trx.executeQuery(CompiledQuery.raw(SELECT, [2])));
      return { inserted, read };
    });
    // The first run of a text goes through query(), the later ones under a name.
    expect(await prepared(INSERT)).toBe(1);
    expect(await prepared(SELECT)).toBe(1);
    for (const [i, answer] of inTransaction.inserted.entries()) {
      const n = i + 1;
      expect(answer.rows).toEqual([
        { id: n, name: `item ${n}`, seen: `2026-12-0${n}`, tags: [`t${n}`, null] },
      ]);
      expect(answer.numAffectedRows).toBe(1n);
    }
    // Outside a transaction the same text goes through query(): the oracle.
    const plain = await db.executeQuery(CompiledQuery.raw(SELECT, [2]));
    expect(plain.rows).toHaveLength(3);
    for (const answer of inTransaction.read) {
      expect(answer.rows).toEqual(plain.rows);
      expect(answer.numAffectedRows).toBe(plain.numAffectedRows);
    }
  });

  it('a named statement that fails leaves the transaction to its savepoint, and the rest commits', async () => {
    const insert = (trx: Db, id: number, name: string) =>
      sql`insert into items (id, name) values (${id}, ${name})`.execute(trx);
    await db.transaction().execute(async (trx) => {
      await insert(trx, 1, 'first');
      await insert(trx, 2, 'second'); // now named
      await sql`savepoint retry`.execute(trx);
      await expect(insert(trx, 1, 'again')).rejects.toMatchObject({ code: '23505' });
      await sql`rollback to savepoint retry`.execute(trx);
      await insert(trx, 3, 'third');
    });
    const { rows } = await sql<{ id: number; name: string }>`
      select id, name from items order by id`.execute(db);
    expect(rows).toEqual([
      { id: 1, name: 'first' },
      { id: 2, name: 'second' },
      { id: 3, name: 'third' },
    ]);
  });

  it('a text the session lost fails its transaction once, then runs through query()', async () => {
    const insert = (trx: Db, id: number) =>
      sql`insert into items (id, name) values (${id}, ${'x'})`.execute(trx);
    await db.transaction().execute(async (trx) => {
      await insert(trx, 1);
      await insert(trx, 2);
    });
    await pglite.exec('discard all');
    await expect(
      db.transaction().execute(async (trx) => {
        await insert(trx, 3);
      }),
    ).rejects.toMatchObject({ code: '26000' });
    await db.transaction().execute(async (trx) => {
      await insert(trx, 4);
      await insert(trx, 5);
    });
    const { rows } = await sql<{ id: number }>`select id from items order by id`.execute(db);
    expect(rows.map((r) => r.id)).toEqual([1, 2, 4, 5]);
  });
});
