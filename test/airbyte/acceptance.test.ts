/**
 * Airbyte's Connector Acceptance Tests (CAT: connector-acceptance-test's test_core.py,
 * test_full_refresh.py and test_incremental.py) applied by this suite itself, with the
 * inputs of the connector's own acceptance-test-config.yml (airbyte/source-listings-sync,
 * docs/airbyte.md, "Acceptance tests"), against the sandbox its integration_tests/sandbox.json
 * describes, over HTTP. Each `it` names the CAT test whose assertions it makes. Every line
 * the source writes is checked against the protocol's definitions (./protocol-definitions.ts);
 * the sandbox's clock is a manual one, and the messages' emitted_at an injected counter.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runCli } from '../helpers/cli.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import {
  type AcceptanceInputs,
  acceptanceConfig,
  type ConfiguredStream,
  catalogFromDiscover,
  connectorSandbox,
  expectedRecords,
  readConnectorJson,
  type DiscoveredStream as Stream,
} from './connector-files.ts';
import { configuredCatalog, type ParsedMessage, protocolLines } from './protocol-definitions.ts';

type JsonObject = Record<string, unknown>;
interface Catalog {
  streams: ConfiguredStream[];
}

const CAT = acceptanceConfig();
const FAST = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };
// emitted_at: a counter, so that "later" needs no wall clock.
let tick = Date.parse('2026-01-01T00:00:00Z');
const services = { createApi: () => createApiClient(FAST), now: () => ++tick };

let sandbox: RunningSandbox;
let dir: string;
let secretsConfig: JsonObject;
let fileCount = 0;

beforeAll(async () => {
  const options = connectorSandbox();
  sandbox = await startSandbox({
    seed: options.seed,
    accounts: options.accounts,
    businessesPerAccount: options.businesses,
    startDate: options.startDate,
    clock: manualClock(Date.parse(`${options.startDate}T12:00:00Z`)),
  });
  dir = mkdtempSync(join(tmpdir(), 'airbyte-cat-'));
  // secrets/config.json as docs/airbyte.md makes it: sample_config.json with the sandbox's
  // address and token (its names and e-mails are the sandbox's already).
  const sample = readConnectorJson<{ credentials: JsonObject[] }>(
    'integration_tests/sample_config.json',
  );
  secretsConfig = {
    ...sample,
    credentials: sample.credentials.map((c) => {
      const live = sandbox.credentials.find((s) => s.name === c.name);
      expect(live, `sample_config.json's credential ${String(c.name)}`).toBeDefined();
      expect(c.userEmail).toBe(live!.userEmail);
      return { ...c, baseUrl: live!.baseUrl, authToken: live!.authToken };
    }),
  };
});
afterAll(async () => {
  await sandbox?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function file(value: unknown): string {
  const path = join(dir, `input-${++fileCount}.json`);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** A test's `config_path`: secrets/ is the configuration made for the sandbox. */
function configFile(path: string): string {
  return path.startsWith('secrets/') ? file(secretsConfig) : file(readConnectorJson(path));
}

async function airbyte(args: string[]): Promise<ParsedMessage[]> {
  const finished = await runCli(['airbyte', ...args], {}, { services });
  return protocolLines(finished.stdout);
}

function ofType<T extends ParsedMessage['type']>(messages: ParsedMessage[], type: T) {
  return messages.filter((m): m is Extract<ParsedMessage, { type: T }> => m.type === type);
}

async function specOf(): Promise<JsonObject> {
  const [message] = ofType(await airbyte(['spec']), 'SPEC');
  return message!.spec as JsonObject;
}

async function discovered(configPath: string): Promise<Map<string, Stream>> {
  const catalogs = ofType(
    await airbyte(['discover', '--config', configFile(configPath)]),
    'CATALOG',
  );
  expect(catalogs).toHaveLength(1);
  return new Map((catalogs[0]!.catalog.streams as Stream[]).map((s) => [s.name, s]));
}

/**
 * The configured catalog a test reads, as CAT's configured_catalog fixtures build it. A
 * test that names a `configured_catalog_path`: the file's streams and choices with
 * discover's streams (build_configured_catalog_from_custom_catalog; a stream discover does
 * not list fails). One that names none: discover's catalog, every stream in its first
 * supported sync mode (catalogFromDiscover), less the basic read's `empty_streams`.
 */
async function configuredFor(
  inputs: AcceptanceInputs,
  emptyStreams: readonly { name: string }[] = [],
): Promise<Catalog> {
  const streams = await discovered(inputs.config_path);
  const path = inputs.configured_catalog_path;
  if (!path) {
    return configuredCatalog.parse(catalogFromDiscover(streams.values(), emptyStreams)) as Catalog;
  }
  const custom = configuredCatalog.parse(readConnectorJson(path)) as Catalog;
  for (const { stream } of custom.streams) {
    expect(streams.has(stream.name), `${path}: ${stream.name} is not discovered`).toBe(true);
  }
  return {
    streams: custom.streams.map((s) => ({ ...s, stream: streams.get(s.stream.name)! })),
  };
}

async function read(inputs: AcceptanceInputs, catalog: Catalog, state?: unknown) {
  return airbyte([
    'read',
    '--config',
    configFile(inputs.config_path),
    '--catalog',
    file(catalog),
    ...(state === undefined ? [] : ['--state', file(state)]),
  ]);
}

const records = (messages: ParsedMessage[]) => ofType(messages, 'RECORD').map((m) => m.record);

/** Every [path, value] of a JSON document, depth first. */
function* nodes(node: unknown, path: string[] = []): Generator<[string[], unknown]> {
  yield [path, node];
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) yield* nodes(v, [...path, String(i)]);
  } else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) yield* nodes(v, [...path, k]);
  }
}

/** CAT's find_all_values_for_key_in_schema. */
const valuesOf = (schema: unknown, key: string) =>
  [...nodes(schema)].filter(([p]) => p.at(-1) === key).map(([, v]) => v);

/** A value of a record at a path (CAT's primary key / cursor lookup). */
const at = (data: unknown, path: string[]) =>
  path.reduce<unknown>(
    (v, k) => (v && typeof v === 'object' ? (v as JsonObject)[k] : undefined),
    data,
  );

/** CAT's make_hashable: a record as canonical text, keys sorted. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as JsonObject)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

describe('TestSpec', () => {
  const SECRET_NAMES = [
    'client_token',
    'access_token',
    'api_token',
    'token',
    'secret',
    'client_secret',
    'password',
    'key',
    'service_account_info',
    'service_account',
    'tenant_id',
    'certificate',
    'jwt',
    'credentials',
    'app_id',
    'appid',
    'refresh_token',
  ];
  const RESERVED = ['anyOf', 'oneOf', 'allOf', 'not', 'properties', 'items', 'type', 'prefixItems'];

  it('test_config_match_spec, test_match_expected, test_defined_refs_exist_in_json_spec_file', async () => {
    const spec = await specOf();
    const ajv = new Ajv({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(spec.connectionSpecification as JsonObject);
    for (const { config_path, spec_path } of CAT.acceptance_tests.spec.tests) {
      const config = Object.fromEntries(
        Object.entries(config_path ? secretsConfig : {}).filter(([k]) => !k.startsWith('_')),
      );
      if (config_path) expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
      if (spec_path) expect(spec).toEqual(readConnectorJson(spec_path));
    }
    expect(validate(secretsConfig), JSON.stringify(validate.errors)).toBe(true);
    expect(valuesOf(spec, '$ref')).toEqual([]);
  });

  it('test_enum_usage, test_property_type_is_not_array, test_object_not_empty, test_array_type', async () => {
    const schema = (await specOf()).connectionSpecification as JsonObject;
    for (const [path, value] of nodes(schema)) {
      const key = path.at(-1);
      if (key === 'enum')
        expect(new Set(value as unknown[]).size).toBe((value as unknown[]).length);
      if (key === 'type' && path.at(-3) === 'properties' && Array.isArray(value)) {
        expect(
          value.length === 1 || (value.length === 2 && value[1] === 'null'),
          path.join('/'),
        ).toBe(true);
      }
      if (key === 'type' && path.length > 1 && value === 'object') {
        const parent = at(schema, path.slice(0, -1)) as JsonObject;
        expect(
          Object.keys((parent.properties as JsonObject) ?? {}).length,
          path.join('/'),
        ).toBeGreaterThan(0);
      }
      if (key === 'type' && value === 'array') {
        const items = (at(schema, path.slice(0, -1)) as JsonObject).items as JsonObject | undefined;
        if (items === undefined) continue;
        expect(Array.isArray(items), path.join('/')).toBe(false);
        expect(
          ['object', 'string', 'number', 'integer'].includes(items.type as string) ||
            'enum' in items,
        ).toBe(true);
      }
    }
  });

  it('test_forbidden_complex_types, test_additional_properties_is_true', async () => {
    const schema = (await specOf()).connectionSpecification as JsonObject;
    const forbidden = [
      'not',
      'anyOf',
      'patternProperties',
      'prefixItems',
      'allOf',
      'if',
      'then',
      'else',
      'dependentSchemas',
      'dependentRequired',
    ];
    const found = [...nodes(schema)].filter(
      ([p]) => forbidden.includes(p.at(-1)!) && p.at(-2) !== 'properties',
    );
    expect(found.map(([p]) => p.join('/'))).toEqual([]);
    for (const value of valuesOf(schema, 'additionalProperties')) expect(value).toBe(true);
  });

  it('test_secret_is_properly_marked', async () => {
    const properties = ((await specOf()).connectionSpecification as JsonObject).properties;
    const exposed: string[] = [];
    const hidden: string[] = [];
    for (const [path] of nodes(properties)) {
      if (path.at(-1) !== 'type') continue;
      const name = [...path.slice(0, -1)]
        .reverse()
        .find((p) => !/^\d+$/.test(p) && !RESERVED.includes(p));
      if (!name || !SECRET_NAMES.includes(name.toLowerCase())) continue;
      const definition = at(properties, path.slice(0, -1)) as JsonObject;
      const types = [definition.type].flat();
      const canHold =
        types.some((t) => ['string', 'integer', 'number'].includes(t as string)) &&
        !definition.const;
      if (definition.airbyte_secret && !canHold) hidden.push(path.join('/'));
      if (!definition.airbyte_secret && canHold) exposed.push(path.join('/'));
    }
    expect({ exposed, hidden }).toEqual({ exposed: [], hidden: [] });
    // And the one secret the source has is marked, whatever its name.
    const token = at(properties, ['credentials', 'items', 'properties', 'authToken']) as JsonObject;
    expect(token.airbyte_secret).toBe(true);
  });
});

describe('TestConnection', () => {
  it('test_check: exactly one CONNECTION_STATUS, as each input expects', async () => {
    for (const { config_path, status } of CAT.acceptance_tests.connection.tests) {
      const statuses = ofType(
        await airbyte(['check', '--config', configFile(config_path)]),
        'CONNECTION_STATUS',
      );
      expect(statuses, config_path).toHaveLength(1);
      expect(statuses[0]!.connectionStatus.status, config_path).toBe(
        status === 'succeed' ? 'SUCCEEDED' : 'FAILED',
      );
    }
  });
});

describe('TestDiscovery', () => {
  it('test_discover, test_defined_cursors_exist_in_schema, test_primary_keys_exist_in_schema, test_streams_has_sync_modes', async () => {
    for (const { config_path } of CAT.acceptance_tests.discovery.tests) {
      const streams = await discovered(config_path);
      expect(streams.size).toBeGreaterThan(0);
      for (const stream of streams.values()) {
        const properties = stream.json_schema.properties as JsonObject;
        expect(properties, stream.name).toBeDefined();
        if (stream.default_cursor_field) {
          expect(
            at(
              properties,
              stream.default_cursor_field.flatMap((f, i) => (i ? ['properties', f] : [f])),
            ),
            stream.name,
          ).toBeDefined();
        }
        for (const key of stream.source_defined_primary_key ?? []) {
          expect(
            at(
              properties,
              key.flatMap((f, i) => (i ? ['properties', f] : [f])),
            ),
            `${stream.name} ${key}`,
          ).toBeDefined();
        }
        expect(stream.supported_sync_modes.length, stream.name).toBeGreaterThan(0);
      }
    }
  });

  it('test_defined_refs_exist_in_schema, test_defined_keyword_exist_in_schema (allOf, not), test_additional_properties_is_true', async () => {
    for (const { config_path } of CAT.acceptance_tests.discovery.tests) {
      for (const stream of (await discovered(config_path)).values()) {
        expect(valuesOf(stream.json_schema, '$ref'), stream.name).toEqual([]);
        for (const keyword of ['allOf', 'not']) {
          const found = [...nodes(stream.json_schema)].filter(
            ([p]) => p.at(-1) === keyword && p.at(-2) !== 'properties',
          );
          expect(found, `${stream.name}: ${keyword}`).toEqual([]);
        }
        for (const value of valuesOf(stream.json_schema, 'additionalProperties')) {
          expect(value, stream.name).toBe(true);
        }
      }
    }
  });
});

describe('TestBasicRead', () => {
  it('test_read: records valid by their schemas, every stream not declared empty has records, no null primary key, the expected records', async () => {
    for (const inputs of CAT.acceptance_tests.basic_read.tests) {
      // At high strictness CAT refuses a custom catalog here: the basic read is discover's.
      if (CAT.test_strictness_level === 'high')
        expect(inputs.configured_catalog_path).toBe(undefined);
      const catalog = await configuredFor(inputs, inputs.empty_streams);
      const got = records(await read(inputs, catalog));
      expect(got.length).toBeGreaterThan(0);
      const ajv = new Ajv({ strict: false, allErrors: true });
      addFormats.default(ajv);
      const validators = new Map(
        catalog.streams.map((s) => [s.stream.name, ajv.compile(s.stream.json_schema)]),
      );
      for (const record of got) {
        const validate = validators.get(record.stream)!;
        expect(validate(record.data), `${record.stream}: ${JSON.stringify(validate.errors)}`).toBe(
          true,
        );
      }
      const empty = new Set((inputs.empty_streams ?? []).map((s) => s.name));
      const withRecords = new Set(got.map((r) => r.stream));
      for (const { stream } of catalog.streams) {
        if (!empty.has(stream.name)) expect(withRecords.has(stream.name), stream.name).toBe(true);
      }
      for (const { stream } of catalog.streams) {
        for (const record of got.filter((r) => r.stream === stream.name)) {
          for (const key of stream.source_defined_primary_key ?? []) {
            expect(at(record.data, key), `${stream.name} ${key}`).not.toBeNull();
            expect(at(record.data, key), `${stream.name} ${key}`).toBeDefined();
          }
        }
      }
      if (inputs.expect_records) {
        const expected = expectedRecords(inputs.expect_records.path);
        for (const name of new Set(expected.map((r) => r.stream))) {
          const actual = new Set(
            got.filter((r) => r.stream === name).map((r) => canonical(r.data)),
          );
          const wanted = expected.filter((r) => r.stream === name).map((r) => canonical(r.data));
          expect(
            wanted.filter((r) => !actual.has(r)),
            `${name}: all expected records must be produced`,
          ).toEqual([]);
          if (!inputs.expect_records.extra_records) expect(actual.size).toBe(new Set(wanted).size);
        }
      }
    }
  });

  it('test_airbyte_trace_message_on_failure: a stream of no source with sync_mode INVALID is an ERROR trace', async () => {
    const inputs = CAT.acceptance_tests.basic_read.tests[0]!;
    const messages = await read(inputs, {
      streams: [
        {
          stream: {
            name: '__AIRBYTE__stream_that_does_not_exist',
            json_schema: { type: 'object', properties: { f1: { type: 'string' } } },
            supported_sync_modes: ['full_refresh'],
          },
          sync_mode: 'INVALID',
          destination_sync_mode: 'INVALID',
        },
      ],
    });
    expect(
      ofType(messages, 'TRACE').filter((m) => m.trace.type === 'ERROR').length,
    ).toBeGreaterThanOrEqual(1);
  });
});

describe('TestFullRefresh', () => {
  it('test_sequential_reads: emitted_at moves on, and the first read is a subset of the second by primary key', async () => {
    for (const inputs of CAT.acceptance_tests.full_refresh.tests) {
      const full = await configuredFor(inputs);
      const catalog = { streams: full.streams.filter((s) => s.sync_mode === 'full_refresh') };
      expect(catalog.streams.length).toBeGreaterThan(0);
      const first = records(await read(inputs, catalog));
      const second = records(await read(inputs, catalog));
      expect(first.length).toBeGreaterThan(0);
      expect(Math.max(...first.map((r) => r.emitted_at))).toBeLessThan(
        Math.min(...second.map((r) => r.emitted_at)),
      );
      for (const { stream, primary_key } of catalog.streams) {
        const key = (data: unknown) =>
          primary_key?.length
            ? JSON.stringify(primary_key.map((k) => at(data, k)))
            : canonical(data);
        const later = new Set(
          second.filter((r) => r.stream === stream.name).map((r) => key(r.data)),
        );
        const missing = first.filter((r) => r.stream === stream.name && !later.has(key(r.data)));
        expect(missing, stream.name).toEqual([]);
      }
    }
  });
});

describe('TestIncremental', () => {
  /** CAT's configured_catalog_for_incremental and cursor_paths fixtures. */
  async function incremental(inputs: AcceptanceInputs) {
    const full = await configuredFor(inputs);
    const catalog = {
      streams: full.streams
        .filter((s) => s.sync_mode === 'incremental')
        .map((s) => ({ ...s, cursor_field: s.cursor_field ?? s.stream.default_cursor_field })),
    };
    for (const s of catalog.streams) expect(s.cursor_field, s.stream.name).toBeDefined();
    const cursorPaths = new Map(
      catalog.streams.map((s) => [
        s.stream.name,
        (inputs.cursor_paths?.[s.stream.name] ?? [s.cursor_field!.at(-1)!]).map(String),
      ]),
    );
    return { catalog, cursorPaths };
  }

  /** CAT's construct_latest_state_from_messages, as the list of STREAM states read 2 is given. */
  function latestState(messages: ParsedMessage[]) {
    const latest = new Map<string, JsonObject>();
    for (const { state } of ofType(messages, 'STATE')) {
      if (state.type === 'STREAM' && state.stream) {
        latest.set(
          state.stream.stream_descriptor.name,
          (state.stream.stream_state ?? {}) as JsonObject,
        );
      }
    }
    return latest;
  }

  it("test_two_sequential_reads, and test_read_sequential_slices' bound: no record of read 1 after its state, read 2 has records none before read 1's", async () => {
    for (const inputs of CAT.acceptance_tests.incremental.tests) {
      const { catalog, cursorPaths } = await incremental(inputs);
      const output1 = await read(inputs, catalog);
      const records1 = records(output1);
      expect(
        ofType(output1, 'STATE').length,
        'First Read should produce at least one state',
      ).toBeGreaterThan(0);
      expect(records1.length, 'First Read should produce at least one record').toBeGreaterThan(0);
      const latest = latestState(output1);
      for (const record of records1) {
        const cursor = at(
          record.data,
          catalog.streams.find((s) => s.stream.name === record.stream)!.cursor_field!,
        );
        const state = at(latest.get(record.stream), cursorPaths.get(record.stream)!);
        expect(
          state,
          `${record.stream}: the state's cursor at ${cursorPaths.get(record.stream)}`,
        ).toBeDefined();
        expect(String(cursor) <= String(state)).toBe(true);
      }
      const stateInput = [...latest].map(([name, stream_state]) => ({
        type: 'STREAM',
        stream: { stream_descriptor: { name }, stream_state },
      }));
      const records2 = records(await read(inputs, catalog, stateInput));
      expect(records2.length, 'Second Read should produce at least one record').toBeGreaterThan(0);
      expect(new Set(records2.map((r) => r.stream))).toEqual(
        new Set(records1.map((r) => r.stream)),
      );
      for (const { stream, cursor_field } of catalog.streams) {
        const values1 = records1
          .filter((r) => r.stream === stream.name)
          .map((r) => String(at(r.data, cursor_field!)));
        const values2 = records2
          .filter((r) => r.stream === stream.name)
          .map((r) => String(at(r.data, cursor_field!)));
        const max1 = values1.reduce((a, b) => (b > a ? b : a));
        const min2 = values2.reduce((a, b) => (b < a ? b : a));
        expect(min2 >= max1, `${stream.name}: ${min2} >= ${max1}`).toBe(true);
      }
    }
  });

  it('test_state_with_abnormally_large_values: the future state reads no records', async () => {
    for (const inputs of CAT.acceptance_tests.incremental.tests) {
      if (!inputs.future_state) continue;
      const { catalog } = await incremental(inputs);
      const messages = await read(
        inputs,
        catalog,
        readConnectorJson(inputs.future_state.future_state_path),
      );
      expect(records(messages)).toEqual([]);
      expect(ofType(messages, 'STATE').length).toBeGreaterThan(0);
    }
  });
});
