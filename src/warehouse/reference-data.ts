/**
 * `countries`, `states`, `sub_categories`: reference data, upserted whole. Nothing is
 * deleted: a partial read (one country's states failing) must not erase the rest.
 */
import {
  type Country,
  columnTypesOf,
  countryShape,
  rowOf,
  type State,
  type SubCategory,
  stateShape,
  subCategoryShape,
} from '../api/index.ts';
import { type AllColumnTypes, upsertRows } from './bulk-write.ts';
import type { Db, TableColumns, TimestampWithDefault } from './database.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

/*
 * The tables this writer writes, as Kysely sees them (`Database` in database.ts lists
 * them): each record's columns (its shape, src/api/reference.ts) and when it was written.
 */

export interface CountriesTable extends TableColumns<typeof countryShape> {
  updated_at: TimestampWithDefault;
}

export interface StatesTable extends TableColumns<typeof stateShape> {
  updated_at: TimestampWithDefault;
}

export interface SubCategoriesTable extends TableColumns<typeof subCategoryShape> {
  updated_at: TimestampWithDefault;
}

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
      columns: {
        ...columnTypesOf(countryShape),
        updated_at: 'timestamptz',
      } satisfies AllColumnTypes<'countries'>,
      compare: ['name'],
    },
    data.countries.map((c) => ({ ...rowOf(countryShape, c), updated_at: now })),
  );
  const states = await upsertRows(
    db,
    {
      table: 'states',
      key: ['state_id'],
      columns: {
        ...columnTypesOf(stateShape),
        updated_at: 'timestamptz',
      } satisfies AllColumnTypes<'states'>,
      compare: ['name', 'iso', 'country_id'],
    },
    data.states.map((s) => ({ ...rowOf(stateShape, s), updated_at: now })),
  );
  const subCategories = await upsertRows(
    db,
    {
      table: 'sub_categories',
      key: ['sub_category_id'],
      columns: {
        ...columnTypesOf(subCategoryShape),
        updated_at: 'timestamptz',
      } satisfies AllColumnTypes<'sub_categories'>,
      compare: ['name'],
    },
    data.subCategories.map((s) => ({ ...rowOf(subCategoryShape, s), updated_at: now })),
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
