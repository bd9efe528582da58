/**
 * One descriptor per stream (src/streams/index.ts): what iterates streams derives from the
 * list, and the list says the same things the code did when each of them had its own.
 *
 * The one file that pins every list a stream appears in (docs/contributing.md, "Adding a
 * stream", step 8): a new stream adds its name to each list here, and a reviewer sees it in
 * every one. That includes the in-place replay's tables (`REPLAY_TABLES`,
 * src/replay/tables.ts), assembled from the writers' own entries (each `StreamWriter`'s
 * `replay`, in `STREAM_WRITERS` order) and the tables no stream writes. Their order is the
 * order the scratch schema is seeded in and the reverse of the order the merge deletes in
 * (docs/replay.md, "Replay in place"): parents before their children, for their foreign
 * keys. `REPLAY_ORDER` below is the order the in-place replay had when every entry was
 * written out in replay/tables.ts; a writer added or moved changes it on purpose, here too.
 */
import { describe, expect, it } from 'vitest';
import type { Review } from '../../src/api/index.ts';
import { OPERATIONS } from '../../src/api/index.ts';
import { CONFIG_VARIABLES } from '../../src/config/index.ts';
import { REPLAY_TABLES } from '../../src/replay/tables.ts';
import {
  ANSWER_READS,
  BUSINESS_READS,
  BUSINESS_STREAMS,
  CATALOG_STREAMS,
  DAILY_READS,
  quarantineStream,
  RECORD_STREAMS,
  REMOVAL_STREAMS,
  removalPolicy,
  replayRule,
  STREAM_DESCRIPTORS,
  STREAMS,
  type StreamDescriptor,
  streamOfQuarantined,
  streamRecords,
} from '../../src/streams/index.ts';
import { STREAM_WRITERS, WRITE_ORDER } from '../../src/warehouse/write/stream-writers.ts';

const REPLAY_ORDER = [
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
  'rank_months_past',
  'rank_months_current',
  'rank_latest',
  'visibility_months',
  'business_answers',
  'quarantine',
];

describe('stream descriptors', () => {
  it('list the streams a run fetches, in their order', () => {
    expect(STREAMS).toEqual([
      'businesses',
      'listings',
      'reviews',
      'rankings',
      'keywords',
      'reference',
    ]);
    expect(BUSINESS_STREAMS).toEqual(['businesses', 'listings', 'reviews', 'rankings', 'keywords']);
  });

  it('give the answers record its reads, and the daily ones', () => {
    expect(ANSWER_READS).toEqual([
      'business',
      'listings',
      'reviews',
      'socials',
      'rankings',
      'keywords',
    ]);
    expect(DAILY_READS).toEqual(['listings', 'rankings']);
  });

  it('hold on a volume drop exactly the streams whose reads mark rows gone', () => {
    expect(STREAMS.filter((s) => removalPolicy(s) === 'held-on-volume-drop')).toEqual([
      'listings',
      'reviews',
      'keywords',
    ]);
  });

  it('give the record streams their writers, in write order: keywords before ranks', () => {
    expect(RECORD_STREAMS.map((d) => d.name)).toEqual([
      'listings',
      'reviews',
      'rankings',
      'keywords',
    ]);
    expect(Object.keys(STREAM_WRITERS)).toEqual(['listings', 'reviews', 'keywords', 'rankings']);
    expect(REMOVAL_STREAMS).toEqual(['listings', 'reviews', 'keywords']);
  });

  it('quarantine a refused record under the names it always had', () => {
    expect(BUSINESS_READS.map((entry) => [entry.read, quarantineStream(entry)])).toEqual([
      ['business', 'businesses'],
      ['listings', 'listings'],
      ['reviews', 'reviews'],
      ['socials', 'social'],
      ['rankings', 'rankings'],
      ['keywords', 'keywords'],
    ]);
    expect(streamOfQuarantined('social')).toBe('reviews');
    expect(streamOfQuarantined('reviews')).toBe('reviews');
    expect(streamOfQuarantined('credential')).toBeUndefined();
  });

  it("build a stream's records from its reads: both review categories in one list", () => {
    for (const d of RECORD_STREAMS as readonly StreamDescriptor[]) {
      // A stream of several reads says how they make one list.
      expect(d.reads.length === 1 || d.records !== undefined, d.name).toBe(true);
    }
    const item = (id: string, category: 'review' | 'social') => ({ id, category }) as Review;
    expect(
      streamRecords('reviews', {
        reviews: [item('a', 'review'), item('b', 'review')],
        socials: [item('b', 'social'), item('c', 'social')],
      }).map((r) => [r.id, r.category]),
    ).toEqual([
      ['a', 'review'],
      ['b', 'review'],
      ['c', 'social'],
    ]);
    const keyword = { id: 7 };
    expect(streamRecords('keywords', { keywords: [keyword] })).toEqual([keyword]);
  });

  it('replay the reference data only from a run that read it', () => {
    expect(STREAMS.filter((s) => replayRule(s) === 'run-reads')).toEqual(['reference']);
  });

  it('name real operations and settings', () => {
    for (const d of STREAM_DESCRIPTORS as readonly StreamDescriptor[]) {
      for (const op of [...d.reads.map((r) => r.operation), ...(d.runOperations ?? [])]) {
        expect(OPERATIONS, `${d.name}: ${op}`).toContain(op);
      }
      for (const bound of d.bounds)
        expect(CONFIG_VARIABLES, `${d.name}: ${bound}`).toContain(bound);
      expect(d.reads.length > 0, d.name).toBe(d.scope === 'business');
    }
  });

  it('give the Airbyte catalog its streams, each with a primary key of its own fields', () => {
    expect(CATALOG_STREAMS.map((s) => s.name)).toEqual([
      'businesses',
      'listings',
      'reviews',
      'review_responses',
      'rankings',
      'keywords',
      'countries',
      'states',
      'sub_categories',
    ]);
    for (const s of CATALOG_STREAMS) {
      const fields = Object.keys(s.schema.shape);
      for (const [key] of s.primaryKey) expect(fields, s.name).toContain(key);
      if (s.cursor) expect(fields, s.name).toContain(s.cursor);
    }
  });
});

describe('the in-place replay tables', () => {
  it('keep their order: parents before children', () => {
    expect(REPLAY_TABLES.map((e) => e.table)).toEqual(REPLAY_ORDER);
  });

  it('hold each writer its entries together, in write order', () => {
    const fromWriters = WRITE_ORDER.flatMap(({ writer }) => writer.replay.map((e) => e.table));
    const start = REPLAY_ORDER.indexOf('listings');
    expect(REPLAY_ORDER.slice(start, start + fromWriters.length)).toEqual(fromWriters);
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
