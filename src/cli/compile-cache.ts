/**
 * V8's compile cache for every process of the command line (docs/running.md, "The compile
 * cache"): the modules, type-stripped and compiled once, are read back by the next
 * process, about 0.2 s of CPU less per start (a nightly `sync`, each Airbyte call, every
 * `runs` or `report`). Node writes what a process compiled when it exits, and reads only
 * what matches the module's source and the process's V8 flags, so an entry left by code
 * since changed is compiled afresh, never run.
 *
 * Where: `NODE_COMPILE_CACHE` when set (the image and the systemd units set it, and Node
 * has then turned the cache on before any module ran); otherwise the user's own cache
 * directory, `$XDG_CACHE_HOME/listings-sync/node-compile-cache` or
 * `~/.cache/listings-sync/node-compile-cache`, never a directory other users can write
 * (Node's own default is one shared `/tmp/node-compile-cache`). `NODE_DISABLE_COMPILE_CACHE=1`
 * turns it off. A directory that cannot be made or written leaves the process as it would
 * be without one: a cache is a speed-up, never a reason to fail.
 */
import { realpathSync } from 'node:fs';
import { enableCompileCache as enableNodeCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';

/**
 * Where `path` really is: its deepest existing ancestor with every symlink resolved, the
 * rest (not made yet) joined on as it is. `/dev/fd/x` is `/proc/<pid>/fd/x`.
 */
export function resolvedPath(
  path: string,
  realpath: (path: string) => string = realpathSync,
): string {
  const rest: string[] = [];
  let at = path;
  for (;;) {
    try {
      return join(realpath(at), ...rest);
    } catch {
      const parent = dirname(at);
      if (parent === at) return path;
      rest.unshift(basename(at));
      at = parent;
    }
  }
}

const underProc = (path: string) => path === '/proc' || path.startsWith('/proc/');

/** The user's own cache directory for it, or undefined where there is no home to put it in. */
export function compileCacheDirectory(
  env: Readonly<Record<string, string | undefined>>,
  home: () => string = homedir,
  realpath: (path: string) => string = realpathSync,
): string | undefined {
  const xdg = env['XDG_CACHE_HOME'];
  let directory: string;
  // The XDG rule: a relative XDG_CACHE_HOME is invalid and ignored.
  if (xdg && isAbsolute(xdg)) directory = join(xdg, 'listings-sync', 'node-compile-cache');
  else {
    let root: string;
    try {
      root = home();
    } catch {
      return undefined;
    }
    if (!isAbsolute(root)) return undefined;
    directory = join(root, '.cache', 'listings-sync', 'node-compile-cache');
  }
  // Node's making of the directory never returns under /proc (it spins, printing nothing):
  // a home or XDG_CACHE_HOME there gets no cache rather than a command that hangs. Through
  // a symlink too: XDG_CACHE_HOME=/dev/fd is /proc/self/fd.
  return underProc(directory) || underProc(resolvedPath(directory, realpath))
    ? undefined
    : directory;
}

/**
 * Turns the cache on for the modules loaded from now on. Node's own rules stay in force:
 * with `NODE_COMPILE_CACHE` set it is on already and this changes nothing, and
 * `NODE_DISABLE_COMPILE_CACHE` keeps it off; a directory Node cannot make or write leaves it
 * off, silently (Node answers with a status, never an exception).
 */
export function enableCompileCache(env: Readonly<Record<string, string | undefined>>): void {
  const directory = compileCacheDirectory(env);
  if (directory !== undefined) enableNodeCompileCache(directory);
}
