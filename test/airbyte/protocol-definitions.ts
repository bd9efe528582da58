/**
 * The Airbyte protocol's definitions, as the tests' own oracle: written by hand from
 * `protocol-models/src/main/resources/airbyte_protocol/airbyte_protocol.yaml` of
 * airbytehq/airbyte-protocol, read at commit 009278cf8677e1bfdfaeb7cabfc8415c06aef34 (the
 * YAML's `version: 1.0.0`; the repository's releases v0.17.x, the line the issue's 0.18.0
 * validation belongs to), and not from src/airbyte. Each definition keeps the YAML's
 * required fields, types and enums; every object allows more fields, as the YAML says
 * (`additionalProperties: true`). AirbyteMessage, AirbyteCatalog and
 * ConfiguredAirbyteCatalog are what a source writes and reads.
 */
import { z } from 'zod';

const streamDescriptor = z.looseObject({ name: z.string(), namespace: z.string().optional() });
const syncMode = z.enum(['full_refresh', 'incremental']);
const destinationSyncMode = z.enum(['append', 'overwrite', 'append_dedup']);

const recordMessage = z.looseObject({
  namespace: z.string().optional(),
  stream: z.string(),
  data: z.record(z.string(), z.unknown()),
  emitted_at: z.int(),
  meta: z
    .looseObject({
      changes: z
        .array(
          z.looseObject({
            field: z.string(),
            change: z.enum(['NULLED', 'TRUNCATED']),
            reason: z.string(),
          }),
        )
        .optional(),
    })
    .optional(),
});

const stateMessage = z.looseObject({
  type: z.enum(['GLOBAL', 'STREAM', 'LEGACY']).optional(),
  stream: z
    .looseObject({
      stream_descriptor: streamDescriptor,
      stream_state: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  global: z
    .looseObject({
      shared_state: z.record(z.string(), z.unknown()).optional(),
      stream_states: z.array(
        z.looseObject({
          stream_descriptor: streamDescriptor,
          stream_state: z.record(z.string(), z.unknown()).optional(),
        }),
      ),
    })
    .optional(),
  data: z.record(z.string(), z.unknown()).optional(),
  sourceStats: z.looseObject({ recordCount: z.number().optional() }).optional(),
  destinationStats: z.looseObject({ recordCount: z.number().optional() }).optional(),
});

const logMessage = z.looseObject({
  level: z.enum(['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE']),
  message: z.string(),
  stack_trace: z.string().optional(),
});

const connectorSpecification = z.looseObject({
  documentationUrl: z.url().optional(),
  changelogUrl: z.url().optional(),
  connectionSpecification: z.record(z.string(), z.unknown()),
  supportsIncremental: z.boolean().optional(),
  supportsNormalization: z.boolean().optional(),
  supportsDBT: z.boolean().optional(),
  supported_destination_sync_modes: z.array(destinationSyncMode).optional(),
  protocol_version: z.string().optional(),
});

const connectionStatus = z.looseObject({
  status: z.enum(['SUCCEEDED', 'FAILED']),
  message: z.string().optional(),
});

export const airbyteStream = z.looseObject({
  name: z.string(),
  json_schema: z.record(z.string(), z.unknown()),
  supported_sync_modes: z.array(syncMode).min(1),
  source_defined_cursor: z.boolean().optional(),
  default_cursor_field: z.array(z.string()).optional(),
  source_defined_primary_key: z.array(z.array(z.string())).optional(),
  namespace: z.string().optional(),
  is_resumable: z.boolean().optional(),
});

const catalog = z.looseObject({ streams: z.array(airbyteStream) });

/** What `read --catalog` is given: ConfiguredAirbyteCatalog. */
export const configuredCatalog = z.looseObject({
  streams: z.array(
    z.looseObject({
      stream: airbyteStream,
      sync_mode: syncMode,
      destination_sync_mode: destinationSyncMode,
      cursor_field: z.array(z.string()).optional(),
      primary_key: z.array(z.array(z.string())).optional(),
      generation_id: z.int().optional(),
      minimum_generation_id: z.int().optional(),
      sync_id: z.int().optional(),
    }),
  ),
});

const errorTrace = z.looseObject({
  message: z.string(),
  internal_message: z.string().optional(),
  stack_trace: z.string().optional(),
  failure_type: z.enum(['system_error', 'config_error', 'transient_error']).optional(),
  stream_descriptor: streamDescriptor.optional(),
});

const traceMessage = z.looseObject({
  type: z.enum(['ERROR', 'ESTIMATE', 'STREAM_STATUS', 'ANALYTICS']),
  emitted_at: z.number(),
  error: errorTrace.optional(),
  estimate: z
    .looseObject({
      name: z.string(),
      type: z.enum(['STREAM', 'SYNC']),
      namespace: z.string().optional(),
      row_estimate: z.int().optional(),
      byte_estimate: z.int().optional(),
    })
    .optional(),
  stream_status: z
    .looseObject({
      stream_descriptor: streamDescriptor,
      status: z.enum(['STARTED', 'RUNNING', 'COMPLETE', 'INCOMPLETE']),
      reasons: z
        .array(
          z.looseObject({
            type: z.enum(['RATE_LIMITED']),
            rate_limited: z.looseObject({ quota_reset: z.int().optional() }).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
  analytics: z.looseObject({ type: z.string(), value: z.string().optional() }).optional(),
});

/** An AirbyteMessage: `type` and the field that type carries. */
export const airbyteMessage = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('RECORD'), record: recordMessage }),
  z.looseObject({ type: z.literal('STATE'), state: stateMessage }),
  z.looseObject({ type: z.literal('LOG'), log: logMessage }),
  z.looseObject({ type: z.literal('SPEC'), spec: connectorSpecification }),
  z.looseObject({ type: z.literal('CONNECTION_STATUS'), connectionStatus }),
  z.looseObject({ type: z.literal('CATALOG'), catalog }),
  z.looseObject({ type: z.literal('TRACE'), trace: traceMessage }),
  z.looseObject({
    type: z.literal('CONTROL'),
    control: z.looseObject({
      type: z.enum(['CONNECTOR_CONFIG']),
      emitted_at: z.number(),
      connectorConfig: z.looseObject({ config: z.record(z.string(), z.unknown()) }).optional(),
    }),
  }),
]);

export type ParsedMessage = z.infer<typeof airbyteMessage>;

/** Every line of a command's standard output, each checked against the definitions. */
export function protocolLines(stdout: string): ParsedMessage[] {
  const lines = stdout.split('\n').filter((line) => line !== '');
  return lines.map((line, i) => {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new Error(`line ${i + 1} of standard output is not JSON: ${line.slice(0, 200)}`);
    }
    const parsed = airbyteMessage.safeParse(json);
    if (!parsed.success) {
      throw new Error(
        `line ${i + 1} is not an AirbyteMessage: ${z.prettifyError(parsed.error)}\n${line.slice(0, 300)}`,
      );
    }
    return parsed.data;
  });
}
