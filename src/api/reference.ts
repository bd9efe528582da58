/**
 * Reference data: operations 15, 16 and 17 of docs/upstream.md. These lists are accepted as
 * `{success, result: […]}` or as a bare array. A country is `{id, name}` upstream, with no
 * code: `countryByIsoCode` finds one by its ISO 3166 code through the code's English name.
 */
import { z } from 'zod';
import type { Credential } from '../config/index.ts';
import { type ApiClient, type CallOptions, callUpstream, idSegment } from './client.ts';
import { columns as c, recordShape } from './record-shape.ts';
import { id, parseRecords, storableString, text } from './schemas.ts';
import type { OperationName } from './transport/errors.ts';
import type { ListResult } from './types.ts';

/** A record of an `{id, name}` list: a country, or a sub category. */
const namedSchema = z
  .object({ id, name: storableString.min(1) })
  .transform((raw) => ({ id: raw.id, name: raw.name }));

export const countrySchema = namedSchema;
export type Country = z.output<typeof countrySchema>;
/** A country's columns (src/api/record-shape.ts): `countries` and the Airbyte record. */
export const countryShape = recordShape<Country>()({ id: c.id.as('country_id'), name: c.text });

export const stateSchema = z
  .object({ id, name: storableString.min(1), iso: text, country_id: id })
  .transform((raw) => ({ id: raw.id, name: raw.name, iso: raw.iso, countryId: raw.country_id }));
export type State = z.output<typeof stateSchema>;
/** A state's columns (src/api/record-shape.ts): `states` and the Airbyte record. */
export const stateShape = recordShape<State>()({
  id: c.id.as('state_id'),
  name: c.text,
  iso: c.maybeText,
  countryId: c.id,
});

export const subCategorySchema = namedSchema;
export type SubCategory = z.output<typeof subCategorySchema>;
/** A sub category's columns (src/api/record-shape.ts): `sub_categories` and the Airbyte record. */
export const subCategoryShape = recordShape<SubCategory>()({
  id: c.id.as('sub_category_id'),
  name: c.text,
});

const referenceList = z.array(z.unknown());

/** A reference list (`{success, result: […]}` or a bare array), each record validated on its own. */
function readReferenceList<T>(
  api: ApiClient,
  cred: Credential,
  call: { operation: OperationName; path: string; subject?: string },
  schema: z.ZodType<T>,
  opts?: CallOptions,
): Promise<ListResult<T>> {
  return callUpstream(
    api,
    cred,
    {
      ...call,
      method: 'GET',
      envelope: { bareArray: true },
      parse: (result) => parseRecords(schema, referenceList.parse(result)),
    },
    opts,
  );
}

/** The read of a whole reference list, of no parameter: `operation` at `path`. */
function referenceRead<T>(
  operation: OperationName,
  path: string,
  schema: z.ZodType<T>,
): (api: ApiClient, cred: Credential, opts?: CallOptions) => Promise<ListResult<T>> {
  return (api, cred, opts) => readReferenceList(api, cred, { operation, path }, schema, opts);
}

/** Operation 16. */
export const listCountries = referenceRead('list_countries', '/countries.json', countrySchema);

/** Operation 15: the states of one country. */
export function listStates(
  api: ApiClient,
  cred: Credential,
  countryId: number,
  opts?: CallOptions,
): Promise<ListResult<State>> {
  return readReferenceList(
    api,
    cred,
    {
      operation: 'list_states',
      path: `/countries/${idSegment('countryId', countryId)}/states.json`,
      subject: `for country ${countryId}`,
    },
    stateSchema,
    opts,
  );
}

/** Operation 17. */
export const listSubCategories = referenceRead(
  'list_sub_categories',
  '/sub_categories.json',
  subCategorySchema,
);

/** English names of ISO 3166-1 alpha-2 codes, from the ICU data Node ships with. */
const regionNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

const foldName = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * What a two-letter argument means as an ISO 3166-1 alpha-2 code (`US`, `au`, case aside):
 * undefined when it is not one; else the code, its English name (`United States`) and the
 * country of `countries` of that name (exactly, else the one name that contains it, as in
 * `United States of America`), undefined when the upstream lists none.
 */
export function countryByIsoCode(
  countries: readonly Country[],
  text: string,
): { code: string; name: string; country: Country | undefined } | undefined {
  const code = text.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(code)) return undefined;
  let name: string | undefined;
  try {
    name = regionNames.of(code);
  } catch {
    return undefined;
  }
  if (name === undefined) return undefined;
  const wanted = foldName(name);
  const exact = countries.find((c) => foldName(c.name) === wanted);
  const containing = countries.filter((c) => foldName(c.name).includes(wanted));
  return { code, name, country: exact ?? (containing.length === 1 ? containing[0] : undefined) };
}
