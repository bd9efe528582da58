/**
 * Reference data: operations 15, 16 and 17 (docs/upstream.md, "Operations"). These lists
 * are accepted as `{success, result: […]}` or as a bare array.
 */
import { z } from 'zod';
import { type ApiClient, type CallOptions, callUpstream, idSegment } from './client.ts';
import { countrySchema, parseRecords, stateSchema, subCategorySchema } from './schemas.ts';
import type { Country, Credential, ListResult, State, SubCategory } from './types.ts';

const referenceList = z.array(z.unknown());

/** Operation 16. */
export function listCountries(
  api: ApiClient,
  cred: Credential,
  opts?: CallOptions,
): Promise<ListResult<Country>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'list_countries',
      method: 'GET',
      path: '/countries.json',
      envelope: { bareArray: true },
      parse: (result) => parseRecords(countrySchema, referenceList.parse(result), (i) => `[${i}]`),
    },
    opts,
  );
}

/** Operation 15: the states of one country. */
export function listStates(
  api: ApiClient,
  cred: Credential,
  countryId: number,
  opts?: CallOptions,
): Promise<ListResult<State>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'list_states',
      method: 'GET',
      path: `/countries/${idSegment('countryId', countryId)}/states.json`,
      subject: `for country ${countryId}`,
      envelope: { bareArray: true },
      parse: (result) => parseRecords(stateSchema, referenceList.parse(result), (i) => `[${i}]`),
    },
    opts,
  );
}

/** Operation 17. */
export function listSubCategories(
  api: ApiClient,
  cred: Credential,
  opts?: CallOptions,
): Promise<ListResult<SubCategory>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'list_sub_categories',
      method: 'GET',
      path: '/sub_categories.json',
      envelope: { bareArray: true },
      parse: (result) =>
        parseRecords(subCategorySchema, referenceList.parse(result), (i) => `[${i}]`),
    },
    opts,
  );
}
