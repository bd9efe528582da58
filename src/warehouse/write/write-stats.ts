/** What a writer did, per table: the numbers a run reports and the tests compare. */
export interface TableCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Rows soft-deleted (archived_at, removed_at, deleted_at set) or deleted. */
  deleted: number;
  /**
   * Rows taken over from another business (keywords.ts: a keyword the upstream moved),
   * counted here rather than as updated, nor, when the other business marked it gone in
   * the same run, as deleted. Absent: none.
   */
  moved?: number;
}

/** Table name → counts. History and outbox tables count what they appended as inserted. */
export type WriteStats = Record<string, TableCounts>;

export function emptyCounts(): TableCounts {
  return { inserted: 0, updated: 0, unchanged: 0, deleted: 0 };
}

/** Adds `counts` to the entry for `table` in `stats` (creating it), and returns `stats`. */
export function addCounts(
  stats: WriteStats,
  table: string,
  counts: Partial<TableCounts>,
): WriteStats {
  const entry = stats[table] ?? emptyCounts();
  entry.inserted += counts.inserted ?? 0;
  entry.updated += counts.updated ?? 0;
  entry.unchanged += counts.unchanged ?? 0;
  entry.deleted += counts.deleted ?? 0;
  if (counts.moved) entry.moved = (entry.moved ?? 0) + counts.moved;
  stats[table] = entry;
  return stats;
}

/** Adds every count of `from` into `into`, and returns `into`. */
export function mergeWriteStats(into: WriteStats, from: WriteStats): WriteStats {
  for (const [table, counts] of Object.entries(from)) addCounts(into, table, counts);
  return into;
}
