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
 *
 * A holder may say which command it is (`recordLockCommand`: `serve` does) in a second
 * file, `.listings-sync.pid.command`, holding `<pid> <command>`. The lock file itself stays
 * the bare pid that every release reads. The refusal then names the command, so a `runs`
 * beside a `serve` says that serve holds the directory and how to run both
 * (docs/serve.md; docs/backup-restore.md, "Moving from PGlite to PostgreSQL").
 */
import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ListingsSyncError } from '../../../errors.ts';

const LOCK_FILE = '.listings-sync.pid';
const TAKEOVER_SUFFIX = '.takeover';
/** A takeover file older than this was left by a process that died inside the takeover. */
const TAKEOVER_STALE_MS = 10_000;
/** Rounds of the take / take-over loop: each waits a few ms only while another takes over. */
const ATTEMPTS = 200;

const LOCK_COMMAND_FILE = `${LOCK_FILE}.command`;

/** Where the warehouse goes when commands must run side by side. */
const MOVE_TO_POSTGRES =
  'move the warehouse to PostgreSQL (`listings-sync warehouse copy --to <postgres-url>`, then set ' +
  'DATABASE_URL for every command; docs/backup-restore.md, "Moving from PGlite to PostgreSQL")';

export class DataDirInUseError extends ListingsSyncError {
  readonly code = 'DATA_DIR_IN_USE';
  readonly holder: number;
  /** The holder's command when it recorded one (`serve`); undefined otherwise. */
  readonly command: string | undefined;
  constructor(dir: string, holder: number, command?: string) {
    super(
      command === 'serve'
        ? `The embedded database in ${dir} is held by \`listings-sync serve\` (pid ${holder}). ` +
            'PGlite serves one process at a time, so `runs`, `alerts`, `report`, `sync` and every ' +
            'other command cannot open it while serve runs. Either stop serve, run the command ' +
            `and start serve again, or ${MOVE_TO_POSTGRES}.`
        : `The embedded database in ${dir} is open in another listings-sync process ` +
            `(pid ${holder}${command ? `, \`listings-sync ${command}\`` : ''}). ` +
            'PGlite serves one process at a time: stop that process, or ' +
            `${MOVE_TO_POSTGRES}. If no such process exists, remove ${join(dir, LOCK_FILE)}.`,
    );
    this.holder = holder;
    this.command = command;
  }
}

/** A command name fit for the file and for messages: a word, as `serve`. */
const COMMAND_NAME = /^[a-z][a-z-]{0,31}$/;

/** The command `pid` recorded for the lock of `dir`; undefined when none (or another pid's). */
export function lockCommandOf(dir: string, pid: number): string | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, LOCK_COMMAND_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const [recorded, command] = text.trim().split(' ');
  return Number(recorded) === pid && command && COMMAND_NAME.test(command) ? command : undefined;
}

/**
 * Records, beside the lock this process holds on `dir`, which command it is, so that
 * another process refused the directory is told (`DataDirInUseError`). Written whole
 * (a temporary file renamed into place); removed with the lock on release. A file a dead
 * holder left names a pid that no longer holds the lock, and is ignored.
 */
export function recordLockCommand(dir: string, command: string): void {
  if (!COMMAND_NAME.test(command)) throw new Error(`Not a command name: ${command}`);
  const path = join(dir, LOCK_COMMAND_FILE);
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, `${process.pid} ${command}\n`, { flag: 'wx' });
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
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
        if (lockCommandOf(dir, process.pid) !== undefined) {
          rmSync(join(dir, LOCK_COMMAND_FILE), { force: true });
        }
        if (readHolder(path) === process.pid) rmSync(path, { force: true });
      };
    }
    const holder = readHolder(path);
    if (holder === undefined) continue; // released meanwhile: race for it again
    const valid = Number.isInteger(holder) && holder > 0;
    if (valid && holder !== process.pid && isAlive(holder)) {
      throw new DataDirInUseError(dir, holder, lockCommandOf(dir, holder));
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
        // The dead holder's command first, while its lock still keeps everyone out.
        if (holder !== undefined && lockCommandOf(dir, holder) !== undefined) {
          rmSync(join(dir, LOCK_COMMAND_FILE), { force: true });
        }
        rmSync(path, { force: true });
      }
    } finally {
      rmSync(takeover, { force: true });
    }
  }
  throw new Error(`Could not take the lock file ${path}: other processes kept taking it over.`);
}
