/**
 * The embedded PostgreSQL sized for one process (docs/sizing.md, "Embedded (PGlite)"):
 * its buffer pool and connection slots, which PostgreSQL's defaults would size for a
 * server, in a new data directory and in one created before the settings existed. What
 * they save is measured by `npm run bench:memory` (docs/benchmarks.md), not here.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import { pgliteEmptyTemplate } from '../helpers/warehouse-template.ts';

const opened: Warehouse[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const warehouse of opened.splice(0)) await warehouse.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function setting(warehouse: Warehouse, name: string): Promise<string> {
  const { rows } = await sql<{ value: string }>`select current_setting(${name}) as value`.execute(
    warehouse.db,
  );
  return rows[0]?.value ?? '';
}

describe('the embedded warehouse is sized for one process', () => {
  it('a new data directory holds the settings in its postgresql.conf and runs with them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-memory-'));
    dirs.push(dir);
    const warehouse = await openWarehouse({ pgliteDataDir: join(dir, 'pglite') });
    opened.push(warehouse);
    expect(await setting(warehouse, 'shared_buffers')).toBe('16MB');
    expect(await setting(warehouse, 'max_connections')).toBe('8');
    const conf = readFileSync(join(dir, 'pglite', 'postgresql.conf'), 'utf8');
    expect(conf).toMatch(/^shared_buffers = 16MB/m);
    expect(conf).toMatch(/^max_connections = 8/m);
  });

  it('a data directory created with PostgreSQL’s defaults runs with the settings too', async () => {
    // The test template is made by a plain PGlite.create(): 128 MB of buffers, 100 slots.
    const warehouse = await openWarehouse({
      memory: true,
      loadDataDir: await pgliteEmptyTemplate(),
    });
    opened.push(warehouse);
    expect(await setting(warehouse, 'shared_buffers')).toBe('16MB');
    expect(await setting(warehouse, 'max_connections')).toBe('8');
  });
});
