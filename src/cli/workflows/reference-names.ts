/**
 * Names instead of ids for a business's country, state and sub category
 * (`"country": "United States"`, `"state": "Texas"` or `"TX"`, `"sub_category":
 * "Plumbers"`), resolved from the warehouse's reference tables or, when the warehouse
 * holds none yet, from the API (operations 15, 16, 17). A name matches case-insensitively
 * and exactly (a state by its name or its short code); an unknown or ambiguous name is a
 * usage error that lists the candidates.
 */
import type { Kysely } from 'kysely';
import {
  type ApiClient,
  type Country,
  type Credential,
  listCountries,
  listStates,
  listSubCategories,
  type State,
  type SubCategory,
} from '../../api/index.ts';
import { UsageError } from '../../usage-error.ts';
import type { Database } from '../../warehouse/database.ts';
import { readReferenceTables } from '../../warehouse/tables/reference-names.ts';

export interface ReferenceCatalog {
  countries: Country[];
  states: State[];
  subCategories: SubCategory[];
  /** Where it was read, for messages. */
  source: 'warehouse' | 'api';
}

/** The warehouse's reference tables, or the API's when the warehouse has none. */
export async function loadReferenceCatalog(
  db: Kysely<Database>,
  api: ApiClient,
  credential: Credential,
): Promise<ReferenceCatalog> {
  const { countries, states, subCategories } = await readReferenceTables(db);
  if (countries.length > 0 && states.length > 0 && subCategories.length > 0) {
    return {
      countries: countries.map((c) => ({ id: c.country_id, name: c.name })),
      states: states.map((s) => ({
        id: s.state_id,
        name: s.name,
        iso: s.iso,
        countryId: s.country_id,
      })),
      subCategories: subCategories.map((s) => ({ id: s.sub_category_id, name: s.name })),
      source: 'warehouse',
    };
  }
  const [apiCountries, apiSubCategories] = await Promise.all([
    listCountries(api, credential),
    listSubCategories(api, credential),
  ]);
  const stateLists = await Promise.all(
    apiCountries.records.map((country) => listStates(api, credential, country.id)),
  );
  return {
    countries: apiCountries.records,
    states: stateLists.flatMap((list) => list.records),
    subCategories: apiSubCategories.records,
    source: 'api',
  };
}

function fold(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}

function listCandidates(labels: string[]): string {
  const shown = labels.slice(0, 10).join('; ');
  return labels.length > 10 ? `${shown}; and ${labels.length - 10} more` : shown;
}

/**
 * The one entry whose name (or other key) equals `name`. None: the entries whose name
 * contains it are offered; several: all are listed.
 */
function pickOne<T extends { id: number; name: string }>(
  what: string,
  name: string,
  entries: readonly T[],
  keys: (entry: T) => Array<string | null>,
  label: (entry: T) => string,
): T {
  const wanted = fold(name);
  const exact = entries.filter((entry) =>
    keys(entry).some((key) => key !== null && fold(key) === wanted),
  );
  if (exact.length === 1) return exact[0]!;
  if (exact.length > 1) {
    throw new UsageError(
      `${what} "${name}" is ambiguous: it matches ${exact.length} (${listCandidates(exact.map(label))}). Give the id, or narrow it down${what === 'state' ? ' with "country"' : ''}.`,
    );
  }
  const near = entries.filter((entry) => fold(entry.name).includes(wanted));
  throw new UsageError(
    near.length
      ? `${what} "${name}" is unknown. Did you mean: ${listCandidates(near.map(label))}?`
      : `${what} "${name}" is unknown (no ${what} name contains it). ${validValues(what, entries.map(label))}`,
  );
}

/** What a command prints in full, for a list too long to quote. */
const LISTED_BY: Record<string, string> = {
  country: '`listings-sync api countries`',
  state: '`listings-sync api states COUNTRY`',
  'sub category': '`listings-sync api sub-categories`',
};
const PLURAL: Record<string, string> = {
  country: 'countries',
  state: 'states',
  'sub category': 'sub categories',
};
/** The most values an "unknown" answer quotes; past it, the command that lists them all. */
const QUOTED_VALUES = 20;

/** `The countries: United States (id 1); …`: the valid values, all of them or a command for the rest. */
function validValues(what: string, labels: string[]): string {
  const plural = PLURAL[what] ?? `${what}s`;
  if (labels.length === 0) return `There are no ${plural} to choose from.`;
  if (labels.length <= QUOTED_VALUES) return `The ${plural}: ${labels.join('; ')}.`;
  return (
    `The ${plural}: ${labels.slice(0, QUOTED_VALUES).join('; ')}; and ${labels.length - QUOTED_VALUES} more` +
    `${LISTED_BY[what] ? ` (${LISTED_BY[what]} lists them all)` : ''}.`
  );
}

/** A record of an `{id, name}` list (a country, a sub category) by its name. */
function resolveNamed<T extends { id: number; name: string }>(
  what: string,
  records: readonly T[],
  name: string,
): T {
  return pickOne(
    what,
    name,
    records,
    (r) => [r.name],
    (r) => `${r.name} (id ${r.id})`,
  );
}

export function resolveCountry(catalog: ReferenceCatalog, name: string): Country {
  return resolveNamed('country', catalog.countries, name);
}

/** A state by name or short code, within `countryId` when given. */
export function resolveState(
  catalog: ReferenceCatalog,
  name: string,
  countryId: number | undefined,
): State {
  const countryName = (id: number) =>
    catalog.countries.find((c) => c.id === id)?.name ?? `country ${id}`;
  const states =
    countryId === undefined
      ? catalog.states
      : catalog.states.filter((s) => s.countryId === countryId);
  return pickOne(
    'state',
    name,
    states,
    (s) => [s.name, s.iso],
    (s) => `${s.name}${s.iso ? ` [${s.iso}]` : ''}, ${countryName(s.countryId)} (id ${s.id})`,
  );
}

export function resolveSubCategory(catalog: ReferenceCatalog, name: string): SubCategory {
  return resolveNamed('sub category', catalog.subCategories, name);
}
