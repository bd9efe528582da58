/**
 * A new embedded data directory starts from the cluster kept in the repository, not from
 * initdb in the process (src/warehouse/driver/pglite/options.ts, `pgliteCluster`): what that
 * saves is measured by `npm run bench:memory` (docs/benchmarks.md, "Memory on PGlite").
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  pgliteCluster,
  pgliteClusterPath,
  pgliteRelease,
  pgliteStartOptions,
} from '../../src/warehouse/driver/pglite/options.ts';

const opened: Warehouse[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const warehouse of opened.splice(0)) await warehouse.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ls-pglite-cluster-'));
  dirs.push(dir);
  return dir;
}

async function systemIdentifier(warehouse: Warehouse): Promise<string> {
  const { rows } = await sql<{
    id: string;
  }>`select system_identifier::text as id from pg_control_system()`.execute(warehouse.db);
  return rows[0]?.id ?? '';
}

describe('a new embedded data directory starts from the kept cluster', () => {
  it('the installed PGlite has its cluster (after an upgrade: node src/warehouse/driver/pglite/options.ts)', () => {
    expect(existsSync(pgliteClusterPath()), pgliteClusterPath()).toBe(true);
    expect(pgliteClusterPath()).toContain(`cluster-${pgliteRelease()}.tar.gz`);
  });

  it('two new directories are the one cluster (initdb would give each its own identifier)', async () => {
    const first = await openWarehouse({ pgliteDataDir: join(freshDir(), 'pglite') });
    opened.push(first);
    const second = await openWarehouse({ pgliteDataDir: join(freshDir(), 'pglite') });
    opened.push(second);
    const id = await systemIdentifier(first);
    expect(id).toMatch(/^\d+$/);
    expect(await systemIdentifier(second)).toBe(id);
  });

  it('only a directory without a database starts from it; a given dump wins', () => {
    const empty = freshDir();
    expect(pgliteStartOptions(empty, undefined).loadDataDir).toBe(pgliteCluster());
    expect(pgliteStartOptions(undefined, undefined).loadDataDir).toBe(pgliteCluster());
    const existing = join(freshDir(), 'pglite');
    mkdirSync(existing);
    writeFileSync(join(existing, 'PG_VERSION'), '18\n');
    expect(pgliteStartOptions(existing, undefined).loadDataDir).toBeUndefined();
    const dump = new Blob(['dump']);
    expect(pgliteStartOptions(empty, dump).loadDataDir).toBe(dump);
  });
});
