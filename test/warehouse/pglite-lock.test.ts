/**
 * One process at a time on an embedded data directory: a second process would corrupt it.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/connection.ts';

describe('the embedded data directory lock', () => {
  it('refuses a directory another live process holds, naming it and the way out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    const other = spawn('sleep', ['30']);
    try {
      writeFileSync(join(dir, '.listings-sync.pid'), String(other.pid));
      await expect(openWarehouse({ pgliteDataDir: dir })).rejects.toThrow(
        `is open in another listings-sync process (pid ${other.pid})`,
      );
    } finally {
      other.kill();
    }
  });

  it('takes over a lock left by a process that is gone, and releases it on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    mkdirSync(dir, { recursive: true });
    const gone = spawn('true');
    await new Promise((resolve) => gone.on('close', resolve));
    writeFileSync(join(dir, '.listings-sync.pid'), String(gone.pid));
    const warehouse = await openWarehouse({ pgliteDataDir: dir });
    expect(existsSync(join(dir, '.listings-sync.pid'))).toBe(true);
    await warehouse.close();
    expect(existsSync(join(dir, '.listings-sync.pid'))).toBe(false);
  });

  it('a lock file that names no process yet is held, not taken over as stale', async () => {
    // What a second process sees while the first is between creating the file and writing
    // its pid: taking it over let both open the directory.
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    writeFileSync(join(dir, '.listings-sync.pid'), '');
    await expect(openWarehouse({ pgliteDataDir: dir })).rejects.toThrow(
      /lock file .*\.listings-sync\.pid names no process/,
    );
    expect(readFileSync(join(dir, '.listings-sync.pid'), 'utf8')).toBe('');
  });

  it('a lock left by a dead process is taken over by one opener only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    const gone = spawn('true');
    await new Promise((resolve) => gone.on('close', resolve));
    writeFileSync(join(dir, '.listings-sync.pid'), String(gone.pid));
    // Another opener that saw the same dead pid has claimed the takeover first.
    writeFileSync(join(dir, `.listings-sync.pid.takeover-${gone.pid}`), '4242');
    await expect(openWarehouse({ pgliteDataDir: dir })).rejects.toThrow(
      /is being taken over by another listings-sync process/,
    );
    expect(readFileSync(join(dir, '.listings-sync.pid'), 'utf8')).toBe(String(gone.pid));
  });

  it('the lock file holds the pid from the moment it exists, and nothing is left on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    const warehouse = await openWarehouse({ pgliteDataDir: dir });
    expect(readFileSync(join(dir, '.listings-sync.pid'), 'utf8')).toBe(String(process.pid));
    await warehouse.close();
    expect(readdirSync(dir).filter((name) => name.startsWith('.listings-sync'))).toEqual([]);
  });
});
