/**
 * The connector's own files, as Airbyte's connectors keep them
 * (airbyte/source-listings-sync: acceptance-test-config.yml, metadata.yaml,
 * integration_tests/), and the Dockerfile's `airbyte` target, read as the tests of
 * test/airbyte check them (docs/airbyte.md, "Acceptance tests").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const CONNECTOR_DIR = 'airbyte/source-listings-sync';

export function connectorPath(relative: string): string {
  return join(CONNECTOR_DIR, relative);
}

export function readConnectorJson<T = unknown>(relative: string): T {
  return JSON.parse(readFileSync(connectorPath(relative), 'utf8')) as T;
}

/** One test's inputs in acceptance-test-config.yml, as CAT reads them. */
export interface AcceptanceInputs {
  config_path: string;
  status?: 'succeed' | 'failed' | 'exception';
  spec_path?: string;
  configured_catalog_path?: string;
  expect_records?: {
    path: string;
    exact_order?: boolean;
    extra_fields?: boolean;
    extra_records?: boolean;
  };
  empty_streams?: { name: string; bypass_reason?: string }[];
  future_state?: { future_state_path: string };
  cursor_paths?: Record<string, (string | number)[]>;
}

export interface AcceptanceConfig {
  connector_image: string;
  test_strictness_level?: string;
  acceptance_tests: Record<
    'spec' | 'connection' | 'discovery' | 'basic_read' | 'full_refresh' | 'incremental',
    { tests: AcceptanceInputs[] }
  >;
}

export function acceptanceConfig(): AcceptanceConfig {
  return parse(
    readFileSync(connectorPath('acceptance-test-config.yml'), 'utf8'),
  ) as AcceptanceConfig;
}

export function connectorMetadata(): {
  data: Record<string, unknown>;
  metadataSpecVersion: string;
} {
  return parse(readFileSync(connectorPath('metadata.yaml'), 'utf8'));
}

/** A stream as `discover` lists it (AirbyteStream), in what CAT reads of it. */
export interface DiscoveredStream {
  name: string;
  json_schema: Record<string, unknown>;
  supported_sync_modes: string[];
  source_defined_primary_key?: string[][];
  default_cursor_field?: string[];
  source_defined_cursor?: boolean;
}

/** A stream of a configured catalog (ConfiguredAirbyteStream). */
export interface ConfiguredStream<S = DiscoveredStream> {
  stream: S;
  sync_mode: string;
  destination_sync_mode: string;
  cursor_field?: string[];
  primary_key?: string[][];
}

/**
 * CAT's build_configured_catalog_from_discovered_catalog_and_empty_streams: the configured
 * catalog of a test that names no `configured_catalog_path` (conftest.py's
 * configured_catalog fixture, with no empty streams; TestBasicRead's, with the test's
 * `empty_streams`, which it leaves out). Every other discovered stream, in its first
 * supported sync mode, appended, with discover's default cursor and primary key.
 */
export function catalogFromDiscover<S extends DiscoveredStream>(
  discovered: Iterable<S>,
  emptyStreams: readonly { name: string }[] = [],
): { streams: ConfiguredStream<S>[] } {
  const empty = new Set(emptyStreams.map((s) => s.name));
  return {
    streams: [...discovered]
      .filter((stream) => !empty.has(stream.name))
      .map((stream) => ({
        stream,
        sync_mode: stream.supported_sync_modes[0]!,
        destination_sync_mode: 'append',
        cursor_field: stream.default_cursor_field,
        primary_key: stream.source_defined_primary_key,
      })),
  };
}

/** integration_tests/expected_records.jsonl: one `{stream, data, emitted_at}` a line. */
export function expectedRecords(
  relative: string,
): { stream: string; data: Record<string, unknown> }[] {
  return readFileSync(connectorPath(relative), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/** The sandbox a `secrets/config.json` is made for (integration_tests/sandbox.json). */
export function connectorSandbox(): {
  seed: number;
  accounts: number;
  businesses: number;
  startDate: string;
  port: number;
} {
  return readConnectorJson('integration_tests/sandbox.json');
}

/** A stage of the Dockerfile: its instructions, continuation lines joined, comments out. */
export function dockerStage(name: string): string[] {
  const lines = readFileSync('Dockerfile', 'utf8')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const start = lines.findIndex((line) => new RegExp(`^FROM \\S+ AS ${name}$`).test(line));
  if (start === -1) return [];
  const end = lines.findIndex((line, i) => i > start && line.startsWith('FROM '));
  return lines.slice(start, end === -1 ? undefined : end);
}

/** `KEY="value"` pairs of a LABEL or ENV instruction. */
export function pairs(instruction: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of instruction.matchAll(/([\w.]+)="([^"]*)"/g)) out[match[1]!] = match[2]!;
  return out;
}
