/**
 * The documented views (docs/warehouse.md, "Views": the BI views and the local-SEO views)
 * and the tables each reads, through any view it reads in turn: what a lineage catalog
 * shows upstream of a view (docs/lineage.md, "Views"). Declared once, here; a test reads
 * the dependencies of a migrated warehouse (pg_depend over pg_rewrite) and fails when a
 * migration changes what a view reads without this list (test/lineage/views.test.ts).
 */
export const VIEW_TABLES = {
  v_rank_daily: ['rank_days', 'rank_months_current', 'rank_months_past', 'rank_series'],
  v_rank_latest: ['rank_latest', 'rank_series'],
  v_listing_accuracy: ['businesses', 'listings'],
  v_listing_accuracy_daily: ['listing_accuracy_days'],
  v_newly_inaccurate: ['alerts', 'businesses', 'listings'],
  v_review_daily: ['review_responses', 'reviews'],
  v_review_response_sla: ['businesses', 'review_responses', 'reviews'],
  v_visibility_daily: ['rank_days', 'visibility_months'],
  v_listing_fixes: ['listing_fixes'],
  v_listing_field_accuracy_daily: ['listing_accuracy_days'],
  v_review_velocity_weekly: ['review_responses', 'reviews'],
  v_location_scorecard: [
    'businesses',
    'listings',
    'review_backlog',
    'review_responses',
    'reviews',
    'visibility_months',
  ],
} as const satisfies Record<string, readonly string[]>;

export type ViewName = keyof typeof VIEW_TABLES;
export const VIEW_NAMES = Object.keys(VIEW_TABLES) as ViewName[];
