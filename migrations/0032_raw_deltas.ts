/**
 * The raw zone at its floor (docs/warehouse.md, "Raw zone"; issue 42):
 *
 * - `raw_bodies.base_hash`: a body may be kept as a delta, `encoding` `zstd-dict`: zstd
 *   with the text of its base, the body named here, as the dictionary. A base is always a
 *   body kept whole (`br`, base_hash null), so a body decodes from two rows at most, and
 *   retention deletes a base only once no body names it. The bodies kept before stay as
 *   they are (`br`), and read as before; a sync keeps each new body as a delta against the
 *   base of the previous body of its request when that is under half the base's bytes.
 * - `raw_reads.params` is dropped: it repeated `request`'s query (the same parameters,
 *   sorted, without the credential's), 14 bytes and more of every read row.
 *
 * `down()` gives the old shape back in bounded batches, each one statement's worth and
 * each leaving the raw zone readable, so an interrupted revert resumes where it stopped:
 * every delta is kept whole again (`br`), and `params` is filled from `request`.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */

import { brotliCompressSync, brotliDecompressSync, constants, zstdDecompressSync } from 'node:zlib';
import { type Kysely, sql } from 'kysely';

/** Rows per batch of `down()`. */
const BATCH = 500;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('raw_bodies').addColumn('base_hash', 'text').execute();
  await db.schema.alterTable('raw_reads').dropColumn('params').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Every delta kept whole again, a batch at a time (a delta's base is kept whole: it is
  // never rewritten here, so any batch reads its bases as they are).
  for (;;) {
    const { rows } = await sql<{
      body_hash: string;
      bytes: Uint8Array;
      base_bytes: Uint8Array;
    }>`select d.body_hash, d.bytes, b.bytes as base_bytes
         from raw_bodies d join raw_bodies b on b.body_hash = d.base_hash
        where d.encoding = 'zstd-dict'
        order by d.body_hash
        limit ${BATCH}`.execute(db);
    if (rows.length === 0) break;
    const whole = rows.map((row) => {
      const base = brotliDecompressSync(row.base_bytes);
      const text = zstdDecompressSync(row.bytes, { dictionary: base });
      return { body_hash: row.body_hash, hex: brotliCompressSync(text, BROTLI).toString('hex') };
    });
    await sql`update raw_bodies d
                 set encoding = 'br', base_hash = null, bytes = decode(w.hex, 'hex')
                from jsonb_to_recordset(${JSON.stringify(whole)}::jsonb) as w(body_hash text, hex text)
               where d.body_hash = w.body_hash`.execute(db);
  }
  await db.schema.alterTable('raw_bodies').dropColumn('base_hash').execute();

  await db.schema.alterTable('raw_reads').addColumn('params', 'jsonb').execute();
  for (;;) {
    const { rows } = await sql<{ read_id: string | number; request: string }>`
      select read_id, request from raw_reads where params is null order by read_id
       limit ${BATCH}`.execute(db);
    if (rows.length === 0) break;
    const filled = rows.map((row) => ({
      read_id: Number(row.read_id),
      params: paramsOf(row.request),
    }));
    await sql`update raw_reads r set params = p.params
                from jsonb_to_recordset(${JSON.stringify(filled)}::jsonb)
                       as p(read_id bigint, params jsonb)
               where r.read_id = p.read_id`.execute(db);
  }
  await sql`alter table raw_reads alter column params set not null`.execute(db);
}

/** The query of a kept request (`path?a=1&b=2`, the credential's parameters left out) as params. */
function paramsOf(request: string): Record<string, string> {
  const at = request.indexOf('?');
  return at < 0 ? {} : Object.fromEntries(new URLSearchParams(request.slice(at + 1)));
}

/** As src/raw/body.ts keeps a body whole. */
const BROTLI = {
  params: {
    [constants.BROTLI_PARAM_QUALITY]: 5,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
  },
};
