/**
 * Migration 0035 (docs/warehouse.md, "Raw zone"): the bodies move into a table whose
 * hashes are 32 bytes and the read rows into one `raw_read_sets` row per business and
 * night, in batches, and an `up()` stopped after a
 * batch finishes when run again; the `raw_reads` view reads them back as they were, in the
 * same order; `down()` moves them back the same way, a second run finishing an
 * interrupted one, into the old table with the same rows. Both backends.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { down, up } from '../../migrations/0035_raw_read_sets.ts';
import { OPERATIONS as READ_NAMES } from '../../src/operations.ts';
import { insertRawReads } from '../../src/raw/reads.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { migrateTo } from '../../src/warehouse/driver/migrate.ts';
import {
  createTestWarehouse,
  relationKind,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

const BEFORE = '0034_series_without_fk_checks';
const RUNS = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
const NIGHT = new Date('2026-05-04T03:00:00.000Z');
const OPERATIONS = ['get_business_full', 'list_listings', 'list_reviews', 'get_rankings'];

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

interface OldRead {
  run_id: string;
  account_name: string;
  business_id: number | null;
  operation: string;
  request: string;
  attempt: number;
  status: number;
  observed_at: Date;
  body_hash: string;
  uncommitted: boolean;
  aged_out: boolean;
}

/**
 * Two nights of 700 businesses, 4 reads each, more than one batch (5,000 reads) a night,
 * with each night's account reads: its list first, and two reference reads at the same time
 * with an operation-10 poll of a business between them (three sets, in read order).
 * Night 1 is aged out; a business of night 2 never committed.
 */
function oldReads(): OldRead[] {
  const reads: OldRead[] = [];
  RUNS.forEach((run, night) => {
    const at = new Date(NIGHT.getTime() + night * 86_400_000);
    const account = (operation: string, businessId: number | null = null): OldRead => ({
      run_id: run,
      account_name: 'east',
      business_id: businessId,
      operation,
      request: `/${operation}.json`,
      attempt: 1,
      status: 200,
      observed_at: at,
      body_hash: sha(`${operation} ${night}`),
      uncommitted: false,
      aged_out: night === 0,
    });
    reads.push(account('list_businesses'));
    for (let b = 1; b <= 700; b++) {
      for (const [i, operation] of OPERATIONS.entries()) {
        reads.push({
          run_id: run,
          account_name: 'east',
          business_id: b,
          operation,
          request: `/businesses/${b}/${operation}.json?page=${i}`,
          attempt: 1 + (i % 2),
          status: i === 3 ? 503 : 200,
          observed_at: new Date(at.getTime() + b * 1000),
          body_hash: sha(`${b} ${operation} ${night % 2 === 0 ? 'same' : night}`),
          uncommitted: night === 1 && b === 7,
          aged_out: night === 0,
        });
      }
    }
    reads.push(account('list_states'));
    reads.push({ ...account('get_response_status', 3), request: '/response_status/9.json' });
    reads.push(account('list_countries'));
  });
  return reads;
}

/** The reads as `raw_reads` gives them, in read order. */
async function readsNow(db: Kysely<unknown>) {
  const { rows } = await sql<Record<string, unknown>>`
    select * from raw_reads order by read_id`.execute(db);
  return rows.map((row) => ({ ...row, read_id: Number(row.read_id) }));
}

async function count(db: Kysely<unknown>, table: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from ${sql.table(table)}`.execute(db);
  return rows[0]?.n ?? 0;
}

describe.each(testBackends)('migration 0035, raw read sets (%s)', (backend) => {
  let wh: TestWarehouse | undefined;
  afterEach(async () => {
    await wh?.close();
    wh = undefined;
  });

  it("keeps an operator's grants and comments on raw_reads and raw_bodies, both ways", async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    const db = wh.db as unknown as Kysely<unknown>;
    await migrateTo(wh.db, BEFORE);
    const role = `ls_bi_${randomUUID().slice(0, 8)}`;
    await sql`create role ${sql.id(role)}`.execute(db);
    try {
      await sql`grant select on raw_reads, raw_bodies to ${sql.id(role)}`.execute(db);
      await sql`comment on table raw_reads is 'reads, for the audit'`.execute(db);
      await sql`comment on table raw_bodies is 'bodies, for the audit'`.execute(db);
      const kept = async () => {
        const { rows } = await sql<{ relation: string; granted: boolean; comment: string }>`
          select c.relname as relation,
                 has_table_privilege(${role}, c.oid, 'SELECT') as granted,
                 obj_description(c.oid, 'pg_class') as comment
            from pg_class c
           where c.relname in ('raw_reads', 'raw_bodies')
             and c.relnamespace = current_schema()::regnamespace
           order by 1`.execute(db);
        return rows;
      };
      const expected = [
        { relation: 'raw_bodies', granted: true, comment: 'bodies, for the audit' },
        { relation: 'raw_reads', granted: true, comment: 'reads, for the audit' },
      ];
      // As `listings-sync migrate` runs it: the migrator keeps them (migrate.ts).
      await migrateTo(wh.db, '0035_raw_read_sets');
      expect(await relationKind(db, 'raw_reads')).toBe('v');
      expect(await kept()).toEqual(expected);
      await migrateTo(wh.db, BEFORE);
      expect(await relationKind(db, 'raw_reads')).toBe('r');
      expect(await kept()).toEqual(expected);
    } finally {
      await sql`drop owned by ${sql.id(role)}`.execute(db);
      await sql`drop role ${sql.id(role)}`.execute(db);
    }
  });

  it('refuses, before anything moves, when views of your own stand over raw_reads', async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    const db = wh.db as unknown as Kysely<unknown>;
    await migrateTo(wh.db, BEFORE);
    // biome-ignore lint/suspicious/noExplicitAny: the old table has no Database type here
    await (db as Kysely<any>).insertInto('raw_reads').values(oldReads().slice(0, 10)).execute();
    await sql`create view my_reads as select run_id, request from raw_reads`.execute(db);
    await expect(up(db)).rejects.toThrow(
      /raw_reads has views of your own over it \(my_reads\): .*drop them, run `listings-sync migrate` again/,
    );
    expect(await relationKind(db, 'raw_reads')).toBe('r');
    expect(await count(db, 'raw_reads')).toBe(10);
    expect(await relationKind(db, 'raw_read_sets')).toBeUndefined();
  });

  it('moves the reads into sets in batches, resumes, reads them back, and down() restores them', {
    timeout: 300_000,
  }, async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    const db = wh.db as unknown as Kysely<unknown>;
    await migrateTo(wh.db, BEFORE);
    const reads = oldReads();
    for (let i = 0; i < reads.length; i += 1000) {
      // biome-ignore lint/suspicious/noExplicitAny: the old table has no Database type here
      await (db as Kysely<any>)
        .insertInto('raw_reads')
        .values(reads.slice(i, i + 1000))
        .execute();
    }
    // 2,100 bodies, more than one batch (2,000), deltas naming a base among them.
    const bodies = Array.from({ length: 2100 }, (_, i) => ({
      body_hash: sha(`body ${i}`),
      encoding: i % 3 === 0 ? 'br' : 'zstd-dict',
      size: 100 + i,
      bytes: Buffer.from([i % 256, 1, 2]),
      first_seen_at: NIGHT,
      base_hash: i % 3 === 0 ? null : sha(`body ${i - (i % 3)}`),
    }));
    for (let i = 0; i < bodies.length; i += 1000) {
      // biome-ignore lint/suspicious/noExplicitAny: the old table has no Database type here
      await (db as Kysely<any>)
        .insertInto('raw_bodies')
        .values(bodies.slice(i, i + 1000))
        .execute();
    }
    const bodiesNow = async () =>
      (
        await sql<Record<string, unknown>>`
          select body_hash, encoding, size, encode(bytes, 'hex') as bytes, first_seen_at, base_hash
            from raw_bodies order by body_hash`.execute(db)
      ).rows;
    const bodiesBefore = await bodiesNow();
    const bodyColumns = async () =>
      (
        await sql`
          select column_name, data_type, is_nullable, column_default
            from information_schema.columns
           where table_schema = current_schema() and table_name = 'raw_bodies'
           order by ordinal_position`.execute(db)
      ).rows;
    const bodyColumnsBefore = await bodyColumns();
    const before = await readsNow(db);
    expect(before).toHaveLength(reads.length);
    const tableBefore = await sql`
      select column_name, data_type, is_nullable, column_default, is_identity
        from information_schema.columns
       where table_schema = current_schema() and table_name = 'raw_reads'
       order by ordinal_position`.execute(db);
    const indexesBefore = await sql`
      select indexname, regexp_replace(indexdef, ' ON \\S+ ', ' ON ') as def from pg_indexes
       where schemaname = current_schema() and tablename = 'raw_reads'
       order by indexname`.execute(db);

    // Stopped after its first batch of bodies: the reads not begun.
    await up(db, 1);
    expect(await count(db, 'raw_bodies_moving')).toBe(100);
    expect(await relationKind(db, 'raw_reads')).toBe('r');
    // Again: the bodies done, and the first batch of reads; the rest still in the old rows.
    await up(db, 1);
    expect(await relationKind(db, 'raw_bodies_moving')).toBeUndefined();
    expect(await relationKind(db, 'raw_reads')).toBeUndefined();
    expect(await count(db, 'raw_reads_moving')).toBe(reads.length - 5000);
    // Run again: it finishes.
    await up(db);
    expect(await relationKind(db, 'raw_reads_moving')).toBeUndefined();
    expect(await relationKind(db, 'raw_reads')).toBe('v');
    const after = await readsNow(db);
    const withoutId = (rows: Record<string, unknown>[]) =>
      rows.map(({ read_id: _, ...rest }) => rest);
    expect(withoutId(after)).toEqual(withoutId(before));
    // One set per business and night (the 5,000-read batch edge splits one more), and the
    // account's: its list, the two reference reads apart, the poll between them.
    const { rows: sets } = await sql<{ business_id: string | null; n: number }>`
      select business_id::text, octet_length(body_hashes) / 32 as n from raw_read_sets
       order by set_id`.execute(db);
    expect(sets.length).toBeGreaterThanOrEqual(2 * (700 + 4));
    expect(sets.length).toBeLessThanOrEqual(2 * (700 + 4) + 1);
    expect(sets.filter((s) => s.business_id === '1').map((s) => s.n)).toEqual([4, 4]);
    // The sync's writer reads the same view: a read's body still joins its hash.
    const { rows: hashes } = await sql<{ n: number }>`
      select count(*)::int as n from raw_reads r where r.body_hash = ${sha('1 list_listings same')}`.execute(
      db,
    );
    expect(hashes[0]?.n).toBe(1);
    // The bodies, hashes as 32 bytes, read as hex as before.
    const { rows: stored } = await sql<{ n: number }>`
      select count(*)::int as n from raw_bodies
       where octet_length(body_hash) = 32
         and (base_hash is null or octet_length(base_hash) = 32)`.execute(db);
    expect(stored[0]?.n).toBe(bodies.length);
    const { rows: asHex } = await sql<Record<string, unknown>>`
      select encode(body_hash, 'hex') as body_hash, encoding, size, encode(bytes, 'hex') as bytes,
             first_seen_at, encode(base_hash, 'hex') as base_hash
        from raw_bodies order by body_hash`.execute(db);
    expect(asHex).toEqual(bodiesBefore);

    // Down, stopped after a batch, then run again.
    await down(db, 1);
    expect(await relationKind(db, 'raw_reads')).toBe('r');
    expect(await count(db, 'raw_read_sets')).toBeGreaterThan(0);
    await down(db);
    expect(await relationKind(db, 'raw_read_sets')).toBeUndefined();
    expect(await readsNow(db)).toEqual(before);
    expect(await bodiesNow()).toEqual(bodiesBefore);
    expect(await bodyColumns()).toEqual(bodyColumnsBefore);
    expect(await relationKind(db, 'raw_bodies_pkey')).toBe('i');
    const tableAfter = await sql`
      select column_name, data_type, is_nullable, column_default, is_identity
        from information_schema.columns
       where table_schema = current_schema() and table_name = 'raw_reads'
       order by ordinal_position`.execute(db);
    expect(tableAfter.rows).toEqual(tableBefore.rows);
    const indexesAfter = await sql`
      select indexname, regexp_replace(indexdef, ' ON \\S+ ', ' ON ') as def from pg_indexes
       where schemaname = current_schema() and tablename = 'raw_reads'
       order by indexname`.execute(db);
    expect(indexesAfter.rows).toEqual(indexesBefore.rows);
    // The next read written numbers after the moved ones.
    // biome-ignore lint/suspicious/noExplicitAny: the old table has no Database type here
    const next = await (db as Kysely<any>)
      .insertInto('raw_reads')
      .values(reads[0] as OldRead)
      .returning('read_id')
      .executeTakeFirstOrThrow();
    expect(Number(next.read_id)).toBe(reads.length + 1);
  });

  it('reads back through the view what the sync writes: any operation, attempt, status and request', async () => {
    wh = await createTestWarehouse(backend);
    const written = [...READ_NAMES, 'some_future_read'].flatMap((operation, i) =>
      [
        { business_id: 5, request: `/businesses/5/${operation}.json?page=${i}` },
        { business_id: 5, request: '/businesses/55/other.json' },
        { business_id: 5, request: `/states.json?q=a%20b&i=${i}` },
        { business_id: null, request: `/businesses.json?page=${i}` },
      ].map((where, j) => ({
        run_id: RUNS[0] as string,
        account_name: 'east',
        business_id: where.business_id,
        operation,
        request: where.request,
        attempt: j === 1 ? 2 : 1,
        status: j === 2 ? 503 : 200,
        observed_at: NIGHT,
        body_hash: sha(`${operation} ${j}`),
        uncommitted: false,
      })),
    );
    await insertRawReads(wh.db, written);
    const { rows } = await sql<Record<string, unknown>>`
      select run_id, account_name, business_id, operation, request, attempt, status,
             observed_at, body_hash, uncommitted
        from raw_reads order by read_id`.execute(wh.db as Kysely<Database>);
    expect(
      rows.map((r) => ({
        ...r,
        business_id: r.business_id === null ? null : Number(r.business_id),
      })),
    ).toEqual(written);
  });
});
