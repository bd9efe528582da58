/**
 * Runs once per `vitest run`, before any worker: builds the migrated warehouse templates
 * (so no two workers build one at the same time), marks them used and removes the
 * templates of other migration sets no run has used for a week
 * (test/helpers/warehouse-template.ts), and, afterwards, drops any PostgreSQL clone a
 * crashed test left behind.
 */
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import {
  dropClones,
  ensurePgliteTemplate,
  ensurePostgresTemplate,
  prunePgliteTemplates,
  prunePostgresTemplates,
} from './warehouse-template.ts';

/** Read here rather than through config.ts: a test-only variable. */
const testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim() || undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const runId = randomBytes(4).toString('hex');
  project.provide('testRunId', runId);
  // Marked used before they are looked for, so another checkout's clean-up cannot take a
  // template this run has just found.
  const removed = prunePgliteTemplates();
  await ensurePgliteTemplate();
  if (testDatabaseUrl) {
    removed.push(...(await prunePostgresTemplates(testDatabaseUrl)));
    await ensurePostgresTemplate(testDatabaseUrl);
  }
  if (removed.length)
    console.error(`test templates unused for a week, removed: ${removed.join(', ')}`);
  return async () => {
    if (testDatabaseUrl) await dropClones(testDatabaseUrl, `lst_${runId}_`);
  };
}
