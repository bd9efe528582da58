/**
 * One contender for the data directory lock, run as its own process by
 * pglite-lock.test.ts. It prints `ready`, then obeys lines on stdin:
 * - `arm <file>`: print `armed`, then spin until `<file>` exists (so every contender
 *   starts the moment the test creates it, whatever the clock says), try the lock, print
 *   `got` or `busy <code>`;
 * - `release`: let go of the lock if it holds it, print `released`.
 */
import { existsSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { lockDataDir } from '../../src/warehouse/driver/pglite/lock.ts';

const dir = process.argv[2] as string;
let release: (() => void) | undefined;
/** Standard output, written before the next statement runs: `armed` must be out before the spin. */
const say = (line: string) => writeSync(1, `${line}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, file] = line.split(' ');
  if (command === 'arm') {
    say('armed');
    while (!existsSync(file as string)) {
      // Spinning on the file, not waiting for an event of this process's loop: each
      // contender sees the file within a system call of its creation.
    }
    try {
      release = lockDataDir(dir);
      say('got');
    } catch (error) {
      say(`busy ${(error as { code?: string }).code ?? 'error'}`);
    }
  } else if (command === 'release') {
    release?.();
    release = undefined;
    say('released');
  }
});
say('ready');
