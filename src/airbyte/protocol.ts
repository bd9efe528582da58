/**
 * The Airbyte protocol, version 1, as far as a source speaks it (docs/airbyte.md): the
 * messages a source writes on standard output, one JSON object a line, and what it reads
 * (a configured catalog, a state). Written from the protocol's own definitions
 * (`airbyte_protocol.yaml` of airbytehq/airbyte-protocol); field names are the protocol's,
 * camelCase where it is (`connectionStatus`, `connectionSpecification`, `sourceStats`).
 */

export type SyncMode = 'full_refresh' | 'incremental';
export type DestinationSyncMode = 'append' | 'overwrite' | 'append_dedup';
export type LogLevel = 'FATAL' | 'ERROR' | 'WARN' | 'INFO' | 'DEBUG' | 'TRACE';
export type FailureType = 'system_error' | 'config_error' | 'transient_error';
export type StreamStatus = 'STARTED' | 'RUNNING' | 'COMPLETE' | 'INCOMPLETE';

/** A JSON schema, as a plain object. */
export type JsonSchema = Record<string, unknown>;

export interface StreamDescriptor {
  name: string;
  namespace?: string;
}

export interface ConnectorSpecification {
  documentationUrl?: string;
  connectionSpecification: JsonSchema;
  supportsIncremental?: boolean;
}

export interface AirbyteStream {
  name: string;
  json_schema: JsonSchema;
  supported_sync_modes: SyncMode[];
  source_defined_cursor?: boolean;
  default_cursor_field?: string[];
  source_defined_primary_key?: string[][];
  is_resumable?: boolean;
}

export interface AirbyteCatalog {
  streams: AirbyteStream[];
}

export interface ConfiguredAirbyteStream {
  stream: AirbyteStream;
  sync_mode: SyncMode;
  destination_sync_mode: DestinationSyncMode;
  cursor_field?: string[];
  primary_key?: string[][];
}

export interface ConfiguredAirbyteCatalog {
  streams: ConfiguredAirbyteStream[];
}

export interface AirbyteStreamState {
  stream_descriptor: StreamDescriptor;
  stream_state?: Record<string, unknown>;
}

export interface AirbyteStateMessage {
  type: 'STREAM';
  stream: AirbyteStreamState;
  sourceStats?: { recordCount: number };
}

export interface AirbyteErrorTrace {
  message: string;
  internal_message?: string;
  stack_trace?: string;
  failure_type: FailureType;
  stream_descriptor?: StreamDescriptor;
}

export type AirbyteTraceMessage =
  | { type: 'ERROR'; emitted_at: number; error: AirbyteErrorTrace }
  | {
      type: 'STREAM_STATUS';
      emitted_at: number;
      stream_status: { stream_descriptor: StreamDescriptor; status: StreamStatus };
    };

export type AirbyteMessage =
  | {
      type: 'RECORD';
      record: { stream: string; data: Record<string, unknown>; emitted_at: number };
    }
  | { type: 'STATE'; state: AirbyteStateMessage }
  | { type: 'LOG'; log: { level: LogLevel; message: string; stack_trace?: string } }
  | { type: 'SPEC'; spec: ConnectorSpecification }
  | {
      type: 'CONNECTION_STATUS';
      connectionStatus: { status: 'SUCCEEDED' | 'FAILED'; message?: string };
    }
  | { type: 'CATALOG'; catalog: AirbyteCatalog }
  | { type: 'TRACE'; trace: AirbyteTraceMessage };

/** Where a source's messages go: one JSON line each, on standard output. */
export type MessageSink = (message: AirbyteMessage) => void;

export function errorTrace(error: AirbyteErrorTrace, now: () => number = Date.now): AirbyteMessage {
  return { type: 'TRACE', trace: { type: 'ERROR', emitted_at: now(), error } };
}

export function streamStatus(
  name: string,
  status: StreamStatus,
  now: () => number = Date.now,
): AirbyteMessage {
  return {
    type: 'TRACE',
    trace: {
      type: 'STREAM_STATUS',
      emitted_at: now(),
      stream_status: { stream_descriptor: { name }, status },
    },
  };
}
