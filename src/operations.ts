/**
 * The upstream's operations, by the names this project gives them (docs/upstream.md, one
 * section each): counters, logs and error messages name them, and the sandbox routes by
 * them. The one list both the client (src/api) and the sandbox (src/sandbox) read; it
 * imports nothing.
 */
export const OPERATIONS = [
  'list_businesses',
  'get_business',
  'get_business_full',
  'create_business',
  'update_business',
  'archive_business',
  'list_listings',
  'list_reviews',
  'respond_to_review',
  'get_response_status',
  'get_rankings',
  'list_keywords',
  'add_keyword',
  'delete_keyword',
  'list_states',
  'list_countries',
  'list_sub_categories',
] as const;
export type OperationName = (typeof OPERATIONS)[number];
