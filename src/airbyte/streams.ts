/**
 * The streams the Airbyte source offers (docs/airbyte.md, "Streams"), as the stream
 * descriptors declare them (src/streams/index.ts: each one's record schema, from which the
 * catalog's JSON schema is made, primary key and cursor, and how a domain value of src/api
 * becomes a record). Records carry the client's normalised values: numbers for latitude and
 * longitude, null for a `-` rank, ISO 8601 text for instants, and never a directory login
 * or password (the client drops them).
 */
import { z } from 'zod';
import { CATALOG_STREAMS, type CatalogStream, type CatalogStreamName } from '../streams/index.ts';
import type { AirbyteStream, JsonSchema, SyncMode } from './protocol.ts';

export { rankingRecordOf } from '../streams/rankings.ts';
export { countryRecordOf, stateRecordOf, subCategoryRecordOf } from '../streams/reference.ts';
export { reviewRecordOf, reviewResponseRecordOf } from '../streams/reviews.ts';

export type StreamName = CatalogStreamName;
export const STREAM_NAMES: readonly StreamName[] = CATALOG_STREAMS.map((s) => s.name);

/** The catalog stream's descriptor entry. */
export function shapeOf(name: StreamName): CatalogStream<StreamName> {
  return CATALOG_STREAMS.find((s) => s.name === name) as CatalogStream<StreamName>;
}

export function isIncremental(name: StreamName): boolean {
  return shapeOf(name).cursor !== undefined;
}

/** The stream as `discover` lists it. */
export function airbyteStream(name: StreamName): AirbyteStream {
  const shape = shapeOf(name);
  const modes: SyncMode[] = shape.cursor ? ['full_refresh', 'incremental'] : ['full_refresh'];
  return {
    name,
    json_schema: jsonSchemaOf(shape.schema),
    supported_sync_modes: modes,
    source_defined_primary_key: shape.primaryKey,
    ...(shape.cursor
      ? { source_defined_cursor: true, default_cursor_field: [shape.cursor], is_resumable: true }
      : {}),
  };
}

function jsonSchemaOf(schema: z.ZodObject): JsonSchema {
  return airbyteTyped(openSchema(z.toJSONSchema(schema, { target: 'draft-7' }))) as JsonSchema;
}

/**
 * The schema as Airbyte's destinations' type mappers read it (docs/airbyte.md, "Column
 * types"): a nullable field is `type: [X, "null"]`, not `anyOf` (which a destination lands
 * as untyped JSON), with `null` in its `enum` when it has one; an instant is a
 * `timestamp_with_timezone` (Airbyte's `airbyte_type`).
 */
function airbyteTyped(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(airbyteTyped);
  if (typeof node !== 'object' || node === null) return node;
  let fields = node as Record<string, unknown>;
  const anyOf = fields.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const [value, none] = anyOf as Record<string, unknown>[];
    if (none?.type === 'null' && typeof value?.type === 'string') {
      const { anyOf: _anyOf, ...outer } = fields;
      fields = {
        ...value,
        ...outer,
        type: [value.type, 'null'],
        ...(Array.isArray(value.enum) ? { enum: [...value.enum, null] } : {}),
      };
    }
  }
  const typed = Object.fromEntries(
    Object.entries(fields).map(([key, value]) => [key, airbyteTyped(value)]),
  );
  if (typed.format === 'date-time') typed.airbyte_type = 'timestamp_with_timezone';
  return typed;
}

/**
 * The schema with no `additionalProperties: false` at any depth: Airbyte's schemas are
 * open (a record may gain a field before its stream's schema says so; CAT's
 * test_additional_properties_is_true), docs/airbyte.md, "Streams".
 */
function openSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(openSchema);
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !(key === 'additionalProperties' && value === false))
      .map(([key, value]) => [key, openSchema(value)]),
  );
}
