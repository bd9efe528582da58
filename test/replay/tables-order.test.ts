/**
 * `REPLAY_TABLES` (src/replay/tables.ts) is assembled from the writers' own
 * entries (each `StreamWriter`'s `replay`, in `STREAM_WRITERS` order) and the tables no
 * stream writes. Its order is the order the scratch schema is seeded in and the reverse of
 * the order the merge deletes in (docs/replay.md, "Replay in place"): parents before their
 * children, for their foreign keys. The list below is the order the in-place replay had
 * when every entry was written out in replay/tables.ts; a writer added or moved changes it
 * on purpose, here too.
 */
import { describe, expect, it } from 'vitest';
import { REPLAY_TABLES } from '../../src/replay/tables.ts';
import { WRITE_ORDER } from '../../src/warehouse/stream-writers.ts';

const ORDER = [
  'accounts',
  'countries',
  'states',
  'sub_categories',
  'review_response_requests',
  'review_response_request_events',
  'alerts',
  'businesses',
  'business_versions',
  'listings',
  'listing_status_history',
  'listing_accuracy_days',
  'listing_fixes',
  'reviews',
  'review_versions',
  'review_responses',
  'review_backlog',
  'keywords',
  'rank_series',
  'rank_days',
  'rank_months',
  'rank_latest',
  'visibility_months',
  'business_answers',
  'quarantine',
];

describe('the in-place replay tables', () => {
  it('keep their order: parents before children', () => {
    expect(REPLAY_TABLES.map((e) => e.table)).toEqual(ORDER);
  });

  it('hold each writer its entries together, in write order', () => {
    const fromWriters = WRITE_ORDER.flatMap(({ writer }) => writer.replay.map((e) => e.table));
    const start = ORDER.indexOf('listings');
    expect(ORDER.slice(start, start + fromWriters.length)).toEqual(fromWriters);
  });

  it("wind back each writer's first-synced column of businesses", () => {
    const businesses = REPLAY_TABLES.find((e) => e.table === 'businesses');
    const seed = businesses?.seed;
    const overrides = seed && typeof seed === 'object' && 'overrides' in seed ? seed.overrides : {};
    const setBeforeWindow = (c: string) => `case when t.${c} < w.window_start then t.${c} end`;
    expect(overrides).toMatchObject({
      listings_first_synced_at: setBeforeWindow('listings_first_synced_at'),
      reviews_first_synced_at: setBeforeWindow('reviews_first_synced_at'),
      rankings_first_synced_at: setBeforeWindow('rankings_first_synced_at'),
      keywords_first_synced_at: setBeforeWindow('keywords_first_synced_at'),
    });
  });
});
