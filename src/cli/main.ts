/**
 * The program's process side, loaded by the process entry (bin/listings-sync.mjs, which
 * checks the Node version and the V8 flags first; docs/running.md, "One runtime"; the
 * program itself is src/cli/program.ts). `start` first turns on V8's compile cache
 * (docs/running.md, "The compile cache"), then loads the program: only modules loaded after
 * that are read from the cache, so this one imports statically only the two small modules
 * it needs for that.
 *
 * Started directly (`node src/cli/main.ts …`), it goes through the entry's flag check too:
 * the process re-executes itself with the flags it lacks, then starts.
 */
import { processEnvironment } from '../config/environment.ts';
import { enableCompileCache } from './compile-cache.ts';

export async function start(): Promise<void> {
  enableCompileCache(processEnvironment());
  const [{ runProcess }, { main }] = await Promise.all([
    import('./process-io.ts'),
    import('./program.ts'),
  ]);
  await runProcess(main);
}

if (import.meta.main) {
  const { ensureNodeFlags } = await import('../../bin/listings-sync.mjs');
  await ensureNodeFlags(import.meta.filename, process.argv.slice(2));
  await start();
}
