import { configDefaults, defineConfig } from 'vitest/config';

/** Pure unit suites: no database, no sandbox, no child process. `npm run test:unit` runs them in seconds. */
const UNIT = [
  'test/unit/**/*.test.ts',
  'test/api/schemas.test.ts',
  'test/api/errors-and-retry.test.ts',
  'test/warehouse/content-hash.test.ts',
  'test/k8s/manifests.test.ts',
  'test/meta/**/*.test.ts',
];

/**
 * Where a real process is the point: signals, kill -9, a process's exit code. Everything
 * else runs commands in-process through `main(argv, io)` (test/helpers/cli.ts).
 */
const E2E = ['test/e2e/**/*.test.ts'];

/**
 * Files that replace a module with `vi.mock`: each runs in a process of its own. Every
 * other integration file shares its worker process with the files before it (`isolate:
 * false`), so modules load and PGlite's WebAssembly compiles once per worker rather than
 * once per file (docs/development.md, "The test suite"); a mocked module would leak into them.
 * test/unit/test-isolation.test.ts holds this list to the files that call `vi.mock`.
 */
export const MOCKS_MODULES = ['test/raw/quarantine-recovery.test.ts'];

/**
 * Every project's first global set-up: a temporary directory of the run's own, removed
 * when the run ends (test/helpers/temporary-root.ts). Then, where tests open a
 * warehouse, the migrated templates are built once (test/helpers/global-setup.ts).
 */
const TEMPORARY_ROOT = 'test/helpers/temporary-root.ts';
const WAREHOUSE_TEMPLATES = [TEMPORARY_ROOT, 'test/helpers/global-setup.ts'];

export default defineConfig({
  test: {
    // A hang fails within 30 s with the test's name; speed itself is for `npm run bench`.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Vitest's default (one worker fewer than the cores) runs one file at a time on a
    // 2-core machine, where most of a file's time is spent waiting on child processes, the
    // sandbox and PostgreSQL: three workers took the whole suite on both backends from
    // 385 s to 246 s here (docs/development.md, "The test suite").
    maxWorkers: 3,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, globalSetup: [TEMPORARY_ROOT] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT, ...E2E, ...MOCKS_MODULES],
          isolate: false,
          // Builds the migrated warehouse templates once, before any worker starts.
          globalSetup: WAREHOUSE_TEMPLATES,
        },
      },
      {
        extends: true,
        test: {
          name: 'mocks',
          include: MOCKS_MODULES,
          globalSetup: WAREHOUSE_TEMPLATES,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: E2E,
          globalSetup: WAREHOUSE_TEMPLATES,
        },
      },
    ],
  },
});
