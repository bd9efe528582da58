/**
 * The connector's acceptance configuration is true of the source (docs/airbyte.md,
 * "Acceptance tests"): every file it names exists; the image it names is the Dockerfile's
 * `airbyte` target, whose ENTRYPOINT is its AIRBYTE_ENTRYPOINT (CAT's test_docker_env) and
 * whose labels are metadata.yaml's; the spec file is what `spec` prints; each read test's
 * configured catalog (the file it names, or discover's when it names none, as CAT builds
 * it) has discover's streams, keys and cursors: the basic read and the full refresh every
 * stream, the incremental test every incremental stream. What the tests it configures
 * assert is test/airbyte/acceptance.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { runCli } from '../helpers/cli.ts';
import {
  acceptanceConfig,
  type ConfiguredStream,
  catalogFromDiscover,
  connectorMetadata,
  connectorPath,
  type DiscoveredStream,
  dockerStage,
  expectedRecords,
  pairs,
  readConnectorJson,
} from './connector-files.ts';
import { protocolLines } from './protocol-definitions.ts';

const services = { createApi: () => createApiClient() };

async function airbyte(args: string[]) {
  const finished = await runCli(['airbyte', ...args], {}, { services });
  return protocolLines(finished.stdout);
}

describe('the image', () => {
  const stage = dockerStage('airbyte');
  const metadata = connectorMetadata().data;

  it("the airbyte target's ENTRYPOINT is its AIRBYTE_ENTRYPOINT, split at the spaces (CAT's test_docker_env)", () => {
    const env = pairs(stage.filter((l) => l.startsWith('ENV ')).join(' '));
    const entrypoints = stage.filter((l) => l.startsWith('ENTRYPOINT '));
    expect(entrypoints).toHaveLength(1);
    const entrypoint = JSON.parse(entrypoints[0]!.slice('ENTRYPOINT '.length)) as string[];
    expect(env.AIRBYTE_ENTRYPOINT).toBeTruthy();
    expect(env.AIRBYTE_ENTRYPOINT).toBe(entrypoint.join(' '));
    expect(entrypoint.at(-1)).toBe('airbyte');
  });

  it("is labelled with metadata.yaml's name and version, package.json's version, and the acceptance config's image", () => {
    const labels = pairs(stage.filter((l) => l.startsWith('LABEL ')).join(' '));
    expect(labels['io.airbyte.name']).toBe(metadata.dockerRepository);
    expect(labels['io.airbyte.version']).toBe(metadata.dockerImageTag);
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
      .version;
    expect(metadata.dockerImageTag).toBe(version);
    expect(acceptanceConfig().connector_image.split(':')[0]).toBe(metadata.dockerRepository);
  });

  it('leaves the worker image as it was: the last stage, the runtime stage unchanged', () => {
    const worker = dockerStage('worker');
    expect(worker).toEqual(['FROM runtime AS worker']);
    const lastFrom = readFileSync('Dockerfile', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('FROM '))
      .at(-1);
    expect(lastFrom).toBe('FROM runtime AS worker');
    const runtime = dockerStage('runtime');
    expect(runtime).toContain('ENTRYPOINT ["node", "bin/listings-sync.mjs"]');
    expect(runtime).toContain('CMD ["serve"]');
  });
});

describe('acceptance-test-config.yml', () => {
  const config = acceptanceConfig();
  const metadata = connectorMetadata().data;

  it('names files that exist (secrets/ aside: made as docs/airbyte.md says)', () => {
    const paths = Object.values(config.acceptance_tests).flatMap(({ tests }) =>
      tests.flatMap((t) => [
        t.config_path,
        t.spec_path,
        t.configured_catalog_path,
        t.expect_records?.path,
        t.future_state?.future_state_path,
      ]),
    );
    for (const path of paths) {
      if (path === undefined || path.startsWith('secrets/')) continue;
      expect(existsSync(connectorPath(path)), path).toBe(true);
    }
    for (const name of [
      'spec',
      'connection',
      'discovery',
      'basic_read',
      'full_refresh',
      'incremental',
    ] as const) {
      expect(config.acceptance_tests[name]?.tests.length, name).toBeGreaterThan(0);
    }
  });

  it("the spec file is what spec prints, and metadata.yaml's documentationUrl the spec's", async () => {
    const [message] = await airbyte(['spec']);
    const spec = message!.type === 'SPEC' ? message!.spec : undefined;
    for (const { spec_path } of config.acceptance_tests.spec.tests) {
      expect(
        readConnectorJson(spec_path!),
        `${spec_path}: regenerate it with airbyte spec`,
      ).toEqual(spec);
    }
    expect(metadata.documentationUrl).toBe(spec!.documentationUrl);
  });

  it("each read test's configured catalog has discover's streams, keys, modes and cursors", async () => {
    const configPath = connectorPath('integration_tests/sample_config.json');
    const [message] = await airbyte(['discover', '--config', configPath]);
    expect(message!.type).toBe('CATALOG');
    const discovered = new Map(
      (message!.type === 'CATALOG' ? (message!.catalog.streams as DiscoveredStream[]) : []).map(
        (s) => [s.name, s],
      ),
    );
    const incremental = [...discovered.values()]
      .filter((s) => s.supported_sync_modes.includes('incremental'))
      .map((s) => s.name);
    expect(incremental.length).toBeGreaterThan(0);
    for (const test of ['basic_read', 'full_refresh', 'incremental'] as const) {
      for (const inputs of config.acceptance_tests[test].tests) {
        const path = inputs.configured_catalog_path;
        // CAT's configured_catalog fixtures: the file, or discover's catalog when none is
        // named (TestBasicRead's less its empty streams; at high strictness CAT refuses a
        // file for the basic read).
        if (test === 'basic_read' && config.test_strictness_level === 'high') {
          expect(path, 'basic_read at high strictness').toBe(undefined);
        }
        const empty = test === 'basic_read' ? (inputs.empty_streams ?? []) : [];
        const catalog = path
          ? readConnectorJson<{ streams: ConfiguredStream[] }>(path)
          : catalogFromDiscover(discovered.values(), empty);
        const label = path ?? `${test}: from discover`;
        // The basic read and the full refresh read every stream; the incremental test,
        // which reads only the streams its catalog sets incremental, every incremental one.
        const names = catalog.streams.map((s) => s.stream.name).sort();
        if (test === 'incremental') {
          expect(names, label).toEqual([...incremental].sort());
        } else {
          const notEmpty = [...discovered.keys()].filter((n) => !empty.some((e) => e.name === n));
          expect(names, label).toEqual(notEmpty.sort());
        }
        for (const entry of catalog.streams) {
          const stream = discovered.get(entry.stream.name)!;
          expect(entry.stream.supported_sync_modes, entry.stream.name).toEqual(
            stream.supported_sync_modes,
          );
          expect(stream.supported_sync_modes).toContain(entry.sync_mode);
          if (test === 'incremental')
            expect(entry.sync_mode, entry.stream.name).toBe('incremental');
          expect(entry.primary_key, entry.stream.name).toEqual(stream.source_defined_primary_key);
          expect(entry.stream.source_defined_primary_key).toEqual(
            stream.source_defined_primary_key,
          );
          if (entry.sync_mode === 'incremental') {
            expect(entry.cursor_field).toEqual(stream.default_cursor_field);
          }
        }
      }
    }
  });

  it("the expected records and the abnormal state are the streams' own", async () => {
    const configPath = connectorPath('integration_tests/sample_config.json');
    const [message] = await airbyte(['discover', '--config', configPath]);
    const streams = message!.type === 'CATALOG' ? message!.catalog.streams : [];
    for (const { expect_records } of config.acceptance_tests.basic_read.tests) {
      if (!expect_records) continue;
      const records = expectedRecords(expect_records.path);
      expect(records.length).toBeGreaterThan(0);
      for (const r of records) expect(streams.map((s) => s.name)).toContain(r.stream);
    }
    for (const { future_state } of config.acceptance_tests.incremental.tests) {
      const states = readConnectorJson<{ stream: { stream_descriptor: { name: string } } }[]>(
        future_state!.future_state_path,
      );
      const incremental = streams.filter((s) => s.supported_sync_modes.includes('incremental'));
      expect(states.map((s) => s.stream.stream_descriptor.name).sort()).toEqual(
        incremental.map((s) => s.name).sort(),
      );
    }
  });
});
