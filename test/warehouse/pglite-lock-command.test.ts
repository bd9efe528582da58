/**
 * The command a PGlite lock's holder records (`serve`), read by the process it refuses:
 * named only while that holder is alive and holds the lock, and gone with the lock.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DataDirInUseError,
  lockDataDir,
  recordLockCommand,
} from '../../src/warehouse/driver/pglite/lock.ts';

/** The files as every release names them (docs/troubleshooting.md). */
const LOCK_FILE = '.listings-sync.pid';
const LOCK_COMMAND_FILE = '.listings-sync.pid.command';

const freshDir = () => mkdtempSync(join(tmpdir(), 'ls-pglite-lock-command-'));

async function deadPid(): Promise<number> {
  const gone = spawn('true');
  await new Promise((resolve) => gone.on('close', resolve));
  return gone.pid as number;
}

describe('the command beside the PGlite lock', () => {
  it('names a live serve holding the lock, with its pid and both ways out', () => {
    const dir = freshDir();
    const other = spawn('sleep', ['30']);
    try {
      writeFileSync(join(dir, LOCK_FILE), String(other.pid));
      writeFileSync(join(dir, LOCK_COMMAND_FILE), `${other.pid} serve\n`);
      let refused: unknown;
      try {
        lockDataDir(dir);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(DataDirInUseError);
      const error = refused as DataDirInUseError;
      expect(error.command).toBe('serve');
      expect(error.holder).toBe(other.pid);
      expect(error.message).toBe(
        `The embedded database in ${dir} is held by \`listings-sync serve\` (pid ${other.pid}). ` +
          'PGlite serves one process at a time, so `runs`, `alerts`, `report`, `sync` and every ' +
          'other command cannot open it while serve runs. Either stop serve, run the command ' +
          'and start serve again, or move the warehouse to PostgreSQL ' +
          '(`listings-sync warehouse copy --to <postgres-url>`, then set DATABASE_URL for every ' +
          'command; docs/backup-restore.md, "Moving from PGlite to PostgreSQL").',
      );
    } finally {
      other.kill();
    }
  });

  it('ignores a command another pid recorded: the holder is then only a process', () => {
    const dir = freshDir();
    const other = spawn('sleep', ['30']);
    try {
      writeFileSync(join(dir, LOCK_FILE), String(other.pid));
      writeFileSync(join(dir, LOCK_COMMAND_FILE), `${(other.pid as number) + 1} serve\n`);
      expect(() => lockDataDir(dir)).toThrow(
        `is open in another listings-sync process (pid ${other.pid}). PGlite serves one process at a time: stop that process, or move the warehouse to PostgreSQL`,
      );
    } finally {
      other.kill();
    }
  });

  it('removes a dead holder’s command with its lock, and its own on release', async () => {
    const dir = freshDir();
    const gone = await deadPid();
    writeFileSync(join(dir, LOCK_FILE), String(gone));
    writeFileSync(join(dir, LOCK_COMMAND_FILE), `${gone} serve\n`);
    const release = lockDataDir(dir);
    expect(existsSync(join(dir, LOCK_COMMAND_FILE))).toBe(false);
    recordLockCommand(dir, 'serve');
    expect(existsSync(join(dir, LOCK_COMMAND_FILE))).toBe(true);
    release();
    expect(existsSync(join(dir, LOCK_COMMAND_FILE))).toBe(false);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });
});
