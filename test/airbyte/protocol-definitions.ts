/**
 * The Airbyte protocol's message definitions, v1 (`airbyte_protocol.yaml` of
 * airbytehq/airbyte-protocol), as the test's own oracle: each message type's required
 * fields and enums, written from the protocol's text and not from src/airbyte. Extra
 * fields are allowed where the protocol allows them (it says additionalProperties: true).
 */
import { z } from 'zod';

const streamDescriptor = z.looseObject({ name: z.string(), namespace: z.string().optional() });
const syncMode = z.enum(['full_refresh', 'incremental']);

const recordMessage = z.looseObject({
  namespace: z.string().optional(),
  stream: z.string(),
  data: z.record(z.string(), z.unknown()),
  emitted_at: z.int(),
});

const stateMessage = z.looseObject({
  type: z.enum(['GLOBAL', 'STREAM', 'LEGACY']).optional(),
  stream: z
    .looseObject({
      stream_descriptor: streamDescriptor,
      stream_state: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  sourceStats: z.looseObject({ recordCount: z.number().optional() }).optional(),
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
  stream_status: z
    .looseObject({
      stream_descriptor: streamDescriptor,
      status: z.enum(['STARTED', 'RUNNING', 'COMPLETE', 'INCOMPLETE']),
    })
    .optional(),
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
  z.looseObject({ type: z.literal('CONTROL'), control: z.looseObject({}) }),
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
