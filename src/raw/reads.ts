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
}

/** One read to keep, in `raw_reads`' column names. */
export interface RawReadToInsert {
  run_id: string;
  account_name: string;
  business_id: number | null;
  operation: string;
  request: string;
  params: Record<string, string>;
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
const READ_COLUMNS: ColumnTypes<'raw_reads'> = {
  run_id: 'uuid',
  account_name: 'text',
  business_id: 'bigint',
  operation: 'text',
  request: 'text',
  params: 'jsonb',
  attempt: 'integer',
  status: 'integer',
  observed_at: 'timestamptz',
  body_hash: 'text',
  uncommitted: 'boolean',
};
