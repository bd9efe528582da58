/**
 * The datasets of a run (docs/lineage.md, "Datasets"), named as OpenLineage's Naming.md
 * says: the upstream operations read, one dataset per credential and operation, in the
 * namespace of the credential's base URL (`scheme://host[:port]`: no user, password, query
 * or path); the warehouse tables written, `database.schema.table` in the warehouse's
 * namespace, each with a schema facet from its record's one shape (src/api/record-shape.ts)
 * and the rows the run wrote; and the documented views, with the tables they read.
 */
import {
  type AnyShape,
  businessShape,
  columnTypesOf,
  countryShape,
  keywordShape,
  listingShape,
  reviewResponseShape,
  reviewShape,
  stateShape,
  subCategoryShape,
} from '../api/index.ts';
import type { OperationName } from '../operations.ts';
import { STREAM_DESCRIPTORS } from '../streams/index.ts';

/**
 * The path of each upstream read under the base URL, its ids as `{name}` (docs/upstream.md,
 * one section per operation); `get_business` and `get_business_full` are one path (the
 * second adds `type=all`, and a query is never part of a name).
 */
export const OPERATION_PATHS: Partial<Record<OperationName, string>> = {
  list_businesses: '/api/v2/businesses.json',
  get_business: '/api/v2/businesses/{business_id}.json',
  get_business_full: '/api/v2/businesses/{business_id}.json',
  list_listings: '/api/v2/businesses/{business_id}/listings.json',
  list_reviews: '/api/v2/businesses/{business_id}/reviews.json',
  get_response_status:
    '/api/v2/businesses/{business_id}/reviews/{review_id}/responses/{request_id}.json',
  get_rankings: '/api/v2/businesses/{business_id}/rankings.json',
  list_keywords: '/api/v2/businesses/{business_id}/keywords.json',
  list_countries: '/api/v2/countries.json',
  list_states: '/api/v2/countries/{country_id}/states.json',
  list_sub_categories: '/api/v2/sub_categories.json',
};

/** The record shape each table's columns come from (the columns a row adds are not listed). */
const TABLE_SHAPES: Readonly<Record<string, AnyShape>> = {
  businesses: businessShape,
  listings: listingShape,
  reviews: reviewShape,
  review_responses: reviewResponseShape,
  keywords: keywordShape,
  countries: countryShape,
  states: stateShape,
  sub_categories: subCategoryShape,
};

export interface DatasetId {
  namespace: string;
  name: string;
}

export interface CredentialRef {
  name: string;
  baseUrl: string;
}

/**
 * A credential's upstream read as a dataset: namespace `scheme://host[:port]` of its base
 * URL, name `{credential}{base path}{operation path}`. Never the token or e-mail (they
 * travel in the query, which no name holds), never a user or password of the URL.
 */
export function upstreamDataset(credential: CredentialRef, operation: OperationName): DatasetId {
  const url = URL.parse(credential.baseUrl);
  const namespace = url ? `${url.protocol}//${url.host}` : 'https://unknown';
  const basePath = url ? url.pathname.replace(/\/+$/, '') : '';
  const path = OPERATION_PATHS[operation] ?? `/${operation}`;
  return { namespace, name: `${credential.name}${basePath}${path}` };
}

/** The upstream datasets of `operations` (reads only), one per credential and path. */
export function upstreamDatasets(
  credentials: readonly CredentialRef[],
  operations: Iterable<string>,
): DatasetId[] {
  const reads = [...new Set(operations)].filter(
    (operation): operation is OperationName => operation in OPERATION_PATHS,
  );
  const seen = new Set<string>();
  const datasets: DatasetId[] = [];
  for (const credential of credentials) {
    for (const operation of reads) {
      const dataset = upstreamDataset(credential, operation);
      const key = `${dataset.namespace} ${dataset.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      datasets.push(dataset);
    }
  }
  return datasets;
}

/** Where the warehouse's tables are: its namespace, database and schema. */
export interface WarehouseLocation {
  namespace: string;
  database: string;
  schema: string;
}

export function tableDataset(at: WarehouseLocation, table: string): DatasetId {
  return { namespace: at.namespace, name: `${at.database}.${at.schema}.${table}` };
}

/** A table's schema facet fields, from its record's shape; undefined for a table of none. */
export function tableFields(table: string): { name: string; type: string }[] | undefined {
  const shape = TABLE_SHAPES[table];
  if (!shape) return undefined;
  return Object.entries(columnTypesOf(shape)).map(([name, type]) => ({ name, type: String(type) }));
}

/**
 * The operations a run of `streams` reads: the business list, each stream's reads, and the
 * reference lists when `reference` is among them.
 */
export function plannedOperations(streams: readonly string[]): OperationName[] {
  const operations = new Set<OperationName>(['list_businesses']);
  for (const descriptor of STREAM_DESCRIPTORS) {
    if (!streams.includes(descriptor.name)) continue;
    for (const read of descriptor.reads as readonly { operation: OperationName }[])
      operations.add(read.operation);
    if (descriptor.name === 'reference') {
      operations.add('list_countries');
      operations.add('list_states');
      operations.add('list_sub_categories');
    }
  }
  return [...operations];
}
