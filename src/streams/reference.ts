/** `reference`: countries, their states and the sub categories, read once per run. */
import type { z } from 'zod';
import {
  type Country,
  countryShape,
  recordOf,
  recordSchemaOf,
  type State,
  type SubCategory,
  stateShape,
  subCategoryShape,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';

/** The Airbyte records: each is its record's shape (src/api/reference.ts). */
export const countryRecord = recordSchemaOf(countryShape, {});
export const stateRecord = recordSchemaOf(stateShape, {});
export const subCategoryRecord = recordSchemaOf(subCategoryShape, {});

export function countryRecordOf(c: Country): z.infer<typeof countryRecord> {
  return recordOf(countryShape, c);
}

export function stateRecordOf(s: State): z.infer<typeof stateRecord> {
  return recordOf(stateShape, s);
}

export function subCategoryRecordOf(s: SubCategory): z.infer<typeof subCategoryRecord> {
  return recordOf(subCategoryShape, s);
}

export const reference = defineStream({
  name: 'reference',
  description: 'countries, states and sub categories, once per run',
  scope: 'run',
  reads: [],
  runOperations: ['list_countries', 'list_states', 'list_sub_categories'],
  daily: false,
  bounds: [],
  removals: 'none',
  // Replayed only when the kept run read it: a run of `--streams listings` did not.
  replay: 'run-reads',
  catalog: [
    { name: 'countries', schema: countryRecord, primaryKey: [['id']] },
    { name: 'states', schema: stateRecord, primaryKey: [['id']] },
    { name: 'sub_categories', schema: subCategoryRecord, primaryKey: [['id']] },
  ],
});
