/**
 * The views' lineage is declared once (src/lineage/views.ts) and kept in step with the
 * migrations here: on a migrated warehouse, the tables each documented view reads
 * (pg_rewrite's dependencies in pg_depend, through any view it reads in turn) are the
 * declared ones; every `v_` view is declared; and the declared views are the ones
 * docs/warehouse.md documents ("Views").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VIEW_NAMES, VIEW_TABLES } from '../../src/lineage/views.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';

describe.each(testBackends)('the views lineage names (%s)', (backend) => {
  let warehouse: TestWarehouse;
  beforeAll(async () => {
    warehouse = await createTestWarehouse(backend);
  });
  afterAll(async () => {
    await warehouse?.close();
  });

  it('are the tables each view reads in the migrated warehouse', async () => {
    const { rows } = await sql<{ view: string; tables: string[] }>`
      with recursive reads(view, relation, kind) as (
        select v.relname::text, t.relname::text, t.relkind::text
        from pg_rewrite r
        join pg_class v on v.oid = r.ev_class
        join pg_depend d on d.objid = r.oid and d.classid = 'pg_rewrite'::regclass
          and d.refclassid = 'pg_class'::regclass
        join pg_class t on t.oid = d.refobjid and t.oid <> v.oid
        where v.relkind = 'v' and v.relnamespace = current_schema()::regnamespace
        union
        select reads.view, t.relname::text, t.relkind::text
        from reads
        join pg_class inner_view on inner_view.relname = reads.relation and reads.kind = 'v'
          and inner_view.relnamespace = current_schema()::regnamespace
        join pg_rewrite r on r.ev_class = inner_view.oid
        join pg_depend d on d.objid = r.oid and d.classid = 'pg_rewrite'::regclass
          and d.refclassid = 'pg_class'::regclass
        join pg_class t on t.oid = d.refobjid and t.oid <> inner_view.oid
      )
      select view, array_agg(distinct relation order by relation) as tables
      from reads where kind in ('r', 'p') group by view order by view`.execute(warehouse.db);
    const found = Object.fromEntries(rows.map((row) => [row.view, row.tables]));
    for (const view of VIEW_NAMES) {
      expect({ view, tables: found[view] }).toEqual({
        view,
        tables: [...VIEW_TABLES[view]].sort(),
      });
    }
    // A new v_ view is declared too.
    expect(
      Object.keys(found)
        .filter((view) => view.startsWith('v_'))
        .sort(),
    ).toEqual([...VIEW_NAMES].sort());
  });
});

describe('the declared views', () => {
  it("are docs/warehouse.md's views", () => {
    const docs = readFileSync(join(import.meta.dirname, '../../docs/warehouse.md'), 'utf8');
    const views = docs.slice(docs.indexOf('\n## Views'), docs.indexOf('\n## Rules as implemented'));
    const documented = [...views.matchAll(/^#### (v_[a-z_]+)/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...VIEW_NAMES].sort());
  });
});
