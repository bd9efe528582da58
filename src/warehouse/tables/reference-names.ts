/**
 * The reference tables as stored, for resolving names to ids (`countries`, `states`,
 * `sub_categories`: docs/warehouse.md, "countries, states, sub_categories"). Written by
 * reference-data.ts.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../database.ts';
import type { CountriesTable, StatesTable, SubCategoriesTable } from './reference-data.ts';

export interface StoredReferenceTables {
  countries: Pick<Selectable<CountriesTable>, 'country_id' | 'name'>[];
  states: Pick<Selectable<StatesTable>, 'state_id' | 'name' | 'iso' | 'country_id'>[];
  subCategories: Pick<Selectable<SubCategoriesTable>, 'sub_category_id' | 'name'>[];
}

/** Every row of the three tables, each in id order (empty tables before the first sync). */
export async function readReferenceTables(db: Db): Promise<StoredReferenceTables> {
  const [countries, states, subCategories] = await Promise.all([
    db.selectFrom('countries').select(['country_id', 'name']).orderBy('country_id').execute(),
    db
      .selectFrom('states')
      .select(['state_id', 'name', 'iso', 'country_id'])
      .orderBy('state_id')
      .execute(),
    db
      .selectFrom('sub_categories')
      .select(['sub_category_id', 'name'])
      .orderBy('sub_category_id')
      .execute(),
  ]);
  return { countries, states, subCategories };
}
