import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/helpers/sequencer.ts';

/**
 * The fast project, chosen here rather than by a folder (test/ is grouped by subject):
 * pure suites, with no database, no sandbox and no child process. `npm run test:unit` runs
 * them in seconds; test/meta/unit-project.test.ts holds every file listed to that.
 */
const UNIT = [
  'test/alerts/rules-file.test.ts',
  'test/api/errors-and-retry.test.ts',
  'test/api/schemas.test.ts',
  'test/config/config.test.ts',
  'test/config/credential-accounts.test.ts',
  'test/config/misspelt-settings.test.ts',
  'test/config/settings.test.ts',
  'test/deploy/k8s-manifests.test.ts',
  'test/log/database-url-readable.test.ts',
  'test/log/database-url-redaction.test.ts',
  'test/log/log.test.ts',
  'test/meta/error-codes.test.ts',
  'test/meta/import-graph.test.ts',
  'test/meta/settings-docs.test.ts',
  'test/meta/suite-order.test.ts',
  'test/meta/test-isolation.test.ts',
  'test/meta/unit-project.test.ts',
  'test/meta/wall-clock.test.ts',
  'test/meta/world-per-test.test.ts',
  'test/raw/body-secrets.test.ts',
  'test/raw/kept-body.test.ts',
  'test/streams/descriptors.test.ts',
  'test/sync/run-status.test.ts',
  'test/warehouse/answers-stamp.test.ts',
  'test/warehouse/content-hash.test.ts',
];

/**
 * Where a real process is the point (signals, kill -9, a process's exit code), named
 * `*.e2e.test.ts` beside the other tests of their subject. Everything else runs commands
 * in-process through `main(argv, io)` (test/helpers/cli.ts).
 */
const E2E = ['test/**/*.e2e.test.ts'];

/**
 * Files that replace a module with `vi.mock`: each runs in a process of its own. Every
 * other integration file shares its worker process with the files before it (`isolate:
 * false`), so modules load and PGlite's WebAssembly compiles once per worker rather than
 * once per file (docs/development.md, "The test suite"); a mocked module would leak into them.
 * test/meta/test-isolation.test.ts holds this list to the files that call `vi.mock`.
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
    // A hang guard, not a budget: a hang fails with the test's name, and a test on a
    // machine loaded many times over (the suite beside other suites: load 16 on 2 cores)
    // only takes longer. Speed itself is for `npm run bench`.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Vitest's default (one worker fewer than the cores) runs one file at a time on a
    // 2-core machine, where most of a file's time is spent waiting on child processes, the
    // sandbox and PostgreSQL: three workers took the whole suite on both backends from
    // 385 s to 246 s here (docs/development.md, "The test suite").
    maxWorkers: 2,
    // Longest first across the projects, the e2e files (waits on child processes) mixed in
    // among the CPU-bound ones rather than run as a phase of their own (test/helpers/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        // Shares its worker processes as the integration project does (below): these files
        // mock nothing.
        test: { name: 'unit', include: UNIT, isolate: false, globalSetup: [TEMPORARY_ROOT] },
      },
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
