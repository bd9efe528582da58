/**
 * The raw zone's writes, `raw_reads` and `raw_bodies` (docs/warehouse.md, "Raw zone:
 * raw_bodies, raw_reads"; docs/replay.md, "The raw zone"): rows in, as src/raw/capture.ts
 * builds them (what a read keeps, its body compressed). Every business runs these, so each
 * statement's text is built once (src/warehouse/bulk-write.ts).
 */
import { CompiledQuery } from 'kysely';
import { arrayLiteral, type ColumnTypes, insertRows } from '../warehouse/bulk-write.ts';
import type { Db } from '../warehouse/database.ts';

/** One distinct body to keep, compressed. */
export interface RawBodyToInsert {
  body_hash: string;
  encoding: string;
  /** The body's length in UTF-8 bytes, before compression. */
  size: number;
  bytes: Uint8Array;
  /** A delta's base (a body kept whole, migration 0032); null for a body kept whole. */
  base_hash: string | null;
}

/** One read to keep, in `raw_reads`' column names. */
export interface RawReadToInsert {
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
}

/** Of these body hashes, those `raw_bodies` holds already. */
export async function knownBodyHashes(db: Db, hashes: readonly string[]): Promise<Set<string>> {
  const { rows } = await db.executeQuery<{ body_hash: string }>(
    CompiledQuery.raw(KNOWN_BODIES, [arrayLiteral(hashes)]),
  );
  return new Set(rows.map((row) => row.body_hash));
}

/** A new body's candidate base: which read of the batch it is for, and the base as stored. */
export interface BodyBase {
  /** 1-based position in the `wanted` list given to `bodyBases`. */
  i: number;
  base_hash: string;
  encoding: string;
  bytes: Uint8Array;
}

/** What a new body is: the read it came with (its business, account, operation, request). */
export interface WantedBase {
  businessId: number | null;
  accountName: string;
  operation: string;
  request: string;
}

/**
 * For each new body, the base of the latest body kept since `since` of a read of the same
 * business (or, for a read tied to no business, the same account's) and operation, the
 * same request first: that body itself when it is kept whole, else its own base. A base is
 * always a body kept whole, so a delta decodes from two rows at most.
 */
export async function bodyBases(
  db: Db,
  wanted: readonly WantedBase[],
  since: Date,
): Promise<BodyBase[]> {
  if (wanted.length === 0) return [];
  const { rows } = await db.executeQuery<BodyBase>(
    CompiledQuery.raw(BODY_BASES, [
      arrayLiteral(wanted.map((w) => w.businessId)),
      arrayLiteral(wanted.map((w) => w.accountName)),
      arrayLiteral(wanted.map((w) => w.operation)),
      arrayLiteral(wanted.map((w) => w.request)),
      since.toISOString(),
    ]),
  );
  return rows.map((row) => ({ ...row, i: Number(row.i) }));
}

/**
 * Inserts bodies, skipping any another transaction kept meanwhile. The caller gives them
 * in hash order, so two businesses' transactions that share a new body cannot deadlock on it.
 */
export async function insertRawBodies(db: Db, bodies: readonly RawBodyToInsert[]): Promise<void> {
  if (bodies.length === 0) return;
  await db
    .insertInto('raw_bodies')
    .values([...bodies])
    .onConflict((oc) => oc.column('body_hash').doNothing())
    .execute();
}

/** Appends reads, in one statement. */
export async function insertRawReads(db: Db, reads: readonly RawReadToInsert[]): Promise<void> {
  await insertRows(db, 'raw_reads', READ_COLUMNS, reads);
}

const KNOWN_BODIES = 'select body_hash from raw_bodies where body_hash = any($1::text[])';
// Each lateral probes raw_reads_business_idx (business_id, observed_at) for the window
// since `$5` (a few nights of one business's reads; for the account's own reads, its
// reads tied to no business), preferring the same request, then the latest.
const BODY_BASES = `
  select n.i, base.body_hash as base_hash, base.encoding, base.bytes
    from unnest($1::bigint[], $2::text[], $3::text[], $4::text[])
           with ordinality as n(business_id, account_name, operation, request, i)
    cross join lateral (
      select r.body_hash
        from raw_reads r
       where r.observed_at >= $5::timestamptz
         and r.operation = n.operation and r.account_name = n.account_name
         and (case when n.business_id is null then r.business_id is null
                   else r.business_id = n.business_id end)
       order by r.request = n.request desc, r.observed_at desc, r.read_id desc
       limit 1) prev
    join raw_bodies p on p.body_hash = prev.body_hash
    join raw_bodies base on base.body_hash = coalesce(p.base_hash, p.body_hash)`;

const READ_COLUMNS: ColumnTypes<'raw_reads'> = {
  run_id: 'uuid',
  account_name: 'text',
  business_id: 'bigint',
  operation: 'text',
  request: 'text',
  attempt: 'integer',
  status: 'integer',
  observed_at: 'timestamptz',
  body_hash: 'text',
  uncommitted: 'boolean',
};
