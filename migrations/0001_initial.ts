/**
 * The warehouse contract of design.md: every table, key and BI index.
 *
 * Never edit this file once it has landed: add `0002_….ts` instead. It names no schema,
 * so it lands in the connection's `search_path` (tests give every file its own schema),
 * and it uses nothing PGlite lacks.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('user_email', 'text', (c) => c.notNull())
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('last_synced_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('businesses')
    .addColumn('business_id', 'bigint', (c) => c.primaryKey())
    .addColumn('account_name', 'text', (c) =>
      c.notNull().references('accounts.name').onUpdate('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('street', 'text')
    .addColumn('city', 'text')
    .addColumn('state_name', 'text')
    .addColumn('postal_code', 'text')
    .addColumn('phone', 'text')
    .addColumn('latitude', 'double precision')
    .addColumn('longitude', 'double precision')
    .addColumn('biz_url', 'text')
    .addColumn('owner_first_name', 'text')
    .addColumn('owner_last_name', 'text')
    .addColumn('facebook_url', 'text')
    .addColumn('twitter_url', 'text')
    .addColumn('description', 'text')
    .addColumn('tagline', 'text')
    .addColumn('storecode', 'text')
    .addColumn('additional_categories', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('business_hours', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('hide_address', 'boolean')
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('archived_at', 'timestamptz')
    .addColumn('profile_changed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('profile_first_read_at', 'timestamptz')
    .addColumn('listings_first_synced_at', 'timestamptz')
    .addColumn('reviews_first_synced_at', 'timestamptz')
    .addColumn('rankings_first_synced_at', 'timestamptz')
    .addColumn('keywords_first_synced_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('businesses_account_name_idx')
    .on('businesses')
    .column('account_name')
    .execute();

  await db.schema
    .createTable('business_versions')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('profile', 'jsonb', (c) => c.notNull())
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('business_versions_pkey', ['business_id', 'observed_at'])
    .execute();

  await db.schema
    .createTable('listings')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('listing_id', 'bigint', (c) => c.notNull())
    .addColumn('site_name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('sync_status', 'text')
    .addColumn('order_status', 'text')
    .addColumn('name', 'text')
    .addColumn('name_valid', 'boolean')
    .addColumn('phone', 'text')
    .addColumn('phone_valid', 'boolean')
    .addColumn('street', 'text')
    .addColumn('city', 'text')
    .addColumn('state', 'text')
    .addColumn('postal_code', 'text')
    .addColumn('address_valid', 'boolean')
    .addColumn('live_link', 'text')
    .addColumn('claimed', 'boolean')
    .addColumn('has_site_credentials', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('status_changed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('removed_at', 'timestamptz')
    .addPrimaryKeyConstraint('listings_pkey', ['business_id', 'listing_id'])
    .execute();
  // "Listings by status" across businesses, and per site.
  await db.schema
    .createIndex('listings_status_idx')
    .on('listings')
    .columns(['status', 'business_id'])
    .execute();
  await db.schema
    .createIndex('listings_site_name_idx')
    .on('listings')
    .column('site_name')
    .execute();

  await db.schema
    .createTable('listing_status_history')
    .addColumn('business_id', 'bigint', (c) => c.notNull())
    .addColumn('listing_id', 'bigint', (c) => c.notNull())
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('site_name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('previous_status', 'text')
    .addColumn('sync_status', 'text')
    .addColumn('name_valid', 'boolean')
    .addColumn('phone_valid', 'boolean')
    .addColumn('address_valid', 'boolean')
    .addColumn('claimed', 'boolean')
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('listing_status_history_pkey', [
      'business_id',
      'listing_id',
      'observed_at',
    ])
    .addForeignKeyConstraint(
      'listing_status_history_listing_fkey',
      ['business_id', 'listing_id'],
      'listings',
      ['business_id', 'listing_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('listing_status_history_observed_at_idx')
    .on('listing_status_history')
    .columns(['observed_at', 'status'])
    .execute();

  await db.schema
    .createTable('reviews')
    .addColumn('review_id', 'uuid', (c) => c.primaryKey())
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('site_name', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull().check(sql`category in ('review', 'social')`))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('author_name', 'text')
    .addColumn('author_avatar', 'text')
    .addColumn('rating', 'numeric')
    .addColumn('reviewed_at', 'timestamptz')
    .addColumn('reviewed_at_precision', 'text')
    .addColumn('permalink', 'text')
    .addColumn('likes_count', 'integer')
    .addColumn('likes_change', 'integer')
    .addColumn('can_respond', 'boolean', (c) => c.notNull())
    .addColumn('response_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('removed_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('reviews_business_reviewed_at_idx')
    .on('reviews')
    .columns(['business_id', 'reviewed_at'])
    .execute();

  await db.schema
    .createTable('review_versions')
    .addColumn('review_id', 'uuid', (c) =>
      c.notNull().references('reviews.review_id').onDelete('cascade'),
    )
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('rating', 'numeric')
    .addColumn('title', 'text')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('likes_count', 'integer')
    .addColumn('likes_change', 'integer')
    .addColumn('response_count', 'integer', (c) => c.notNull())
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('review_versions_pkey', ['review_id', 'observed_at'])
    .execute();

  await db.schema
    .createTable('review_responses')
    .addColumn('response_id', 'uuid', (c) => c.primaryKey())
    .addColumn('review_id', 'uuid', (c) =>
      c.notNull().references('reviews.review_id').onDelete('cascade'),
    )
    .addColumn('business_id', 'bigint', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('content', 'text')
    .addColumn('author_name', 'text')
    .addColumn('author_avatar', 'text')
    .addColumn('responded_at', 'timestamptz')
    .addColumn('responded_at_precision', 'text')
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('removed_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('review_responses_review_id_idx')
    .on('review_responses')
    .column('review_id')
    .execute();
  await db.schema
    .createIndex('review_responses_business_id_idx')
    .on('review_responses')
    .column('business_id')
    .execute();

  // The primary key is the BI index for rank history by business, keyword, site and day.
  await db.schema
    .createTable('rank_observations')
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('keyword', 'text', (c) => c.notNull())
    .addColumn('site', 'text', (c) => c.notNull())
    .addColumn('observed_on', 'date', (c) => c.notNull())
    .addColumn('rank', 'integer')
    .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('run_id', 'uuid')
    .addPrimaryKeyConstraint('rank_observations_pkey', [
      'business_id',
      'keyword',
      'site',
      'observed_on',
    ])
    .execute();
  // Day-range dashboards across all businesses ("yesterday's ranks").
  await db.schema
    .createIndex('rank_observations_observed_on_idx')
    .on('rank_observations')
    .columns(['observed_on', 'site'])
    .execute();

  await db.schema
    .createTable('keywords')
    .addColumn('keyword_id', 'bigint', (c) => c.primaryKey())
    .addColumn('business_id', 'bigint', (c) =>
      c.notNull().references('businesses.business_id').onDelete('cascade'),
    )
    .addColumn('keyword', 'text', (c) => c.notNull())
    .addColumn('city', 'text')
    .addColumn('state', 'text')
    .addColumn('is_primary', 'boolean')
    .addColumn('archived', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_seen_at', 'timestamptz', (c) => c.notNull())
    .addColumn('deleted_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('keywords_business_id_idx')
    .on('keywords')
    .columns(['business_id', 'keyword'])
    .execute();

  await db.schema
    .createTable('countries')
    .addColumn('country_id', 'bigint', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('states')
    .addColumn('state_id', 'bigint', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('iso', 'text')
    .addColumn('country_id', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('states_country_id_idx').on('states').column('country_id').execute();
  await db.schema
    .createTable('sub_categories')
    .addColumn('sub_category_id', 'bigint', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('webhook_events')
    .addColumn('event_key', 'text', (c) => c.primaryKey())
    .addColumn('event', 'text')
    .addColumn('account_id', 'bigint')
    .addColumn('location_id', 'text')
    .addColumn('emitted_at', 'timestamptz')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_events_event_received_at_idx')
    .on('webhook_events')
    .columns(['event', 'received_at'])
    .execute();

  await db.schema
    .createTable('social_post_boosts')
    .addColumn('ad_run_id', 'text', (c) => c.primaryKey())
    .addColumn('event_key', 'text', (c) =>
      c.notNull().references('webhook_events.event_key').onDelete('cascade'),
    )
    .addColumn('account_id', 'bigint')
    .addColumn('location_id', 'text')
    .addColumn('post_id', 'text')
    .addColumn('social_profile_id', 'text')
    .addColumn('platform', 'text')
    .addColumn('boost_state', 'text')
    .addColumn('is_boost', 'boolean')
    .addColumn('emitted_at', 'timestamptz')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('alerts')
    .addColumn('alert_id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.notNull().unique())
    .addColumn('account_name', 'text')
    .addColumn('business_id', 'bigint', (c) => c.notNull())
    .addColumn('listing_id', 'bigint')
    .addColumn('site_name', 'text')
    .addColumn('previous_status', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('detected_at', 'timestamptz', (c) => c.notNull())
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('run_id', 'uuid')
    .execute();
  // The dispatcher's queue: undelivered alerts, oldest first.
  await db.schema
    .createIndex('alerts_pending_idx')
    .on('alerts')
    .column('detected_at')
    .where(sql.ref('delivered_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('alerts_business_idx')
    .on('alerts')
    .columns(['business_id', 'detected_at'])
    .execute();

  await db.schema
    .createTable('sync_runs')
    .addColumn('run_id', 'uuid', (c) => c.primaryKey())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .check(sql`status in ('running', 'succeeded', 'partial', 'failed', 'interrupted')`),
    )
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('streams', 'jsonb', (c) => c.notNull())
    .addColumn('accounts', 'jsonb', (c) => c.notNull())
    .addColumn('shard', 'text')
    .addColumn('stats', 'jsonb')
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createIndex('sync_runs_started_at_idx')
    .on('sync_runs')
    .column('started_at')
    .execute();

  await db.schema
    .createTable('quarantine')
    .addColumn('quarantine_id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('run_id', 'uuid', (c) => c.notNull())
    .addColumn('account_name', 'text', (c) => c.notNull())
    .addColumn('business_id', 'bigint')
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('location', 'text')
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb')
    .addColumn('quarantined_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('quarantine_run_id_idx').on('quarantine').column('run_id').execute();
  await db.schema
    .createIndex('quarantine_business_id_idx')
    .on('quarantine')
    .columns(['business_id', 'quarantined_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'quarantine',
    'sync_runs',
    'alerts',
    'social_post_boosts',
    'webhook_events',
    'sub_categories',
    'states',
    'countries',
    'keywords',
    'rank_observations',
    'review_responses',
    'review_versions',
    'reviews',
    'listing_status_history',
    'listings',
    'business_versions',
    'businesses',
    'accounts',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
