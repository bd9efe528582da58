/**
 * V8's compile cache for every process of the command line (docs/running.md, "The compile
 * cache"): the modules, type-stripped and compiled once, are read back by the next
 * process, about 0.2 s of CPU less per start (a nightly `sync`, each Airbyte call, every
 * `runs` or `report`). Node writes what a process compiled when it exits, and reads only
 * what matches the module's source and the process's V8 flags, so a stale or foreign entry
 * is compiled afresh, never run.
 *
 * Where: `NODE_COMPILE_CACHE` when set (the image and the systemd units set it, and Node
 * has then turned the cache on before any module ran); otherwise the user's own cache
 * directory, `$XDG_CACHE_HOME/listings-sync/node-compile-cache` or
 * `~/.cache/listings-sync/node-compile-cache`, never a directory other users can write
 * (Node's own default is one shared `/tmp/node-compile-cache`). `NODE_DISABLE_COMPILE_CACHE=1`
 * turns it off. A directory that cannot be made or written leaves the process as it would
 * be without one: a cache is a speed-up, never a reason to fail.
 */
import { enableCompileCache as enableNodeCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The user's own cache directory for it, or undefined where there is no home to put it in. */
export function compileCacheDirectory(
  env: Readonly<Record<string, string | undefined>>,
  home: () => string = homedir,
): string | undefined {
  const xdg = env['XDG_CACHE_HOME'];
  // The XDG rule: a relative XDG_CACHE_HOME is invalid and ignored.
  if (xdg && isAbsolute(xdg)) return join(xdg, 'listings-sync', 'node-compile-cache');
  let root: string;
  try {
    root = home();
  } catch {
    return undefined;
  }
  return isAbsolute(root) ? join(root, '.cache', 'listings-sync', 'node-compile-cache') : undefined;
}

/** Turns the cache on for the modules loaded from now on; a no-op where it cannot be. */
export function enableCompileCache(
  env: Readonly<Record<string, string | undefined>> = process.env,
): void {
  // Turned off; or set, and Node turned it on before any module ran.
  if (env['NODE_DISABLE_COMPILE_CACHE'] || env['NODE_COMPILE_CACHE']) return;
  const directory = compileCacheDirectory(env);
  if (directory === undefined) return;
  try {
    enableNodeCompileCache(directory);
  } catch {
    // An older Node without it: run uncached.
  }
}
