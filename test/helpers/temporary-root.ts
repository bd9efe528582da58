/**
 * A temporary directory per `vitest run`, removed when the run ends: every test's
 * `mkdtemp(tmpdir())` lands in it, so no run leaves directories behind in the machine's
 * temporary directory, whatever a test forgot or a crash skipped.
 *
 * The global set-up of every project (vitest.config.ts). It runs in vitest's own process
 * before any worker starts and sets TMPDIR, which the workers inherit, and
 * `os.tmpdir()` reads on every call. Child processes get it too where a test passes
 * its own environment through `spawnCli` (test/helpers/cli.ts).
 *
 * The first project's set-up makes the directory and its teardown removes it; the others
 * find it in the environment and leave it be. What a run built to keep (the migrated
 * warehouse templates, test/helpers/warehouse-template.ts) stays in the machine's
 * temporary directory, named by `TEST_CACHE_DIR`.
 *
 * Before removing it, the teardown names what tests left in it: a test should remove
 * what it makes (its `afterAll`), and a list on standard error says which did not. With
 * `TEST_TMP_STRICT=1` the leftovers fail the run instead.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where this run's temporary directories go; set by the first set-up of the run. */
export const TEST_TMP_ROOT = 'LISTINGS_SYNC_TEST_TMP_ROOT';
/** The machine's temporary directory, for what outlives a run (the templates). */
export const TEST_CACHE_DIR = 'LISTINGS_SYNC_TEST_CACHE_DIR';

/**
 * What the run's tests share on purpose (test/helpers/demo-world.ts), in the run's own
 * temporary directory: removed with it, and not counted among what tests left behind.
 */
export const RUN_SHARED = 'run-shared';

/** The run's shared directory (created by whoever writes there first). */
export function runSharedDir(): string {
  return join(tmpdir(), RUN_SHARED);
}

/** The temporary directory this run's caches live in (not removed at the end of a run). */
export function testCacheDir(): string {
  return process.env[TEST_CACHE_DIR] || tmpdir();
}

/** Leftover names, grouped by what precedes their random suffix: `ls-config-× 13`. */
export function describeLeftovers(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const name of names) {
    const prefix = name.replace(/[A-Za-z0-9]{6}$/, '');
    counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([prefix, n]) => (n > 1 ? `${prefix}* (${n})` : prefix))
    .join(', ');
}

export default function setup(): (() => void) | undefined {
  if (process.env[TEST_TMP_ROOT]) return undefined;
  const previous = process.env['TMPDIR'];
  const machineTmp = tmpdir();
  const root = mkdtempSync(join(machineTmp, 'listings-sync-test-'));
  process.env[TEST_CACHE_DIR] ??= machineTmp;
  process.env[TEST_TMP_ROOT] = root;
  process.env['TMPDIR'] = root;
  return () => {
    const left = readdirSync(root).filter((name) => name !== RUN_SHARED);
    rmSync(root, { recursive: true, force: true });
    if (previous === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = previous;
    delete process.env[TEST_TMP_ROOT];
    if (left.length === 0) return;
    const message = `${left.length} temporary entries were left by tests (now removed): ${describeLeftovers(left)}`;
    if (process.env['TEST_TMP_STRICT'] === '1') throw new Error(message);
    process.stderr.write(`${message}\n`);
  };
}
