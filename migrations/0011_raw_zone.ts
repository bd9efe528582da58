/**
 * The raw zone (docs/warehouse.md, "Raw zone"): every upstream answer a sync reads, kept
 * as received (directory credentials replaced by a marker), compressed and addressed by
 * its content, so that `listings-sync replay` can rebuild the warehouse from it and
 * `listings-sync raw show` can say what the upstream answered on a night.
 *
 * `raw_bodies` holds each distinct body once; `raw_reads` is one small row per read that
 * points at it. Not for BI.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('raw_bodies')
    // sha256, lowercase hex, of the body after directory credentials were replaced.
    .addColumn('body_hash', 'text', (c) => c.primaryKey())
    // The node:zlib codec of `bytes`: `br` (brotli).
    .addColumn('encoding', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('bytes', 'bytea', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('raw_reads')
    .addColumn('read_id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('run_id', 'uuid', (c) => c.notNull())
    .addColumn('account_name', 'text', (c) => c.notNull())
    .addColumn('business_id', 'bigint')
    .addColumn('operation', 'text', (c) => c.notNull())
    // The path under /api/v2 and its query, sorted, without auth_token or user_email.
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull().references('raw_bodies.body_hash'))
    .execute();
  await db.schema
    .createIndex('raw_reads_observed_at_idx')
    .on('raw_reads')
    .column('observed_at')
    .execute();
  await db.schema
    .createIndex('raw_reads_business_idx')
    .on('raw_reads')
    .columns(['business_id', 'observed_at'])
    .execute();
  await db.schema.createIndex('raw_reads_run_idx').on('raw_reads').column('run_id').execute();
  // No index on raw_reads.body_hash: it would cost about a third of an unchanged night's
  // raw bytes, and only pruning (RAW_RETENTION_DAYS) asks by it, as one anti-join.
  // Set on a quarantined record that a replay later loaded (docs/warehouse.md).
  await db.schema.alterTable('quarantine').addColumn('recovered_at', 'timestamptz').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('quarantine').dropColumn('recovered_at').execute();
  await db.schema.dropTable('raw_reads').execute();
  await db.schema.dropTable('raw_bodies').execute();
}
