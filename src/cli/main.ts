#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=256 --heap-growing-percent=50 --liftoff-only
/**
 * The process entry of the command line (the program itself is src/cli/program.ts). It
 * first turns on V8's compile cache (docs/running.md, "The compile cache"), then loads the
 * program: only modules loaded after that are read from the cache, so this one imports
 * nothing else statically.
 */
import { enableCompileCache } from './compile-cache.ts';

if (import.meta.main) {
  enableCompileCache();
  const [{ runProcess }, { main }] = await Promise.all([
    import('./process-io.ts'),
    import('./program.ts'),
  ]);
  await runProcess(main);
}
