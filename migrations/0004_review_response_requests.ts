/**
 * The review-response workflow: every response submitted through
 * `listings-sync api reviews respond` (operation 9) is a `review_response_requests` row,
 * polled by each sync (operation 10) until it is `Completed` or `Failed`; every status
 * seen is a `review_response_request_events` row. A request that ends `Failed` raises an
 * alert of kind `review_response_failed`, which names its request in `alerts.request_id`.
 *
 * Never edit this file once it has landed: add `0005_….ts` instead.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('review_response_requests')
    // The upstream types it uuid and serves numbers: kept as text.
    .addColumn('request_id', 'text', (c) => c.primaryKey())
    .addColumn('account_name', 'text', (c) =>
      c.notNull().references('accounts.name').onUpdate('cascade'),
    )
    .addColumn('business_id', 'bigint', (c) => c.notNull())
    .addColumn('review_id', 'uuid', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('submitted_at', 'timestamptz', (c) => c.notNull())
    .addColumn('status_checked_at', 'timestamptz')
    .addColumn('completed_at', 'timestamptz')
    .addColumn('last_error', 'text')
    .execute();
  // What every sync polls: the requests not yet Completed or Failed.
  await db.schema
    .createIndex('review_response_requests_open_idx')
    .on('review_response_requests')
    .columns(['account_name', 'business_id'])
    .where(sql.ref('completed_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('review_response_requests_review_idx')
    .on('review_response_requests')
    .column('review_id')
    .execute();

  await db.schema
    .createTable('review_response_request_events')
    .addColumn('request_id', 'text', (c) =>
      c.notNull().references('review_response_requests.request_id').onDelete('cascade'),
    )
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('previous_status', 'text')
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('review_response_request_events_pkey', [
      'request_id',
      'observed_at',
      'status',
    ])
    .execute();

  await db.schema.alterTable('alerts').addColumn('request_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('alerts').dropColumn('request_id').execute();
  await db.schema.dropTable('review_response_request_events').execute();
  await db.schema.dropTable('review_response_requests').execute();
}
