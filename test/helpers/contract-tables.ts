/**
 * The warehouse's public tables (docs/warehouse.md), in dependency order.
 * `rank_observations` is a view over `rank_series` and the history since migration 0005, and
 * `rank_history` a view over `rank_months` since migration 0030, `visibility_days` one over
 * `visibility_months` since 0033; `rank_months` is itself a view over `rank_months_past` and
 * `rank_months_current` since 0040.
 * Only tests and bench/raw-zone.ts read the list, so it lives here; it imports nothing,
 * so a benchmark can import it without the test framework.
 */
export const CONTRACT_TABLES = [
  'accounts',
  'businesses',
  'business_versions',
  'listings',
  'listing_status_history',
  'reviews',
  'review_versions',
  'review_responses',
  'rank_series',
  'rank_months_past',
  'rank_months_current',
  'rank_latest',
  'listing_accuracy_days',
  'listing_fixes',
  'visibility_months',
  'review_backlog',
  'keywords',
  'countries',
  'states',
  'sub_categories',
  'webhook_events',
  'social_post_boosts',
  'alerts',
  'alert_sinks',
  'sync_runs',
  'quarantine',
] as const;
