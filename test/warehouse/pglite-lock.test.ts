/**
 * One process at a time on an embedded data directory: a second process would corrupt it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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
});
