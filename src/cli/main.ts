#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=256 --heap-growing-percent=50 --liftoff-only
/**
 * The process entry of the command line (the program itself is src/cli/program.ts). It
 * first turns on V8's compile cache (docs/running.md, "The compile cache"), then loads the
 * program: only modules loaded after that are read from the cache, so this one imports
 * statically only the two small modules it needs for that.
 */
import { processEnvironment } from '../config/environment.ts';
import { enableCompileCache } from './compile-cache.ts';

if (import.meta.main) {
  enableCompileCache(processEnvironment());
  const [{ runProcess }, { main }] = await Promise.all([
    import('./process-io.ts'),
    import('./program.ts'),
  ]);
  await runProcess(main);
}
