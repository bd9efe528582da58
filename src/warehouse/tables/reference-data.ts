import {
  type Country,
  columnTypesOf,
  countryShape,
  rowOf,
  type State,
  type SubCategory,
  stateShape,
  subCategoryShape,
  type ValueOf,
} from '../../api/index.ts';
import type { Db, TableColumns, TimestampWithDefault } from '../database.ts';
import { type AllColumnTypes, type ColumnOf, upsertRows } from '../write/bulk-write.ts';
import { addCounts, type WriteStats } from '../write/write-stats.ts';

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

/** Each table's records' shape (src/api/reference.ts). */
interface ReferenceShapes {
  countries: typeof countryShape;
  states: typeof stateShape;
  sub_categories: typeof subCategoryShape;
}
type ReferenceTable = keyof ReferenceShapes;

export interface ReferenceData {
  countries: Country[];
  states: State[];
  subCategories: SubCategory[];
}

/**
 * Each table's shape and key, the columns written (its shape's and `updated_at`: the type
 * check fails when the table has one they lack), and the columns whose change rewrites a
 * stored row.
 */
const TABLES: {
  [T in ReferenceTable]: {
    shape: ReferenceShapes[T];
    key: ColumnOf<T>;
    columns: AllColumnTypes<T>;
    compare: ColumnOf<T>[];
  };
} = {
  countries: {
    shape: countryShape,
    key: 'country_id',
    columns: stamped(countryShape),
    compare: ['name'],
  },
  states: {
    shape: stateShape,
    key: 'state_id',
    columns: stamped(stateShape),
    compare: ['name', 'iso', 'country_id'],
  },
  sub_categories: {
    shape: subCategoryShape,
    key: 'sub_category_id',
    columns: stamped(subCategoryShape),
    compare: ['name'],
  },
};

/** A shape's columns and `updated_at`, with their types. */
function stamped<S extends ReferenceShapes[ReferenceTable]>(shape: S) {
  return { ...columnTypesOf(shape), updated_at: 'timestamptz' } as const;
}

export async function writeReferenceData(db: Db, data: ReferenceData): Promise<WriteStats> {
  const now = new Date();
  const stats: WriteStats = {};
  await upsertReference(db, stats, now, 'countries', data.countries);
  await upsertReference(db, stats, now, 'states', data.states);
  await upsertReference(db, stats, now, 'sub_categories', data.subCategories);
  return stats;
}

/**
 * Upserts one table: each record's row (its shape's columns) stamped `updated_at`, every
 * column its interface above has; a stored row is rewritten only when one of the table's
 * `compare` columns differs. The counts go to `stats`.
 */
async function upsertReference<T extends ReferenceTable>(
  db: Db,
  stats: WriteStats,
  now: Date,
  table: T,
  records: readonly ValueOf<ReferenceShapes[T]>[],
): Promise<void> {
  const { shape, key, columns, compare } = TABLES[table];
  const result = await upsertRows(
    db,
    { table, key: [key], columns, compare },
    records.map((record) => ({ ...rowOf(shape, record), updated_at: now })),
  );
  addCounts(stats, table, {
    inserted: result.inserted,
    updated: result.updated,
    unchanged: result.unchanged,
  });
}

declare module '../database.ts' {
  interface Database {
    countries: CountriesTable;
    states: StatesTable;
    sub_categories: SubCategoriesTable;
  }
}
