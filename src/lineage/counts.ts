/** What a run's counters say it read and wrote, for its last event (src/lineage/run.ts). */

/** The operations called between two snapshots of the client's counters (`byOperation`). */
export function calledOperations(
  before: Readonly<Record<string, Readonly<Record<string, number>>>>,
  after: Readonly<Record<string, Readonly<Record<string, number>>>>,
): string[] {
  const total = (outcomes: Readonly<Record<string, number>> | undefined) =>
    Object.values(outcomes ?? {}).reduce((sum, n) => sum + n, 0);
  return Object.keys(after).filter(
    (operation) => total(after[operation]) > total(before[operation]),
  );
}

/** Rows a run wrote to each table: inserted, updated, deleted and moved (unchanged are not). */
export function rowsWritten(
  tables: Readonly<
    Record<string, { inserted: number; updated: number; deleted: number; moved?: number }>
  >,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(tables).map(([table, c]) => [
      table,
      c.inserted + c.updated + c.deleted + (c.moved ?? 0),
    ]),
  );
}
