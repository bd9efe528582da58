/**
 * How the embedded PostgreSQL (PGlite) is started: its memory settings, and the cluster
 * a new data directory starts from (docs/sizing.md, "Embedded (PGlite)").
 *
 * `node src/warehouse/driver/pglite/options.ts` rebuilds that cluster for the installed PGlite
 * (after upgrading it, or changing `PGLITE_SETTINGS`): see `pgliteCluster`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
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
 * The options of `PGlite.create` for a warehouse in `dataDir` (undefined: in memory). The
 * settings go to every start, so that a directory created before them (or by a plain
 * `PGlite.create()`) runs with them; and to initdb, where it still runs. A directory that
 * holds no database yet, given no `loadDataDir`, starts from `pgliteCluster()`.
 */
export function pgliteStartOptions(
  dataDir: string | undefined,
  loadDataDir: Blob | undefined,
): PGliteOptions {
  const empty = dataDir === undefined || !existsSync(join(dataDir, 'PG_VERSION'));
  return {
    loadDataDir: loadDataDir ?? (empty ? pgliteCluster() : undefined),
    startParams: [...PGlite.defaultStartParams, ...asArguments(PGLITE_SETTINGS)],
    initDbStartParams: asArguments(PGLITE_SETTINGS),
  };
}

/** The installed PGlite's release, from its package.json (outside its exports map). */
export function pgliteRelease(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return String(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version);
}

/** Where the cluster made by PGlite `release` is kept: beside this file. */
export function pgliteClusterPath(release = pgliteRelease()): string {
  return join(dirname(fileURLToPath(import.meta.url)), `cluster-${release}.tar.gz`);
}

let cluster: Blob | null | undefined;

/**
 * The cluster a new data directory starts from, made once by initdb with our settings;
 * undefined when there is none for the installed PGlite (then PGlite runs initdb).
 *
 * PGlite's initdb runs a second PostgreSQL instance beside the one it starts, and copies
 * that instance's whole 128 MB heap before each of initdb's backends: about 250 MB more
 * than the warehouse needs after, on a command's first open of a new directory (`migrate`
 * peaked near 600 MB for it). What it makes is the same every time for one PGlite release
 * and our settings, but for its system identifier (random per initdb, used by replication,
 * which PGlite has none of). So it is made once, by this file's script, and kept in the
 * repository, named by the PGlite release that made it: an upgraded PGlite without its
 * cluster falls back to initdb (heavier, never wrong), and
 * test/warehouse/pglite-cluster.test.ts fails until the file is rebuilt.
 */
export function pgliteCluster(): Blob | undefined {
  if (cluster === undefined) {
    const path = pgliteClusterPath();
    cluster = existsSync(path) ? new Blob([readFileSync(path)]) : null;
  }
  return cluster ?? undefined;
}

/** initdb with our settings in memory, the data directory dumped and gzipped. */
async function writeCluster(): Promise<string> {
  const pglite = await PGlite.create({
    startParams: [...PGlite.defaultStartParams, ...asArguments(PGLITE_SETTINGS)],
    initDbStartParams: asArguments(PGLITE_SETTINGS),
  });
  try {
    const tar = Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer());
    const path = pgliteClusterPath();
    writeFileSync(path, gzipSync(tar, { level: 9 }));
    return path;
  } finally {
    await pglite.close();
  }
}

if (import.meta.main) {
  process.stdout.write(`Wrote ${await writeCluster()}\n`);
}
