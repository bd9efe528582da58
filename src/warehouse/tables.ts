/** The warehouse's public tables (docs/warehouse.md), in dependency order. */
export const CONTRACT_TABLES = [
  'accounts',
  'businesses',
  'business_versions',
  'listings',
  'listing_status_history',
  'reviews',
  'review_versions',
  'review_responses',
  'rank_observations',
  'keywords',
  'countries',
  'states',
  'sub_categories',
  'webhook_events',
  'social_post_boosts',
  'alerts',
  'sync_runs',
  'quarantine',
] as const;

export type ContractTable = (typeof CONTRACT_TABLES)[number];
