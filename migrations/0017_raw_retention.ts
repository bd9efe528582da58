/**
 * RAW_RETENTION_DAYS keeps what replay needs and can prune a large raw zone
 * (docs/operations.md, "Raw zone and replay"; src/raw/retention.ts):
 *
 * - `raw_reads.aged_out`: set on every read retention keeps of a run past its window (a
 *   business's latest reads, the account reads that go with them), so that `raw stats` can
 *   tell the nights kept whole from the ones pruned to those reads, and name the oldest
 *   night replay can rebuild. False for every read before this migration. No index:
 *   retention sets it on the few reads it keeps of a night, and `raw stats` reads it in
 *   the pass it already makes over the reads.
 * - `raw_reads.body_hash` loses its foreign key to `raw_bodies`. Deleting a body checked it
 *   with a sequential scan of `raw_reads` (there is no index on `body_hash`, migration 0011
 *   says why), once per body: 20 bodies took 3.6 s among 810,000 reads on PostgreSQL 15,
 *   so a night's bodies took hours to prune; without it the whole deletion is one
 *   anti-join, 0.27 s for 9,500 bodies. What the key guarded still holds: the one writer
 *   (src/raw/capture.ts) inserts a read's body before the read, in the same transaction,
 *   and pruning deletes only bodies no read refers to, under a full run's sync lock, so no
 *   read is written meanwhile.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('raw_reads')
    .addColumn('aged_out', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema.alterTable('raw_reads').dropConstraint('raw_reads_body_hash_fkey').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('raw_reads')
    .addForeignKeyConstraint('raw_reads_body_hash_fkey', ['body_hash'], 'raw_bodies', ['body_hash'])
    .execute();
  await db.schema.alterTable('raw_reads').dropColumn('aged_out').execute();
}
