/**
 * V8's compile cache for the image (docs/deploy.md, "The image"). The Dockerfile runs this
 * once at build time with `NODE_COMPILE_CACHE` set, as the runtime user; Node keeps a cache
 * per uid and per V8 flags, so it first re-executes itself with the process entry's flags
 * (bin/listings-sync.mjs), as every command does. Every later process
 * of the image then reads its modules compiled rather than stripping and compiling them:
 * about 0.2 s of CPU less per start (`listings-sync --help` 0.53 → 0.35 s), which a
 * one-shot command (a nightly sync, each Airbyte `spec`/`check`/`discover`/`read`) pays
 * every time. At run time the cache is only read: a module missing from it (a read-only
 * root filesystem) is compiled as it would be without one.
 *
 * It imports every module of src/ and migrations/ and starts none: no module does work on
 * import (the CLI starts only as the process's main module), save the scripts below and
 * this one.
 */
import { readdirSync } from 'node:fs';
import { flushCompileCache, getCompileCacheDir } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ensureNodeFlags } from '../../bin/listings-sync.mjs';

await ensureNodeFlags(import.meta.filename, process.argv.slice(2));
const { yamlParser } = await import('../config/alert-rules.ts');

/** Files run as scripts (`node <file>`), which write when loaded. */
const SCRIPTS = new Set(['config/print-docs-table.ts']);

const SRC = new URL('../', import.meta.url);
const ROOTS = [SRC, new URL('../../migrations/', import.meta.url)];

/** Every `.ts` module below `dir`, as a file URL. */
function modulesIn(dir: URL): URL[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => new URL(`${entry.parentPath}/${entry.name}`, 'file://'))
    .filter((url) => fileURLToPath(url) !== import.meta.filename)
    .filter((url) => !SCRIPTS.has(fileURLToPath(url).slice(fileURLToPath(SRC).length)));
}

const directory = getCompileCacheDir();
if (!directory) {
  process.stderr.write(
    'listings-sync: NODE_COMPILE_CACHE is not set (or its directory cannot be used): ' +
      'nothing to warm. The Dockerfile sets it (docs/deploy.md, "The image").\n',
  );
  process.exitCode = 1;
} else {
  const modules = ROOTS.flatMap(modulesIn);
  for (const url of modules) await import(url.href);
  // Loaded only when a YAML rules file is read, not on import: loaded here so that the
  // cache holds it too.
  yamlParser();
  flushCompileCache();
  process.stdout.write(`compiled ${modules.length} modules into ${directory}\n`);
}
