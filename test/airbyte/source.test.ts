/**
 * `listings-sync airbyte …` against the sandbox over HTTP (docs/airbyte.md): every line
 * of every command is an AirbyteMessage by the protocol's definitions
 * (./protocol-definitions.ts), every RECORD validates against the JSON schema its stream
 * was discovered with (ajv, not the source's zod), the rankings state round-trips, and
 * failures come out as the protocol wants them: FAILED for `check`, an ERROR trace with
 * the right failure_type for `read`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeResponses } from '../../src/api/client.ts';
import { columnTypesOf, createApiClient, recordSchemaParts } from '../../src/api/index.ts';
import { airbyteCall } from '../../src/cli/program.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { CATALOG_STREAMS, STREAM_DESCRIPTORS } from '../../src/streams/index.ts';
import { runCli } from '../helpers/cli.ts';
import { manualClock } from '../helpers/manual-clock.ts';
import { type ParsedMessage, protocolLines } from './protocol-definitions.ts';

type JsonObject = Record<string, unknown>;
interface DiscoveredStream {
  name: string;
  json_schema: object;
  supported_sync_modes: string[];
  source_defined_primary_key: string[][];
  source_defined_cursor?: boolean;
  default_cursor_field?: string[];
}

const FAST = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };
const services = { createApi: () => createApiClient(FAST) };

let sandbox: RunningSandbox;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, accounts: 2, businessesPerAccount: 3 });
  dir = mkdtempSync(join(tmpdir(), 'airbyte-'));
});
afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

function sourceConfig(overrides: Record<string, unknown> = {}) {
  return {
    credentials: sandbox.credentials.map((c) => ({
      name: c.name,
      baseUrl: c.baseUrl,
      authToken: c.authToken,
      userEmail: c.userEmail,
    })),
    sync_account_concurrency: 4,
    ...overrides,
  };
}

async function airbyte(args: string[]) {
  const finished = await runCli(['airbyte', ...args], {}, { services });
  return { ...finished, messages: protocolLines(finished.stdout) };
}

function ofType<T extends ParsedMessage['type']>(messages: ParsedMessage[], type: T) {
  return messages.filter((m): m is Extract<ParsedMessage, { type: T }> => m.type === type);
}

async function discoverCatalog() {
  const { messages } = await airbyte(['discover', '--config', file('config.json', sourceConfig())]);
  const [catalog] = ofType(messages, 'CATALOG');
  return catalog!.catalog as {
    streams: { name: string; json_schema: object; supported_sync_modes: string[] }[];
  };
}

function configured(
  streams: { name: string; json_schema: object; supported_sync_modes: string[] }[],
  names?: string[],
) {
  return {
    streams: streams
      .filter((s) => !names || names.includes(s.name))
      .map((stream) => ({
        stream,
        sync_mode: stream.supported_sync_modes.includes('incremental')
          ? 'incremental'
          : 'full_refresh',
        destination_sync_mode: 'append',
      })),
  };
}

describe('as Airbyte calls the image', () => {
  it("takes spec, discover, read and check --config as airbyte commands, and leaves the program's own check alone", async () => {
    expect(airbyteCall(['node', 'main.ts', 'spec'])).toEqual([
      'node',
      'main.ts',
      'airbyte',
      'spec',
    ]);
    expect(airbyteCall(['node', 'main.ts', 'check', '--config', 'c.json'])).toEqual([
      'node',
      'main.ts',
      'airbyte',
      'check',
      '--config',
      'c.json',
    ]);
    expect(airbyteCall(['node', 'main.ts', 'check'])).toEqual(['node', 'main.ts', 'check']);
    expect(airbyteCall(['node', 'main.ts', 'sync', 'read'])).toEqual([
      'node',
      'main.ts',
      'sync',
      'read',
    ]);
    const { code, messages } = await (async () => {
      const finished = await runCli(['spec'], {}, { services });
      return { ...finished, messages: protocolLines(finished.stdout) };
    })();
    expect(code).toBe(0);
    expect(messages.map((m) => m.type)).toEqual(['SPEC']);
  });
});

describe('airbyte spec', () => {
  it('prints one SPEC whose connectionSpecification is a JSON schema that accepts a real config and marks the token secret', async () => {
    const { code, stdout, messages } = await airbyte(['spec']);
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toHaveLength(1);
    const [spec] = ofType(messages, 'SPEC');
    const schema = spec!.spec.connectionSpecification as Record<string, never>;
    const ajv = new Ajv({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(schema);
    expect(validate(sourceConfig()), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ credentials: [{ name: 'x' }] })).toBe(false);
    const properties = (schema as unknown as JsonObject).properties as JsonObject;
    const credentials = properties.credentials as JsonObject;
    const item = (credentials.items as JsonObject).properties as JsonObject;
    expect((item.authToken as JsonObject).airbyte_secret).toBe(true);
    expect((properties.sync_concurrency as JsonObject).default).toBe(16);
  });
});

/** Every `additionalProperties` in a schema, with where it is. */
function additionalProperties(node: unknown, at = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => additionalProperties(n, `${at}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => [
    ...(key === 'additionalProperties' && value !== true
      ? [`${at}: ${JSON.stringify(value)}`]
      : []),
    ...additionalProperties(value, `${at}.${key}`),
  ]);
}

describe('open schemas', () => {
  it('neither the spec nor any stream closes a schema (CAT test_additional_properties_is_true)', async () => {
    const [spec] = ofType((await airbyte(['spec'])).messages, 'SPEC');
    expect(additionalProperties(spec!.spec.connectionSpecification)).toEqual([]);
    const catalog = await discoverCatalog();
    for (const stream of catalog.streams) {
      expect(additionalProperties(stream.json_schema), stream.name).toEqual([]);
    }
  });

  it('keys the source does not read are ignored and named in a LOG at warn', async () => {
    const config = sourceConfig({ _extra: 1 }) as ReturnType<typeof sourceConfig> & JsonObject;
    (config.credentials[0] as JsonObject).note = 'from the UI';
    const path = file('extra.json', config);
    const { code, messages } = await airbyte(['check', '--config', path]);
    expect(code).toBe(0);
    expect(ofType(messages, 'CONNECTION_STATUS')[0]!.connectionStatus.status).toBe('SUCCEEDED');
    const warns = ofType(messages, 'LOG').filter((m) => m.log.level === 'WARN');
    expect(warns).toHaveLength(1);
    expect(warns[0]!.log.message).toContain('"_extra", "credentials[0].note"');
    const discovered = await airbyte(['discover', '--config', path]);
    expect(ofType(discovered.messages, 'CATALOG')).toHaveLength(1);
  });
});

/** The Airbyte type a destination maps a column's schema to (docs/airbyte.md, "Column types"). */
function airbyteTypeOf(schema: JsonObject): string {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const [type, ...rest] = types as string[];
  if (rest.length > 1 || (rest.length === 1 && rest[0] !== 'null')) return 'union';
  const nullable = rest.length === 1 ? '?' : '';
  if (type === 'string' && schema.format === 'date') return `date${nullable}`;
  if (type === 'string' && schema.format === 'date-time') {
    return schema.airbyte_type === 'timestamp_with_timezone'
      ? `timestamp_with_timezone${nullable}`
      : 'untyped date-time';
  }
  if (['string', 'integer', 'number', 'boolean', 'array', 'object'].includes(type!)) {
    return `${type}${nullable}`;
  }
  return `untyped ${JSON.stringify(schema)}`;
}

/** Every schema node that a type mapper reads as a union and lands as JSON. */
function unions(node: unknown, at = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => unions(n, `${at}[${i}]`));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => [
    ...(['anyOf', 'oneOf', 'allOf'].includes(key) ? [`${at}.${key}`] : []),
    ...unions(value, `${at}.${key}`),
  ]);
}

/** The rows of the markdown table under `heading` in `doc` whose first cell is code. */
function tableRows(doc: string, heading: string, header: string): string[][] {
  const from = doc.indexOf(header, doc.indexOf(heading));
  const rows: string[][] = [];
  for (const line of doc.slice(from).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** The section of docs/warehouse.md whose heading names `table`: up to the next heading. */
function warehouseSection(doc: string, table: string): string {
  const lines = doc.split('\n');
  const at = lines.findIndex(
    (line) => /^#{3,4} /.test(line) && new RegExp(`\\b${table}\\b`).test(line),
  );
  if (at < 0) return '';
  const end = lines.findIndex((line, i) => i > at && /^#{2,4} /.test(line));
  return lines.slice(at, end < 0 ? undefined : end).join('\n');
}

describe('column types', () => {
  it('every column is one of Airbyte\'s types, nullable as [X, "null"], given by its warehouse type as docs/airbyte.md\'s tables say', async () => {
    const catalog = await discoverCatalog();
    const docs = readFileSync('docs/airbyte.md', 'utf8');
    const warehouse = readFileSync('docs/warehouse.md', 'utf8');
    const documentedTypes = tableRows(docs, '### Column types', '| warehouse type |');
    const documentedStreams = tableRows(docs, '### Column types', '| stream | table |');
    const byName = new Map(
      STREAM_DESCRIPTORS.flatMap((d): readonly { name: string; schema: object }[] => d.catalog).map(
        (c) => [c.name, c.schema],
      ),
    );
    // What the catalog says: each warehouse type's Airbyte type, and each stream's own keys.
    const types = new Map<string, Set<string>>();
    const streams: string[][] = [];
    const stored: [stream: string, table: string, columns: string[]][] = [];
    for (const stream of catalog.streams) {
      expect(unions(stream.json_schema), stream.name).toEqual([]);
      const properties = (stream.json_schema as JsonObject).properties as Record<
        string,
        JsonObject
      >;
      for (const [column, schema] of Object.entries(properties)) {
        expect(airbyteTypeOf(schema), `${stream.name}.${column}`).not.toMatch(/^(untyped|union)/);
      }
      const parts = recordSchemaParts(byName.get(stream.name) as never);
      expect(parts, `${stream.name} is made by recordSchemaOf from a shape`).toBeDefined();
      const { shape, keys } = parts!;
      for (const field of shape.fields) {
        const key = field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        const sql = (shape.columns[field] as { sql: string }).sql;
        const type = airbyteTypeOf(properties[key]!).replace('?', '');
        types.set(sql, new Set([...(types.get(sql) ?? []), type]));
      }
      const row = documentedStreams.find((r) => r[0] === `\`${stream.name}\``);
      const table = row?.[1]?.replaceAll('`', '') ?? '';
      streams.push([
        `\`${stream.name}\``,
        row?.[1] ?? '?',
        keys.map((k) => `\`${k}\` ${airbyteTypeOf(properties[k]!)}`).join(', ') || 'none',
      ]);
      stored.push([stream.name, table, Object.keys(columnTypesOf(shape))]);
    }
    const expectedTypes = [...types]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([sql, airbyte]) => [sql, [...airbyte].join(' or ')]);
    expect(
      documentedTypes.map((r) => r.join(' | ')).join('\n'),
      expectedTypes.map((r) => `| ${r[0]} | ${r[1]} |`).join('\n'),
    ).toBe(expectedTypes.map((r) => r.join(' | ')).join('\n'));
    expect(
      documentedStreams.map((r) => r.join(' | ')).join('\n'),
      streams.map((r) => `| ${r.join(' | ')} |`).join('\n'),
    ).toBe(streams.map((r) => r.join(' | ')).join('\n'));
    // The stream's other columns are its table's, as docs/warehouse.md documents them.
    for (const [stream, table, columns] of stored) {
      const section = warehouseSection(warehouse, table);
      expect(section, `docs/warehouse.md has a section for ${stream}'s table`).not.toBe('');
      for (const column of columns) {
        expect(section, `docs/warehouse.md's ${table} names ${stream}'s ${column}`).toMatch(
          new RegExp(`\\b${column}\\b`),
        );
      }
    }
  });
});

describe("the spec is the configuration's rules", () => {
  it('every rule the spec states, check applies, and the other way round: walked value by value', async () => {
    const [message] = ofType((await airbyte(['spec'])).messages, 'SPEC');
    const spec = message!.spec;
    expect(spec.documentationUrl).toMatch(/^https:\/\/.+\/docs\/airbyte\.md$/);
    const schema = spec.connectionSpecification as JsonObject;
    const ajv = new Ajv({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(schema);
    const properties = schema.properties as Record<string, JsonObject>;
    const credential = (properties.credentials!.items as JsonObject).properties as Record<
      string,
      JsonObject
    >;
    // Each case: a configuration and the key it is about. Limits from the spec itself.
    const cases: { about: string; config: JsonObject }[] = [];
    const limits = Object.entries(properties).filter(([, p]) => p.type !== 'array');
    expect(limits.length).toBeGreaterThan(5);
    for (const [key, rule] of limits) {
      // A limit is a whole number with a range: no rule left unstated.
      expect(rule.type, key).toBe('integer');
      const min = rule.minimum as number;
      const max = rule.maximum as number;
      expect(typeof min === 'number' && typeof max === 'number', key).toBe(true);
      for (const value of [min - 1, min, min + 0.5, max, max + 1, String(min)]) {
        cases.push({ about: key, config: sourceConfig({ [key]: value }) });
      }
    }
    const withCredential = (field: string, value: unknown) => {
      const config = sourceConfig();
      (config.credentials[0] as JsonObject)[field] = value;
      return config;
    };
    const strings: Record<string, unknown[]> = {
      name: ['agency-east', 'a', 'x'.repeat(63), 'x'.repeat(64), '-east', 'agency east', ''],
      baseUrl: [
        'ftp://example.com',
        'example.com',
        'https://listings.example.com/api/v2',
        'https://listings.example.com/api/v2/',
        'https://listings.example.com?token=1',
        'https://listings.example.com#x',
        'https://',
      ],
      authToken: ['', 't'],
      userEmail: ['owner1', 'owner1@', '@example.com', 'a b@example.com', 'ops@example.com'],
    };
    // A credential field the spec gives a rule has cases here.
    for (const [field, rule] of Object.entries(credential)) {
      if (rule.pattern || rule.minLength || rule.format) {
        expect(Object.keys(strings), `cases for credentials[].${field}`).toContain(field);
      }
    }
    for (const [field, values] of Object.entries(strings)) {
      for (const value of values) {
        cases.push({
          about: `credentials[].${field} = ${JSON.stringify(value)}`,
          config: withCredential(field, value),
        });
      }
    }
    // The sandbox's base URL with a trailing slash or an upper-case scheme is still its URL.
    const base = sandbox.credentials[0]!.baseUrl;
    for (const url of [`${base}/`, base.replace(/^http/, 'HTTP')]) {
      cases.push({
        about: `credentials[].baseUrl = ${url}`,
        config: withCredential('baseUrl', url),
      });
    }
    cases.push(
      { about: 'credentials: []', config: sourceConfig({ credentials: [] }) },
      { about: 'streams', config: sourceConfig({ streams: ['countries', 'nope'] }) },
      { about: 'streams', config: sourceConfig({ streams: ['countries', 'countries'] }) },
      { about: 'streams', config: sourceConfig({ streams: ['countries'] }) },
    );
    const disagreements: string[] = [];
    let refused = 0;
    for (const [i, { about, config }] of cases.entries()) {
      const bySpec = validate(config) === true;
      const { messages, stderr } = await airbyte([
        'check',
        '--config',
        file(`rule-${i}.json`, config),
      ]);
      const [answer] = ofType(messages, 'CONNECTION_STATUS');
      expect(answer, `${about}: ${stderr}`).toBeDefined();
      const status = answer!.connectionStatus;
      // A token the upstream refuses passed the rules: the credential is wrong, not the form.
      const byCheck =
        status.status === 'SUCCEEDED' ||
        /the upstream refused the token/.test(status.message ?? '');
      if (!bySpec) refused += 1;
      if (bySpec !== byCheck) {
        disagreements.push(
          `${about}: spec ${bySpec ? 'accepts' : 'refuses'}, check says ${status.status} (${status.message})`,
        );
      }
    }
    expect(disagreements).toEqual([]);
    expect(refused).toBeGreaterThan(cases.length / 2);
  });
});

describe('airbyte check', () => {
  it('SUCCEEDED when every credential answers', async () => {
    const { code, messages } = await airbyte([
      'check',
      '--config',
      file('ok.json', sourceConfig()),
    ]);
    expect(code).toBe(0);
    const [status] = ofType(messages, 'CONNECTION_STATUS');
    expect(status!.connectionStatus.status).toBe('SUCCEEDED');
  });

  it('FAILED naming the credential and the fix for a bad token, never repeating it', async () => {
    const config = sourceConfig();
    config.credentials[1]!.authToken = 'wrong-token-s3cret';
    const { code, stdout, messages } = await airbyte([
      'check',
      '--config',
      file('bad.json', config),
    ]);
    expect(code).toBe(0);
    const [status] = ofType(messages, 'CONNECTION_STATUS');
    expect(status!.connectionStatus.status).toBe('FAILED');
    expect(status!.connectionStatus.message).toContain(
      `credential "${config.credentials[1]!.name}"`,
    );
    expect(status!.connectionStatus.message).toContain('check authToken and userEmail');
    expect(status!.connectionStatus.message).not.toContain(config.credentials[0]!.name);
    expect(stdout).not.toContain('wrong-token-s3cret');
  });

  it('FAILED naming the field for a configuration that breaks a rule', async () => {
    const { messages } = await airbyte([
      'check',
      '--config',
      file('rule.json', sourceConfig({ sync_concurrency: 0 })),
    ]);
    const [status] = ofType(messages, 'CONNECTION_STATUS');
    expect(status!.connectionStatus.status).toBe('FAILED');
    expect(status!.connectionStatus.message).toContain(
      'sync_concurrency must be a whole number from 1 to 1024',
    );
  });
});

describe('airbyte discover', () => {
  it('lists every stream with a compilable JSON schema, a primary key, and rankings incremental by day', async () => {
    const catalog = await discoverCatalog();
    // The descriptors' catalog streams, in their order (test/streams/descriptors.test.ts
    // pins that list).
    expect(catalog.streams.map((s) => s.name)).toEqual(CATALOG_STREAMS.map((s) => s.name));
    const ajv = new Ajv({ strict: false });
    addFormats.default(ajv);
    for (const stream of catalog.streams as DiscoveredStream[]) {
      expect(() => ajv.compile(stream.json_schema), stream.name).not.toThrow();
      expect(stream.source_defined_primary_key.length, stream.name).toBeGreaterThan(0);
    }
    const rankings = (catalog.streams as DiscoveredStream[]).find((s) => s.name === 'rankings')!;
    expect(rankings.supported_sync_modes).toEqual(['full_refresh', 'incremental']);
    expect(rankings.default_cursor_field).toEqual(['day']);
    expect(rankings.source_defined_cursor).toBe(true);
  });

  it('a config that is not JSON is a config_error trace and exit 1', async () => {
    const path = join(dir, 'broken.json');
    writeFileSync(path, '{"credentials": [');
    const { code, messages } = await airbyte(['discover', '--config', path]);
    expect(code).toBe(1);
    const [trace] = ofType(messages, 'TRACE');
    expect(trace!.trace.type).toBe('ERROR');
    expect(trace!.trace.error!.failure_type).toBe('config_error');
    expect(trace!.trace.error!.message).toContain('is not valid JSON');
  });
});

describe('airbyte read', () => {
  it('writes records valid by their discovered schemas, STATE after each stream, and no secret', async () => {
    const catalog = await discoverCatalog();
    const { code, stdout, messages } = await airbyte([
      'read',
      '--config',
      file('read.json', sourceConfig()),
      '--catalog',
      file('catalog.json', configured(catalog.streams)),
    ]);
    expect(code, stdout.slice(-2000)).toBe(0);
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validators = new Map(catalog.streams.map((s) => [s.name, ajv.compile(s.json_schema)]));
    const counts = new Map<string, number>();
    for (const { record } of ofType(messages, 'RECORD')) {
      const validate = validators.get(record.stream)!;
      expect(validate(record.data), `${record.stream}: ${JSON.stringify(validate.errors)}`).toBe(
        true,
      );
      counts.set(record.stream, (counts.get(record.stream) ?? 0) + 1);
    }
    for (const stream of catalog.streams) {
      if (stream.name === 'review_responses') continue;
      expect(counts.get(stream.name) ?? 0, stream.name).toBeGreaterThan(0);
    }
    // Each stream: STARTED, its records, STATE, COMPLETE; nothing of it after its STATE.
    for (const stream of catalog.streams) {
      const indexes = (pred: (m: ParsedMessage) => boolean) =>
        messages.flatMap((m, i) => (pred(m) ? [i] : []));
      const records = indexes((m) => m.type === 'RECORD' && m.record.stream === stream.name);
      const [state] = indexes(
        (m) => m.type === 'STATE' && m.state.stream?.stream_descriptor.name === stream.name,
      );
      const statuses = messages
        .filter(
          (m) =>
            m.type === 'TRACE' &&
            m.trace.type === 'STREAM_STATUS' &&
            m.trace.stream_status!.stream_descriptor.name === stream.name,
        )
        .map((m) => (m.type === 'TRACE' ? m.trace.stream_status?.status : undefined));
      expect(state, stream.name).toBeDefined();
      if (records.length) expect(Math.max(...records)).toBeLessThan(state!);
      expect(statuses, stream.name).toEqual(
        records.length ? ['STARTED', 'RUNNING', 'COMPLETE'] : ['STARTED', 'COMPLETE'],
      );
    }
    for (const credential of sandbox.credentials) {
      expect(stdout).not.toContain(credential.authToken);
      expect(stdout).not.toContain(credential.userEmail);
    }
    expect(stdout).not.toMatch(/"(password|login|site_password|site_login)"/);
  });

  it('emits each listing and rank the upstream answered, with null for a "-" rank', async () => {
    const credential = sandbox.credentials[0]!;
    const catalog = await discoverCatalog();
    const { messages } = await airbyte([
      'read',
      '--config',
      file('one.json', sourceConfig({ credentials: [sourceConfig().credentials[0]] })),
      '--catalog',
      file('one-catalog.json', configured(catalog.streams, ['listings', 'rankings'])),
    ]);
    const records = ofType(messages, 'RECORD').map((m) => m.record);
    // The oracle: the upstream's own answers, read over HTTP here, not through the client.
    const raw = async (path: string) => {
      const url = new URL(`${credential.baseUrl}/api/v2${path}`);
      url.searchParams.set('auth_token', credential.authToken);
      url.searchParams.set('user_email', credential.userEmail);
      return ((await (await fetch(url)).json()) as { result: unknown }).result;
    };
    const businesses = (await raw('/businesses.json')) as { id: number }[];
    let ranks = 0;
    let dashes = 0;
    for (const business of businesses) {
      const listings = (await raw(`/businesses/${business.id}/listings.json`)) as unknown[];
      const ours = records.filter(
        (r) => r.stream === 'listings' && r.data.business_id === business.id,
      );
      expect(ours).toHaveLength(listings.length);
      const rankings = (await raw(`/businesses/${business.id}/rankings.json`)) as Record<
        string,
        Record<string, unknown>
      >;
      for (const sites of Object.values(rankings)) {
        for (const value of Object.values(sites)) {
          if (value && typeof value === 'object') {
            // Google_new: one entry per local / organic.
            for (const inner of Object.values(value as object)) {
              ranks += 1;
              if (inner === '-') dashes += 1;
            }
          } else {
            ranks += 1;
            if (value === '-') dashes += 1;
          }
        }
      }
    }
    const rankRecords = records.filter((r) => r.stream === 'rankings');
    expect(rankRecords).toHaveLength(ranks);
    expect(rankRecords.filter((r) => r.data.rank === null)).toHaveLength(dashes);
    expect(new Set(rankRecords.map((r) => r.data.day))).toEqual(new Set([sandbox.today()]));
  });

  it("a read with the previous state re-emits the same upstream day's rankings (inclusive cursor), the state's day where CAT's cursor_paths look, and the next day after clock/advance", async () => {
    const catalog = await discoverCatalog();
    const configPath = file('inc.json', sourceConfig());
    const catalogPath = file(
      'inc-catalog.json',
      configured(catalog.streams, ['rankings', 'countries']),
    );
    const first = await airbyte(['read', '--config', configPath, '--catalog', catalogPath]);
    const stateOf = (messages: ParsedMessage[]) => ofType(messages, 'STATE').map((m) => m.state);
    const ranksOf = (messages: ParsedMessage[]) =>
      ofType(messages, 'RECORD')
        .filter((m) => m.record.stream === 'rankings')
        .map((m) => m.record.data);
    const firstRanks = ranksOf(first.messages);
    expect(firstRanks.length).toBeGreaterThan(0);
    const rankingsState = stateOf(first.messages).find(
      (s) => s.stream?.stream_descriptor.name === 'rankings',
    )!.stream!.stream_state as { day: string; days: Record<string, string> };
    // CAT's default cursor_paths: the cursor field's last element, `day`, in the stream state.
    expect(rankingsState.day).toBe(sandbox.today());
    expect(Object.keys(rankingsState.days).sort()).toEqual(
      sandbox.credentials.map((c) => c.name).sort(),
    );
    // CAT test_read_sequential_slices: no record of the first read is after its state.
    for (const r of firstRanks) expect(String(r.day) <= rankingsState.day).toBe(true);
    const statePath = file('state.json', stateOf(first.messages));

    const second = await airbyte([
      'read',
      '--config',
      configPath,
      '--catalog',
      catalogPath,
      '--state',
      statePath,
    ]);
    expect(second.code).toBe(0);
    // CAT test_two_sequential_reads: records again, none before the state's cursor.
    const secondRanks = ranksOf(second.messages);
    expect(secondRanks).toHaveLength(firstRanks.length);
    for (const r of secondRanks) expect(String(r.day) >= rankingsState.day).toBe(true);
    expect(ofType(second.messages, 'RECORD').some((m) => m.record.stream === 'countries')).toBe(
      true,
    );

    // The state of earlier versions, {"days": {...}} alone, is read as it was meant.
    const legacy = await airbyte([
      'read',
      '--config',
      configPath,
      '--catalog',
      catalogPath,
      '--state',
      file('legacy.json', [
        {
          type: 'STREAM',
          stream: {
            stream_descriptor: { name: 'rankings' },
            stream_state: { days: rankingsState.days },
          },
        },
      ]),
    ]);
    expect(legacy.code).toBe(0);
    expect(ranksOf(legacy.messages)).toHaveLength(firstRanks.length);

    const before = sandbox.today();
    sandbox.advanceDays(1);
    const third = await airbyte([
      'read',
      '--config',
      configPath,
      '--catalog',
      catalogPath,
      '--state',
      file('state2.json', stateOf(second.messages)),
    ]);
    const thirdRanks = ranksOf(third.messages);
    // The sandbox's keywords move from day to day: some, not the same count.
    expect(thirdRanks.length).toBeGreaterThan(0);
    expect(new Set(thirdRanks.map((r) => r.day))).toEqual(new Set([sandbox.today()]));
    expect(sandbox.today()).not.toBe(before);
    const thirdState = stateOf(third.messages).find(
      (s) => s.stream?.stream_descriptor.name === 'rankings',
    )!.stream!.stream_state as { day: string };
    expect(thirdState.day).toBe(sandbox.today());
  });

  it('a state of an impossible day is a config_error before anything is read; a day ahead of the upstream reads no rankings and says so at warn', async () => {
    const catalog = await discoverCatalog();
    const configPath = file('sv.json', sourceConfig());
    const catalogPath = file(
      'sv-catalog.json',
      configured(catalog.streams, ['countries', 'rankings']),
    );
    const stateFile = (name: string, stream_state: JsonObject) =>
      file(name, [
        { type: 'STREAM', stream: { stream_descriptor: { name: 'rankings' }, stream_state } },
      ]);
    for (const [i, state] of [
      { day: '2026-13-45' },
      { days: { [sandbox.credentials[0]!.name]: '2026-02-30' } },
      { day: 20261124 },
    ].entries()) {
      const bad = await airbyte([
        'read',
        '--config',
        configPath,
        '--catalog',
        catalogPath,
        '--state',
        stateFile(`bad-state-${i}.json`, state),
      ]);
      expect(bad.code).toBe(1);
      const [error] = ofType(bad.messages, 'TRACE').filter((m) => m.trace.type === 'ERROR');
      expect(error!.trace.error!.failure_type).toBe('config_error');
      expect(error!.trace.error!.message).toContain('not a calendar day');
      expect(ofType(bad.messages, 'RECORD')).toEqual([]);
    }

    const tomorrow = new Date(Date.parse(`${sandbox.today()}T00:00:00Z`) + 86_400_000)
      .toISOString()
      .slice(0, 10);
    const ahead = await airbyte([
      'read',
      '--config',
      configPath,
      '--catalog',
      catalogPath,
      '--state',
      stateFile('ahead.json', { day: tomorrow }),
    ]);
    expect(ahead.code).toBe(0);
    const records = ofType(ahead.messages, 'RECORD');
    expect(records.filter((m) => m.record.stream === 'rankings')).toEqual([]);
    expect(records.some((m) => m.record.stream === 'countries')).toBe(true);
    const warns = ofType(ahead.messages, 'LOG').filter(
      (m) => m.log.level === 'WARN' && m.log.message.includes('ahead of the upstream'),
    );
    expect(warns).toHaveLength(sandbox.credentials.length);
    expect(warns[0]!.log.message).toContain(tomorrow);
    const state = ofType(ahead.messages, 'STATE').find(
      (m) => m.state.stream?.stream_descriptor.name === 'rankings',
    )!.state.stream!.stream_state;
    expect(state).toEqual({ day: tomorrow, days: {} });
  });

  it('a catalog stream the source does not have is logged and INCOMPLETE, and the rest is read', async () => {
    const catalog = await discoverCatalog();
    const withUnknown = configured(catalog.streams, ['countries']);
    withUnknown.streams.push({
      stream: { name: 'nope', json_schema: {}, supported_sync_modes: ['full_refresh'] },
      sync_mode: 'full_refresh',
      destination_sync_mode: 'append',
    });
    const { code, messages } = await airbyte([
      'read',
      '--config',
      file('unknown.json', sourceConfig()),
      '--catalog',
      file('unknown-catalog.json', withUnknown),
    ]);
    expect(code).toBe(0);
    expect(ofType(messages, 'RECORD').some((m) => m.record.stream === 'countries')).toBe(true);
    const statuses = ofType(messages, 'TRACE').flatMap((m) =>
      m.trace.type === 'STREAM_STATUS'
        ? [`${m.trace.stream_status!.stream_descriptor.name} ${m.trace.stream_status!.status}`]
        : [],
    );
    expect(statuses).toContain('nope INCOMPLETE');
    expect(statuses).toContain('countries COMPLETE');
    expect(ofType(messages, 'TRACE').filter((m) => m.trace.type === 'ERROR')).toEqual([]);
    const warns = ofType(messages, 'LOG').filter((m) => m.log.level === 'WARN');
    expect(warns.some((m) => m.log.message.includes('stream "nope"'))).toBe(true);
  });

  it("a catalog stream the configuration's streams leave out is not read: logged and INCOMPLETE", async () => {
    const catalog = await discoverCatalog();
    const { code, messages } = await airbyte([
      'read',
      '--config',
      file('only-countries.json', sourceConfig({ streams: ['countries'] })),
      '--catalog',
      file('two-catalog.json', configured(catalog.streams, ['countries', 'keywords'])),
    ]);
    expect(code).toBe(0);
    const streams = new Set(ofType(messages, 'RECORD').map((m) => m.record.stream));
    expect(streams).toEqual(new Set(['countries']));
    const statuses = ofType(messages, 'TRACE').flatMap((m) =>
      m.trace.type === 'STREAM_STATUS'
        ? [`${m.trace.stream_status!.stream_descriptor.name} ${m.trace.stream_status!.status}`]
        : [],
    );
    expect(statuses).toEqual([
      'keywords INCOMPLETE',
      'countries STARTED',
      'countries RUNNING',
      'countries COMPLETE',
    ]);
    expect(
      ofType(messages, 'LOG').some(
        (m) => m.log.level === 'WARN' && m.log.message.includes('"keywords"'),
      ),
    ).toBe(true);
  });

  it('rankings is resumable: a full refresh given a state honours it, as incremental does', async () => {
    const catalog = await discoverCatalog();
    const rankings = catalog.streams.filter((s) => s.name === 'rankings');
    const fullRefresh = {
      streams: rankings.map((stream) => ({
        stream,
        sync_mode: 'full_refresh',
        destination_sync_mode: 'overwrite',
      })),
    };
    expect((rankings[0] as unknown as { is_resumable: boolean }).is_resumable).toBe(true);
    const tomorrow = new Date(Date.parse(`${sandbox.today()}T00:00:00Z`) + 86_400_000)
      .toISOString()
      .slice(0, 10);
    const given = { day: tomorrow, days: { [sandbox.credentials[0]!.name]: tomorrow } };
    const { code, messages } = await airbyte([
      'read',
      '--config',
      file('fr.json', sourceConfig()),
      '--catalog',
      file('fr-catalog.json', fullRefresh),
      '--state',
      file('fr-state.json', [
        {
          type: 'STREAM',
          stream: { stream_descriptor: { name: 'rankings' }, stream_state: given },
        },
      ]),
    ]);
    expect(code).toBe(0);
    const ranks = ofType(messages, 'RECORD').map((m) => m.record.data);
    // The first credential's state is ahead: none of its ranks; the second's are read.
    expect(ranks.some((r) => r.account === sandbox.credentials[0]!.name)).toBe(false);
    expect(ranks.some((r) => r.account === sandbox.credentials[1]!.name)).toBe(true);
    const [state] = ofType(messages, 'STATE');
    expect(state!.state.stream!.stream_state).toEqual({
      day: tomorrow,
      days: {
        [sandbox.credentials[0]!.name]: tomorrow,
        [sandbox.credentials[1]!.name]: sandbox.today(),
      },
    });
  });

  it('a bad token is a config_error trace naming the credential, and exit 1', async () => {
    const config = sourceConfig();
    config.credentials[0]!.authToken = 'nope-token-s3cret';
    const catalog = await discoverCatalog();
    const { code, stdout, messages } = await airbyte([
      'read',
      '--config',
      file('badtoken.json', config),
      '--catalog',
      file('bt-catalog.json', configured(catalog.streams, ['listings'])),
    ]);
    expect(code).toBe(1);
    const errors = ofType(messages, 'TRACE').filter((m) => m.trace.type === 'ERROR');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.trace.error!.failure_type).toBe('config_error');
    expect(errors[0]!.trace.error!.stream_descriptor?.name).toBe('listings');
    expect(stdout).not.toContain('nope-token-s3cret');
    // The other credential's listings still came.
    expect(
      ofType(messages, 'RECORD').some((m) => m.record.data.account === config.credentials[1]!.name),
    ).toBe(true);
  });

  it('an upstream outage is a transient_error trace, and exit 1', async () => {
    const catalog = await discoverCatalog();
    sandbox.setFaults({ errorRate: 1 });
    try {
      const { code, messages } = await airbyte([
        'read',
        '--config',
        file('outage.json', sourceConfig()),
        '--catalog',
        file('outage-catalog.json', configured(catalog.streams, ['countries'])),
      ]);
      expect(code).toBe(1);
      const [error] = ofType(messages, 'TRACE').filter((m) => m.trace.type === 'ERROR');
      expect(error!.trace.error!.failure_type).toBe('transient_error');
      expect(
        ofType(messages, 'TRACE').some(
          (m) => m.trace.type === 'STREAM_STATUS' && m.trace.stream_status!.status === 'INCOMPLETE',
        ),
      ).toBe(true);
    } finally {
      sandbox.setFaults({ errorRate: 0 });
    }
  });
});

/**
 * `airbyte read` of the rankings stream alone, incremental, for one credential, one
 * account at a time, with `services` (an API client the test watches).
 */
function readRankings(
  name: string,
  credential: RunningSandbox['credentials'][number],
  services: NonNullable<Parameters<typeof runCli>[2]>['services'],
) {
  const config = {
    credentials: [
      {
        name: credential.name,
        baseUrl: credential.baseUrl,
        authToken: credential.authToken,
        userEmail: credential.userEmail,
      },
    ],
    sync_account_concurrency: 1,
  };
  const stream = {
    name: 'rankings',
    json_schema: {},
    supported_sync_modes: ['full_refresh', 'incremental'],
  };
  const catalog = {
    streams: [{ stream, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
  };
  return runCli(
    [
      'airbyte',
      'read',
      '--config',
      file(`${name}.json`, config),
      '--catalog',
      file(`${name}-catalog.json`, catalog),
    ],
    {},
    { services },
  );
}

describe("the upstream's midnight during a read", () => {
  it('each rankings record carries the day of its own answer, and the state the latest', async () => {
    // The sandbox's clock at 23:59:58 of its day; the day turns after the first business's
    // rankings are answered, as the upstream's midnight would.
    const clock = manualClock(Date.parse('2026-01-01T23:59:58Z'));
    const upstream = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 3, clock });
    try {
      const credential = upstream.credentials[0]!;
      const raw = async (path: string) => {
        const url = new URL(`${credential.baseUrl}/api/v2${path}`);
        url.searchParams.set('auth_token', credential.authToken);
        url.searchParams.set('user_email', credential.userEmail);
        return ((await (await fetch(url)).json()) as { result: unknown }).result;
      };
      const businesses = ((await raw('/businesses.json')) as { id: number }[]).map((b) => b.id);
      const count = (answer: unknown) =>
        Object.values(answer as Record<string, Record<string, unknown>>).reduce(
          (n, sites) =>
            n +
            Object.values(sites).reduce<number>(
              (m, v) => m + (v && typeof v === 'object' ? Object.keys(v).length : 1),
              0,
            ),
          0,
        );
      const first = businesses[0]!;
      const before = upstream.today();
      const firstAnswer = count(await raw(`/businesses/${first}/rankings.json`));
      let turned = false;
      const turning = {
        createApi: () => {
          const api = createApiClient(FAST);
          observeResponses(api, (seen) => {
            if (seen.operation === 'get_rankings' && !turned) {
              turned = true;
              upstream.advanceDays(1);
              clock.advance(4_000);
            }
          });
          return api;
        },
      };
      const finished = await readRankings('midnight', credential, turning);
      expect(finished.code, finished.stdout.slice(-1000)).toBe(0);
      const messages = protocolLines(finished.stdout);
      const after = upstream.today();
      expect(after).not.toBe(before);
      const records = ofType(messages, 'RECORD').map((m) => m.record.data);
      // The first business's ranks are the day before midnight's, and say so.
      const ofFirst = records.filter((r) => r.business_id === first);
      expect(ofFirst).toHaveLength(firstAnswer);
      expect(new Set(ofFirst.map((r) => r.day))).toEqual(new Set([before]));
      // The others were answered after it: the new day's ranks, stamped with the new day.
      for (const id of businesses.slice(1)) {
        const ofBusiness = records.filter((r) => r.business_id === id);
        expect(ofBusiness).toHaveLength(count(await raw(`/businesses/${id}/rankings.json`)));
        expect(new Set(ofBusiness.map((r) => r.day)), String(id)).toEqual(new Set([after]));
      }
      const [state] = ofType(messages, 'STATE');
      expect(state!.state.stream!.stream_state).toEqual({
        day: after,
        days: { [credential.name]: after },
      });
    } finally {
      await upstream.close();
    }
  });
});

describe("an answer held across the upstream's midnight", () => {
  it("carries the day the upstream answered on, with that day's ranks", async () => {
    // The sandbox holds each answer 1 ms of its clock; the first rankings answer's hold is
    // where the day turns (the request came before midnight, the answer after).
    const manual = manualClock(Date.parse('2026-01-01T23:59:58Z'));
    let armed = false;
    let upstream: RunningSandbox | undefined;
    const clock = {
      now: manual.now,
      sleep: async (_ms: number) => {
        if (!armed) return;
        armed = false;
        upstream!.advanceDays(1);
        manual.advance(4_000);
      },
    };
    upstream = await startSandbox({ seed: 5, accounts: 1, businessesPerAccount: 3, clock });
    try {
      const credential = upstream.credentials[0]!;
      const before = upstream.today();
      upstream.setFaults({ latencyMs: 1 });
      let listed = false;
      const holding = {
        createApi: () => {
          const api = createApiClient(FAST);
          observeResponses(api, (seen) => {
            if (seen.operation === 'list_businesses' && !listed) listed = armed = true;
          });
          return api;
        },
      };
      const finished = await readRankings('held', credential, holding);
      expect(finished.code, finished.stdout.slice(-1000)).toBe(0);
      const after = upstream.today();
      expect(after).not.toBe(before);
      upstream.setFaults({ latencyMs: 0 });
      const records = ofType(protocolLines(finished.stdout), 'RECORD').map((m) => m.record.data);
      const businesses = [...new Set(records.map((r) => r.business_id as number))];
      expect(businesses).toHaveLength(3);
      // Every business was answered after the turn: the new day's ranks, stamped with it.
      for (const id of businesses) {
        const ofBusiness = records.filter((r) => r.business_id === id);
        expect(new Set(ofBusiness.map((r) => r.day)), String(id)).toEqual(new Set([after]));
        // As many records as the new day's answer has ranks.
        const url = new URL(`${credential.baseUrl}/api/v2/businesses/${id}/rankings.json`);
        url.searchParams.set('auth_token', credential.authToken);
        url.searchParams.set('user_email', credential.userEmail);
        const { result } = (await (await fetch(url)).json()) as {
          result: Record<string, Record<string, unknown>>;
        };
        const ranks = Object.values(result).reduce(
          (n, sites) =>
            n +
            Object.values(sites).reduce<number>(
              (m, v) => m + (v && typeof v === 'object' ? Object.keys(v).length : 1),
              0,
            ),
          0,
        );
        expect(ofBusiness, String(id)).toHaveLength(ranks);
      }
    } finally {
      await upstream.close();
    }
  });
});

describe('two upstreams whose ids overlap', () => {
  it("records' primary keys include the account: no two records of a stream share one", async () => {
    // Two sandboxes of one seed: the same business, review and keyword ids, two accounts.
    const twin = await startSandbox({ seed: 11, accounts: 1, businessesPerAccount: 2 });
    const other = await startSandbox({ seed: 11, accounts: 1, businessesPerAccount: 2 });
    try {
      const credentials = [twin, other].map((s, i) => ({
        name: `upstream-${i + 1}`,
        baseUrl: s.credentials[0]!.baseUrl,
        authToken: s.credentials[0]!.authToken,
        userEmail: s.credentials[0]!.userEmail,
      }));
      const catalog = await discoverCatalog();
      const { code, messages } = await airbyte([
        'read',
        '--config',
        file('twins.json', { credentials }),
        '--catalog',
        file(
          'twins-catalog.json',
          configured(
            catalog.streams.filter(
              (s) => !['countries', 'states', 'sub_categories'].includes(s.name),
            ),
          ),
        ),
      ]);
      expect(code).toBe(0);
      const keys = new Map(
        (catalog.streams as DiscoveredStream[]).map((s) => [s.name, s.source_defined_primary_key]),
      );
      const seen = new Map<string, Set<string>>();
      let overlapping = 0;
      for (const { record } of ofType(messages, 'RECORD')) {
        const key = JSON.stringify(keys.get(record.stream)!.map(([f]) => record.data[f!]));
        const set = seen.get(record.stream) ?? new Set<string>();
        expect(set.has(key), `${record.stream} ${key}`).toBe(false);
        set.add(key);
        seen.set(record.stream, set);
        if (record.data.account === 'upstream-2') overlapping += 1;
      }
      expect(overlapping).toBeGreaterThan(0);
      for (const [stream, key] of keys) {
        const reference = ['countries', 'states', 'sub_categories'].includes(stream);
        expect(key![0], stream).toEqual(reference ? ['id'] : ['account']);
      }
    } finally {
      await twin.close();
      await other.close();
    }
  });
});
