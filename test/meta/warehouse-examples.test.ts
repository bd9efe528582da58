/**
 * Every example query of docs/warehouse.md (each fenced `sql` block, whatever examples the
 * document holds when this runs) returns rows on the demo's data: the demo (seed 7, as
 * `npm start`), shrunk, with simulated syncs ending yesterday so that "the last 7 days"
 * has data (test/helpers/demo-world.ts). On PGlite, and on PostgreSQL when
 * TEST_DATABASE_URL is set (the demo in a schema of its own, as `DATABASE_URL=… npm start`
 * does).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { testBackends } from '../helpers/database.ts';
import {
  DEMO_WORLD,
  type SimulatedDemo,
  sharedDemoWorld,
  simulatedDemo,
} from '../helpers/demo-world.ts';

const DOC = readFileSync(join(import.meta.dirname, '../../docs/warehouse.md'), 'utf8');
const EXAMPLES = [...DOC.matchAll(/```sql\n([\s\S]*?)```/g)].map((m, i) => ({
  n: i + 1,
  text: (m[1] ?? '').trim(),
}));
const _testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim();

describe.each(testBackends)('docs/warehouse.md examples on the demo (%s)', (backend) => {
  let dir = '';
  let demo: SimulatedDemo | undefined;
  let warehouse: Warehouse;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'examples-'));
    // PGlite: the run's shared demo world (test/helpers/demo-world.ts), read-only;
    // PostgreSQL: the same shape in a schema of its own.
    if (backend === 'postgres') {
      demo = await simulatedDemo(backend, { ...DEMO_WORLD, reportPath: join(dir, 'report.html') });
      warehouse = demo.warehouse;
    } else {
      ({ warehouse } = await sharedDemoWorld());
    }
  }, 600_000);

  afterAll(async () => {
    await demo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the document has example queries', () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(4);
  });

  it.each(EXAMPLES)('example $n returns rows', async ({ text }) => {
    const result = await sql.raw(text.replace(/;\s*$/, '')).execute(warehouse.db);
    expect(result.rows.length, text).toBeGreaterThan(0);
  });
});
