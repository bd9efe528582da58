/** `reference`: countries, their states and the sub categories, read once per run. */
import { z } from 'zod';
import type { Country, State, SubCategory } from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { maybeText, text } from './record-fields.ts';

export const countryRecord = z.object({ id: z.int(), name: text }).strict();
export const stateRecord = z
  .object({ id: z.int(), name: text, iso: maybeText, country_id: z.int() })
  .strict();
export const subCategoryRecord = z.object({ id: z.int(), name: text }).strict();

export function countryRecordOf(c: Country): z.infer<typeof countryRecord> {
  return { id: c.id, name: c.name };
}

export function stateRecordOf(s: State): z.infer<typeof stateRecord> {
  return { id: s.id, name: s.name, iso: s.iso, country_id: s.countryId };
}

export function subCategoryRecordOf(s: SubCategory): z.infer<typeof subCategoryRecord> {
  return { id: s.id, name: s.name };
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
