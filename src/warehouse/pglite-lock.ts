/**
 * The embedded data directory's lock: PGlite serves one process at a time, and two (a
 * `sync` beside a `serve`, or two terminals) would corrupt the directory and lose one
 * process's committed rows.
 *
 * The lock is the file `.listings-sync.pid` holding the holder's pid, taken atomically:
 * - it is written whole to a private temporary file and then hard-linked into place;
 *   `link` fails when the name exists, so exactly one process creates it, and no reader
 *   ever sees it empty or half-written (as `open(…, 'wx')` followed by a write allows);
 * - a lock whose holder is gone (killed, crashed) is taken over under a second lock
 *   file, `.listings-sync.pid.takeover`, taken the same way: the one process that holds
 *   it re-reads the pid, removes the lock only if it still names that dead process, and
 *   lets the race for the lock start again. So two processes that both saw a dead
 *   holder can never both remove a lock and both take it.
 */
import { linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const LOCK_FILE = '.listings-sync.pid';
const TAKEOVER_SUFFIX = '.takeover';
/** A takeover file older than this was left by a process that died inside the takeover. */
const TAKEOVER_STALE_MS = 10_000;
/** Rounds of the take / take-over loop: each waits a few ms only while another takes over. */
const ATTEMPTS = 200;

export class DataDirInUseError extends Error {
  readonly code = 'DATA_DIR_IN_USE';
  constructor(dir: string, holder: number) {
    super(
      `The embedded database in ${dir} is open in another listings-sync process (pid ${holder}). ` +
        'PGlite serves one process at a time: stop that process, or set DATABASE_URL to a ' +
        `PostgreSQL server for commands that run side by side. If no such process exists, remove ${join(dir, LOCK_FILE)}.`,
    );
    this.name = 'DataDirInUseError';
  }
}

/** Creates `path` holding `content`, atomically; false when it exists already. */
function createWhole(path: string, content: string): boolean {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, content, { flag: 'wx' });
  try {
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** The pid a lock file names; undefined when it is gone; NaN when unreadable. */
function readHolder(path: string): number | undefined {
  try {
    return Number(readFileSync(path, 'utf8').trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A short synchronous pause while another process finishes a takeover. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Takes the lock of `dir` (which must exist) for this process, or throws
 * `DataDirInUseError` naming the live holder. Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  const takeover = `${path}${TAKEOVER_SUFFIX}`;
  const mine = String(process.pid);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (createWhole(path, mine)) {
      return () => {
        // Only our own lock: never remove one a later holder took over.
        if (readHolder(path) === process.pid) rmSync(path, { force: true });
      };
    }
    const holder = readHolder(path);
    if (holder === undefined) continue; // released meanwhile: race for it again
    const valid = Number.isInteger(holder) && holder > 0;
    if (valid && holder !== process.pid && isAlive(holder)) {
      throw new DataDirInUseError(dir, holder);
    }
    // The holder is gone (or the file is not ours to read): take it over, one at a time.
    if (!createWhole(takeover, mine)) {
      try {
        if (Date.now() - statSync(takeover).mtimeMs > TAKEOVER_STALE_MS) {
          rmSync(takeover, { force: true });
        }
      } catch {}
      pause(2);
      continue;
    }
    try {
      const again = readHolder(path);
      if (again === holder || (Number.isNaN(again) && Number.isNaN(holder))) {
        rmSync(path, { force: true });
      }
    } finally {
      rmSync(takeover, { force: true });
    }
  }
  throw new Error(`Could not take the lock file ${path}: other processes kept taking it over.`);
}
