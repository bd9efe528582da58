/**
 * How the embedded PostgreSQL (PGlite) is started: its memory settings (docs/sizing.md,
 * "Embedded (PGlite)").
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';

/**
 * PGlite's PostgreSQL keeps its shared memory in the WebAssembly heap, sized by
 * PostgreSQL's defaults for a server of 100 connections with a 128 MB buffer pool: a heap
 * of 188 MB, most of it resident, for one process that is its only client. 16 MB of
 * buffers and 8 connection slots keep the heap at its floor (128 MB, the module's declared
 * minimum) and touch a fraction of it.
 */
export const PGLITE_SETTINGS: readonly string[] = ['shared_buffers=16MB', 'max_connections=8'];

const asArguments = (settings: readonly string[]) => settings.flatMap((s) => ['-c', s]);

/**
 * The options of `PGlite.create` for a warehouse. The settings go to initdb too, so that a
 * new data directory's postgresql.conf says the same and initdb's own backend runs in the
 * smaller heap; and to every start, so that a directory created before them (or by a
 * plain `PGlite.create()`) runs with them as well.
 */
export function pgliteStartOptions(loadDataDir?: Blob): PGliteOptions {
  return {
    loadDataDir,
    startParams: [...PGlite.defaultStartParams, ...asArguments(PGLITE_SETTINGS)],
    initDbStartParams: asArguments(PGLITE_SETTINGS),
  };
}
