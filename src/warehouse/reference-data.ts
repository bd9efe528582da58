/**
 * `countries`, `states`, `sub_categories`: reference data, upserted whole. Nothing is
 * deleted: a partial read (one country's states failing) must not erase the rest.
 */
import type { Country, State, SubCategory } from '../api/types.ts';
import { upsertRows } from './bulk-write.ts';
import type { Db } from './database.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

export interface ReferenceData {
  countries: Country[];
  states: State[];
  subCategories: SubCategory[];
}

export async function writeReferenceData(db: Db, data: ReferenceData): Promise<WriteStats> {
  const now = new Date();
  const stats: WriteStats = {};
  const countries = await upsertRows(
    db,
    {
      table: 'countries',
      key: ['country_id'],
      columns: { country_id: 'bigint', name: 'text', updated_at: 'timestamptz' },
      compare: ['name'],
    },
    data.countries.map((c) => ({ country_id: c.id, name: c.name, updated_at: now })),
  );
  const states = await upsertRows(
    db,
    {
      table: 'states',
      key: ['state_id'],
      columns: {
        state_id: 'bigint',
        name: 'text',
        iso: 'text',
        country_id: 'bigint',
        updated_at: 'timestamptz',
      },
      compare: ['name', 'iso', 'country_id'],
    },
    data.states.map((s) => ({
      state_id: s.id,
      name: s.name,
      iso: s.iso,
      country_id: s.countryId,
      updated_at: now,
    })),
  );
  const subCategories = await upsertRows(
    db,
    {
      table: 'sub_categories',
      key: ['sub_category_id'],
      columns: { sub_category_id: 'bigint', name: 'text', updated_at: 'timestamptz' },
      compare: ['name'],
    },
    data.subCategories.map((s) => ({ sub_category_id: s.id, name: s.name, updated_at: now })),
  );
  for (const [table, result] of [
    ['countries', countries],
    ['states', states],
    ['sub_categories', subCategories],
  ] as const) {
    addCounts(stats, table, {
      inserted: result.inserted,
      updated: result.updated,
      unchanged: result.unchanged,
    });
  }
  return stats;
}
