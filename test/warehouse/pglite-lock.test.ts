/**
 * One process at a time on an embedded data directory: a second process would corrupt it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';

const CONTENDER = join(import.meta.dirname, 'pglite-lock-contender.ts');

/** Contender processes on one directory, driven line by line. */
async function startContenders(dir: string, n: number) {
  const all = Array.from({ length: n }, () => {
    const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [CONTENDER, dir]);
    const lines: string[] = [];
    let partial = '';
    let wake: (() => void) | undefined;
    child.stdout.on('data', (chunk) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
      wake?.();
    });
    const next = async (): Promise<string> => {
      while (lines.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return lines.shift() as string;
    };
    const closed = new Promise((resolve) => child.on('close', resolve));
    return { child, next, closed };
  });
  await Promise.all(all.map((c) => c.next())); // `ready`
  // The start signals live beside the data directory, never in it.
  const signals = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-go-'));
  let trials = 0;
  return {
    /** Every contender tries the lock the moment a file appears; what each answered. */
    async race(): Promise<string[]> {
      const go = join(signals, `go-${++trials}`);
      for (const c of all) c.child.stdin.write(`arm ${go}\n`);
      // Each spins, watching for the file, once it has said so.
      const armed = await Promise.all(all.map((c) => c.next()));
      if (armed.some((line) => line !== 'armed')) throw new Error(`not armed: ${armed}`);
      writeFileSync(go, '');
      return Promise.all(all.map((c) => c.next()));
    },
    async releaseAll(): Promise<void> {
      for (const c of all) c.child.stdin.write('release\n');
      await Promise.all(all.map((c) => c.next()));
    },
    async stop(): Promise<void> {
      for (const c of all) c.child.stdin.end();
      await Promise.all(all.map((c) => c.closed));
      rmSync(signals, { recursive: true, force: true });
    },
  };
}

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

  // Same-millisecond races lost about one trial in eight to a non-atomic lock.
  const TRIALS = 20;
  const CONTENDERS = 4;

  it('lets exactly one of many processes racing for a free directory take it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    const contenders = await startContenders(dir, CONTENDERS);
    try {
      for (let trial = 0; trial < TRIALS; trial++) {
        const answers = await contenders.race();
        expect(answers.filter((a) => a === 'got')).toHaveLength(1);
        expect(answers.filter((a) => a === 'busy DATA_DIR_IN_USE')).toHaveLength(CONTENDERS - 1);
        await contenders.releaseAll();
        expect(existsSync(join(dir, '.listings-sync.pid'))).toBe(false);
      }
    } finally {
      await contenders.stop();
    }
  });

  it('lets exactly one of many processes take over a lock left by a dead process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-lock-'));
    const gone = spawn('true');
    await new Promise((resolve) => gone.on('close', resolve));
    const contenders = await startContenders(dir, CONTENDERS);
    try {
      for (let trial = 0; trial < TRIALS; trial++) {
        writeFileSync(join(dir, '.listings-sync.pid'), String(gone.pid));
        const answers = await contenders.race();
        expect(answers.filter((a) => a === 'got')).toHaveLength(1);
        expect(answers.filter((a) => a === 'busy DATA_DIR_IN_USE')).toHaveLength(CONTENDERS - 1);
        await contenders.releaseAll();
      }
    } finally {
      await contenders.stop();
    }
    // No temporary or takeover file is left behind.
    expect(readdirSync(dir)).toEqual([]);
  });
});
