/**
 * One contender for the data directory lock, run as its own process by
 * pglite-lock.test.ts. It prints `ready`, then obeys lines on stdin:
 * - `go <epoch ms>`: spin until that moment (so every contender starts in the same
 *   millisecond), try the lock, print `got` or `busy <code>`;
 * - `release`: let go of the lock if it holds it, print `released`.
 */
import { createInterface } from 'node:readline';
import { lockDataDir } from '../../src/warehouse/pglite-lock.ts';

const dir = process.argv[2] as string;
let release: (() => void) | undefined;
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, at] = line.split(' ');
  if (command === 'go') {
    while (Date.now() < Number(at)) {
      // Spinning, not sleeping: a timer would wake each contender at a different moment.
    }
    try {
      release = lockDataDir(dir);
      process.stdout.write('got\n');
    } catch (error) {
      process.stdout.write(`busy ${(error as { code?: string }).code ?? 'error'}\n`);
    }
  } else if (command === 'release') {
    release?.();
    release = undefined;
    process.stdout.write('released\n');
  }
});
process.stdout.write('ready\n');
