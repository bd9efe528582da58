/**
 * What `replay --in-place` does with each table (docs/replay.md, "Replay in place"), one
 * entry per table (`ReplayTable`, replay-table.ts): how the scratch schema is seeded and
 * how the rebuilt rows are merged. Seeding (src/replay/scratch.ts) and the merge
 * (src/replay/merge.ts) read nothing else. A table with no entry is neither
 * seeded nor merged: runs, the raw zone, webhook events and the rest no replay rebuilds.
 *
 * The tables a stream writes have their entries beside their writer (`StreamWriter.replay`,
 * listed here in `STREAM_WRITERS` order, which is the write order); this file holds those
 * of the tables no stream writes. The order is the order of the writes: parents before
 * children, for their foreign keys (the merge deletes in the reverse order), and a table
 * derived from others after them. test/streams/descriptors.test.ts pins it.
 */
import {
  history,
  type Merge,
  type ReplayTable,
  setBefore,
  time,
} from '../warehouse/write/replay-table.ts';
import { WRITE_ORDER } from '../warehouse/write/stream-writers.ts';

/** Reference data, upserted by key; a live row keeps its `updated_at`. */
const REFERENCE: Merge = { kind: 'upsert', leaveOut: ['updated_at'] };

/**
 * Each stream's `businesses.<stream>_first_synced_at` (its writer's `firstSynced`): set
 * inside the window, it was not set before it.
 */
const FIRST_SYNCED_BEFORE: Record<string, string> = Object.fromEntries(
  WRITE_ORDER.flatMap(({ writer }) =>
    writer.firstSynced ? [[writer.firstSynced, setBefore(writer.firstSynced)]] : [],
  ),
);

export const REPLAY_TABLES: readonly ReplayTable[] = [
  { table: 'accounts', key: ['name'], seed: 'copy' },
  { table: 'countries', key: ['country_id'], seed: 'copy', merge: REFERENCE },
  { table: 'states', key: ['state_id'], seed: 'copy', merge: REFERENCE },
  { table: 'sub_categories', key: ['sub_category_id'], seed: 'copy', merge: REFERENCE },
  { table: 'review_response_requests', key: ['request_id'], seed: 'copy' },
  {
    table: 'review_response_request_events',
    key: ['request_id', 'observed_at', 'status'],
    seed: 'copy',
  },
  // Every alert is seeded, so that none is raised twice; each keeps its id and delivery.
  {
    table: 'alerts',
    key: ['alert_id'],
    ids: { column: 'alert_id' },
    seed: 'copy',
    merge: {
      kind: 'add closed',
      sameAs: 'dedupe_key',
      delivered: 'delivered_at',
      note: 'last_error',
    },
  },

  {
    table: 'businesses',
    key: ['business_id'],
    owner: 'business_id',
    seed: {
      before: time('first_seen_at'),
      parent: null,
      lastVersion: { history: 'business_versions', match: ['business_id'], fields: 'profile' },
      // The bookkeeping columns; every other column is the profile a version records.
      overrides: {
        business_id: 't.business_id',
        account_name: 't.account_name',
        first_seen_at: 't.first_seen_at',
        last_seen_at:
          'case when t.last_seen_at < w.window_start then t.last_seen_at else coalesce(v.observed_at, t.first_seen_at) end',
        archived_at: setBefore('archived_at'),
        content_hash: "coalesce(v.content_hash, '')",
        profile_changed_at: 'coalesce(v.observed_at, t.first_seen_at)',
        profile_first_read_at: setBefore('profile_first_read_at'),
        ...FIRST_SYNCED_BEFORE,
        // Set by operation 4, which no read serves: as it is.
        sub_category_name: 't.sub_category_name',
        removals_held: 'null',
      },
    },
    // Set by operation 4, which no read serves: a business first seen in its window keeps it.
    // Archived: the live run's own moment of the night the rebuild archives it too.
    merge: {
      kind: 'per business',
      keepLive: ['sub_category_name'],
      keepLiveSameDay: ['archived_at'],
    },
  },
  history('business_versions', ['business_id', 'observed_at'], time('observed_at')),
  // The stream writers' tables (listings, reviews, keywords, ranks), in write order.
  ...WRITE_ORDER.flatMap(({ writer }) => writer.replay),
  // The answers record, one row per business and read (migration 0022; docs/warehouse.md,
  // "Answers applied"): the replay writes it whole, from its own reads, so nothing is
  // seeded. The only place the in-place replay names its key.
  {
    table: 'business_answers',
    key: ['business_id', 'read'],
    owner: 'business_id',
    // When the record last changed: the live row's time stands while the rebuild agrees.
    // A business whose answer carried a contested id keeps the record of what live took.
    merge: {
      kind: 'per business',
      keepLiveUnlessChanged: ['updated_at'],
      liveWhereContested: true,
    },
  },
  // The replayed runs' quarantine rows, for the merged businesses and the accounts' own.
  {
    table: 'quarantine',
    key: ['quarantine_id'],
    owner: 'business_id',
    ids: { column: 'quarantine_id' },
    // When a record was quarantined, and recovered: the live rows' own times.
    merge: { kind: 'per run', liveTimes: ['quarantined_at', 'recovered_at'] },
  },
];
