/**
 * What `replay --in-place` does with one table (docs/replay.md, "Replay in place"): how
 * the scratch schema starts (its `seed`) and how the rebuilt rows reach the live table
 * (its `merge`), and the helpers the entries are written with. Each stream writer holds
 * the entries of the tables it writes (`StreamWriter.replay`, write-context.ts);
 * replay/tables.ts puts them in order with the tables no stream writes. This module
 * imports no writer, so the writers can import it without a cycle.
 */
import type { Db } from '../database.ts';

/** How a row finds the business it belongs to: its own `business_id`, or its parent row's. */
export type Owner = 'business_id' | { parent: string; on: string };

/**
 * A rebuilt business's rows as they stood before its window (`t`: the live row; `w`: its
 * business's window, `window_start` and `window_day`, its UTC day).
 */
export interface WoundBack {
  /**
   * A row is kept when `column` is before its business's window: before its start (`time`)
   * or before its first UTC day (`day`). Null: every row of the business is kept.
   */
  before: { column: string; by: 'time' | 'day' } | null;
  /** A row is kept only when its parent row was: the scratch `table` holds its `on`. */
  parent: { table: string; on: string } | null;
  /** The live relation the rows are read from, when not the table itself (a view over it). */
  source?: string;
  /**
   * The row's content wound back to its last version before the window (`v`): the
   * `history` row of the same `match` columns with the latest `observed_at`. `fields` are
   * taken from it (as they are now when there is none); `profile`: every column not in
   * `overrides`, from the version's `profile` document (`p`), where it has the key.
   */
  lastVersion?: {
    history: string;
    match: readonly string[];
    fields: readonly string[] | 'profile';
  };
  /** Columns written otherwise than as they are now: raw SQL over `t`, `w`, `v` and `p`. */
  overrides?: Readonly<Record<string, string>>;
}

export type Seed =
  /** Every live row as it is: the replay reads it and does not rebuild it per business. */
  | 'copy'
  | WoundBack
  /** Computed from the tables seeded before it (`db` works in the scratch schema). */
  | { derive: (db: Db, scratch: string) => Promise<void> };

export type Merge =
  /**
   * For each business of the merge, the rebuilt rows upserted by key and the live rows the
   * rebuild lacks deleted. `keepLive`: columns no replay rebuilds, taken from the live row.
   * `keepLiveUnlessChanged`: columns the replay cannot reproduce exactly (a time the live
   * run took from its own clock), taken from the live row unless another column changed.
   * `keepLiveSameDay`: times the replay knows to the night only (it archives at the last
   * read's time, the live run a moment after), taken from the live row when both fall on
   * the same UTC day. `liveWhereContested`: the rows of a business that holds or carries
   * a contested id (`ReplayTable.sharedId`) stay as the live warehouse has them, as they
   * record or count what its live writes took.
   */
  | {
      kind: 'per business';
      keepLive?: readonly string[];
      keepLiveUnlessChanged?: readonly string[];
      keepLiveSameDay?: readonly string[];
      liveWhereContested?: boolean;
    }
  /**
   * The rows of the replayed runs (`run_id`), of the merged businesses or of none: a live
   * row the rebuild has too (equal on every column but the id and `liveTimes`) stays as it
   * is, id included; the others are deleted and the rebuild's added. `liveTimes`: times
   * the rebuild cannot reproduce; a live row takes the rebuild's only where it has none.
   */
  | { kind: 'per run'; liveTimes: readonly string[] }
  /** Every rebuilt row upserted by key, none deleted; `leaveOut`: live rows keep their own. */
  | { kind: 'upsert'; leaveOut: readonly string[] }
  /**
   * A rebuilt row the live table lacks (none has its `sameAs`) is added closed: `delivered`
   * set to the merge's time, `note` saying why it was never sent. Live rows stay as they are.
   */
  | { kind: 'add closed'; sameAs: string; delivered: string; note: string };

export interface ReplayTable {
  table: string;
  /** The primary key: what the merge matches a rebuilt row with a live one by. */
  key: readonly string[];
  /** How a row finds its business, for the tables rebuilt per business. */
  owner?: Owner;
  /**
   * The column a sequence numbers. Seeded, the scratch sequence starts past every live id,
   * so an id the replay gives is never a live row's. With `sameRowAs`, a rebuilt row keeps
   * the id of the live row equal on those columns (BI may hold it) and the merge writes the
   * ids; without it, the merge never writes the column: a live row keeps its id, an added
   * row takes the live sequence's next.
   */
  ids?: { column: string; sameRowAs?: readonly string[] };
  /** What the scratch schema starts with; none: the replay writes every row. */
  seed?: Seed;
  /** How the rebuilt rows reach the live table; none: they do not. */
  merge?: Merge;
  /**
   * The key is an id the upstream may show under two businesses (docs/warehouse.md, "Ids
   * under two businesses"), and `location` the first word of its quarantine rows'
   * `location` (`reviews <id>`). Where the live warehouse holds such an id under another
   * business than the rebuild, the id is contested: the merge leaves every row that names
   * it (the row, its children, the quarantine rows about it) as the live warehouse has
   * them, and a rebuilt row that only refers to it takes the live row's reference.
   */
  sharedId?: { location: string };
}

/** A time set inside the window was not set before it. */
export const setBefore = (column: string) =>
  `case when t.${column} < w.window_start then t.${column} end`;
/** Before its window, a row removed inside it was still there. */
export const REMOVED_BEFORE = setBefore('removed_at');
/** A row is written (and `last_seen_at` moved) only when its content changes. */
export const SEEN_BEFORE = "least(t.last_seen_at, w.window_start - interval '1 millisecond')";
/**
 * A row last written before the window held then what it holds now; one written inside
 * it is written again by the first night of the window that reads it (an empty hash never
 * matches), which is what makes its later nights compare as they did.
 */
export const HASH_BEFORE =
  "case when t.last_seen_at < w.window_start then t.content_hash else '' end";

/** The parent a row of a business is seeded with (`WoundBack.parent`). */
export const OF_BUSINESS = { table: 'businesses', on: 'business_id' } as const;

export const PER_BUSINESS: Merge = { kind: 'per business' };
export const time = (column: string) => ({ column, by: 'time' as const });
export const day = (column: string) => ({ column, by: 'day' as const });

/**
 * A table rebuilt per business whose rows from before the window (`before`: an observation
 * time or day) are kept as they are, when their parent (by default their business) was.
 */
export function history(
  table: string,
  key: readonly string[],
  before: WoundBack['before'],
  owner: Owner = 'business_id',
  parent: WoundBack['parent'] = OF_BUSINESS,
): ReplayTable {
  return { table, key, owner, seed: { before, parent }, merge: PER_BUSINESS };
}
