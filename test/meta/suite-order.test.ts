/**
 * The order files start in (test/helpers/sequencer.ts): longest first across the projects,
 * and no two e2e files (waits on child processes) one after the other while a CPU-bound
 * file is left to start between them.
 */
import { describe, expect, it } from 'vitest';
import { BASELINE_SECONDS, isE2e, longestFirst, shuffled } from '../helpers/sequencer.ts';

describe('the suite order', () => {
  it('starts the longest first and mixes the e2e files in among the CPU-bound ones', () => {
    const cost: Record<string, number> = {
      'a.e2e.test.ts': 20,
      'b.e2e.test.ts': 18,
      'c.e2e.test.ts': 17,
      'd.test.ts': 15,
      'e.test.ts': 3,
      'f.e2e.test.ts': 1,
    };
    const order = longestFirst(Object.keys(cost), (file) => cost[file] ?? 0);
    expect(order).toEqual([
      'a.e2e.test.ts',
      'd.test.ts',
      'b.e2e.test.ts',
      'e.test.ts',
      'c.e2e.test.ts',
      'f.e2e.test.ts',
    ]);
    expect(new Set(order).size).toBe(Object.keys(cost).length);
  });

  it('shuffles by the seed when asked to (--sequence.shuffle): the same seed, the same order', () => {
    const files = Array.from({ length: 20 }, (_, i) => `f${i}.test.ts`);
    const once = shuffled(files, 42);
    expect(shuffled(files, 42)).toEqual(once);
    expect(once).not.toEqual(files);
    expect([...once].sort()).toEqual([...files].sort());
  });

  it('names real files in its baseline, e2e among them', async () => {
    const { existsSync } = await import('node:fs');
    const { join } = await import('node:path');
    const root = join(import.meta.dirname, '../..');
    const files = Object.keys(BASELINE_SECONDS);
    expect(files.filter((file) => !existsSync(join(root, file)))).toEqual([]);
    expect(files.some(isE2e)).toBe(true);
  });
});
