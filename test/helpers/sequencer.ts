/**
 * The order files start in (vitest.config.ts, `sequence.sequencer`): longest first, across
 * every project, with the `*.e2e.test.ts` files (which mostly wait on child processes)
 * mixed in among the CPU-bound ones rather than run as a phase of their own.
 *
 * Vitest's own sequencer runs the projects one after another by name (e2e, integration,
 * mocks, unit), so on two workers the e2e files' waits overlapped nothing, and the longest
 * integration files started late and ran alone at the end. Here a file's cost is its
 * duration in vitest's results cache (the last run on this checkout), else its wall in the
 * lead's baseline below (a fresh clone has no cache), else a guess from its size; files are
 * sorted by it, longest first, and no two e2e files start one after the other while a
 * CPU-bound file is left to pair with. With `--sequence.shuffle` it shuffles instead, by
 * the run's seed.
 */
import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds of wall per file, `npm run bench:suite` on a fresh clone, 2 idle cores, PGlite
 * alone (issue 57's baseline, 11:37 UTC 2 Dec 2026): the files that would otherwise be
 * guessed from their size far too cheap.
 */
export const BASELINE_SECONDS: Readonly<Record<string, number>> = {
  'test/demo/demo.test.ts': 28.1,
  'test/replay/in-place-keeps.test.ts': 20.2,
  'test/sync/signals.e2e.test.ts': 17.1,
  'test/sync/sync.test.ts': 14.9,
  'test/raw/raw-zone.test.ts': 12.3,
  'test/report/report-figures.test.ts': 12.2,
  'test/serve/shards.test.ts': 11.4,
  'test/deploy/compile-cache.e2e.test.ts': 11.0,
  'test/replay/two-credentials.test.ts': 10.9,
  'test/replay/in-place.test.ts': 10.9,
  // The earlier run's (docs/development.md, "How long it takes"), not in the list above.
  'test/serve/stop-after-runs.e2e.test.ts': 16.3 * (262 / 357),
  'test/sync/shared-ids.test.ts': 16.2 * (262 / 357),
  'test/replay/after-stop.e2e.test.ts': 15.7 * (262 / 357),
};

/** A guess for a file in neither the cache nor the baseline: about 1 s per 4 kB of test. */
const BYTES_PER_SECOND = 4000;

export const isE2e = (file: string): boolean => file.endsWith('.e2e.test.ts');

/**
 * `files` (paths from the repository's root) longest first by `cost`, then each e2e file
 * that would start right after another e2e file swapped with the next CPU-bound one.
 */
export function longestFirst(files: string[], cost: (file: string) => number): string[] {
  const sorted = [...files].sort((a, b) => cost(b) - cost(a) || (a < b ? -1 : 1));
  for (let i = 1; i < sorted.length; i++) {
    if (!isE2e(sorted[i - 1]!) || !isE2e(sorted[i]!)) continue;
    const next = sorted.findIndex((file, j) => j > i && !isE2e(file));
    if (next < 0) break;
    const [cpuBound] = sorted.splice(next, 1);
    sorted.splice(i, 0, cpuBound!);
  }
  return sorted;
}

/** `items` in an order drawn from `seed` (mulberry32): the same seed, the same order. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
    // `--sequence.shuffle` still means any order: vitest only shuffles the files itself
    // when no sequencer is configured.
    if (this.ctx.config.sequence.shuffle) return shuffled(specs, this.ctx.config.sequence.seed);
    const root = this.ctx.config.root;
    const byFile = new Map<string, TestSpecification[]>();
    for (const spec of specs) {
      const file = relative(root, spec.moduleId);
      byFile.set(file, [...(byFile.get(file) ?? []), spec]);
    }
    const cost = (file: string): number => {
      const cached = byFile
        .get(file)
        ?.map((spec) => this.ctx.cache.getTestSpecificationResult(spec)?.duration)
        .find((duration) => duration !== undefined);
      if (cached !== undefined) return cached / 1000;
      const baseline = BASELINE_SECONDS[file];
      if (baseline !== undefined) return baseline;
      try {
        return statSync(`${root}/${file}`).size / BYTES_PER_SECOND;
      } catch {
        return 0;
      }
    };
    return longestFirst([...byFile.keys()], cost).flatMap((file) => byFile.get(file) ?? []);
  }
}
