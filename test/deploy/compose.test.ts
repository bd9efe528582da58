/**
 * deploy/compose.yaml (docs/deploy.md, "Compose with PostgreSQL"), checked offline: against
 * the Compose specification's JSON schema where the `dclint` package (which ships it) is
 * installed, else skipped with the reason printed; and always against what the docs say
 * of it: PostgreSQL, then `migrate`, then `serve`, which owns the nightly schedule; no
 * secret in the file; only known settings; ports on the loopback address; the env file
 * examples hold placeholders only and load as a configuration.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  loadConfig,
  requireCredentials,
  requireWebhookSecrets,
  SETTINGS,
} from '../../src/config/index.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  env_file?: string | string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  restart?: string;
  read_only?: boolean;
  cap_drop?: string[];
}
const compose = parse(read('deploy/compose.yaml'), { merge: true }) as {
  services: Record<string, Service>;
};
const { postgres, migrate, serve } = compose.services as Record<string, Service>;

/** `KEY=value` lines of an env file, comments and blank lines left out. */
function envFile(path: string, options: { commented?: boolean } = {}): Record<string, string> {
  return Object.fromEntries(
    read(path)
      .split('\n')
      .map((line) => (options.commented ? line.replace(/^#(?=[A-Z_]+=)/, '') : line))
      .filter((line) => /^[A-Za-z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/** The Compose schema and a validator, from dclint; null when it is not installed. */
const SCHEMA = (() => {
  const require = createRequire(import.meta.url);
  try {
    // The schema file is not among the package's exports: find it beside package.json.
    const dclint = require.resolve('dclint/package.json');
    const schemaPath = join(dirname(dclint), 'schemas', 'compose.schema.json');
    const fromDclint = createRequire(dclint);
    const Ajv = fromDclint('ajv') as typeof import('ajv').default;
    const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as object;
    return new Ajv({ strict: false, allErrors: true, validateSchema: false }).compile(schema);
  } catch {
    process.stdout.write(
      'test/deploy/compose.test.ts: schema check skipped, the dclint package (the Compose schema) is not installed\n',
    );
    return null;
  }
})();

describe.skipIf(!SCHEMA)('deploy/compose.yaml: the Compose specification', () => {
  it('is valid against its schema', () => {
    const valid = SCHEMA!(compose);
    expect(SCHEMA!.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('and the schema catches a misspelt key', () => {
    const misspelt = structuredClone(compose) as { services: Record<string, object> };
    misspelt.services['serve'] = { ...misspelt.services['serve'], stop_grace_perid: '90s' };
    expect(SCHEMA!(misspelt)).toBe(false);
  });
});

describe('deploy/compose.yaml: what docs/deploy.md says of it', () => {
  it('PostgreSQL, then migrate once it answers, then serve once migrate succeeded', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['migrate', 'postgres', 'serve']);
    expect(postgres?.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(migrate?.command).toEqual(['migrate']);
    expect(migrate?.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(migrate?.restart).toBe('no');
    expect(serve?.command).toEqual(['serve']);
    expect(serve?.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    // One image, built from the repository.
    expect(migrate?.image).toBe(serve?.image);
    expect(migrate?.build).toBe('..');
  });

  it('serve owns the nightly schedule and has time to stop', () => {
    const schedule = serve?.environment?.['SYNC_SCHEDULE'];
    expect(schedule).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect(Number.parseInt(serve?.stop_grace_period ?? '0', 10)).toBeGreaterThanOrEqual(60);
    expect(serve?.restart).toBe('unless-stopped');
  });

  it('publishes the webhook and metrics ports on the loopback address, and checks health on the metrics port', () => {
    const env = serve?.environment ?? {};
    expect(serve?.ports).toEqual([
      `127.0.0.1:${env['PORT']}:${env['PORT']}`,
      `127.0.0.1:${env['METRICS_PORT']}:${env['METRICS_PORT']}`,
    ]);
    expect(serve?.healthcheck?.test.join(' ')).toContain(
      `http://127.0.0.1:${env['METRICS_PORT']}/healthz`,
    );
  });

  it('holds no secret: they come from the env files; only settings listings-sync knows', () => {
    for (const service of [migrate, serve]) {
      expect(service?.env_file).toBe('listings-sync.env');
      expect(service?.read_only).toBe(true);
      expect(service?.cap_drop).toEqual(['ALL']);
      for (const name of Object.keys(service?.environment ?? {})) {
        expect(Object.hasOwn(SETTINGS, name), name).toBe(true);
        expect(name).not.toMatch(/(_URL|SECRET|TOKEN|PASSWORD)$/);
      }
    }
    expect(postgres?.env_file).toBe('postgres.env');
    expect(JSON.stringify(postgres?.environment ?? {})).not.toMatch(/PASSWORD/);
  });

  it('the env file examples hold placeholders only, and load as a configuration', () => {
    const example = envFile('deploy/listings-sync.env.example');
    const withCommented = envFile('deploy/listings-sync.env.example', { commented: true });
    const proxyVariables = ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY'];
    for (const name of Object.keys(withCommented)) {
      if (!proxyVariables.includes(name)) expect(Object.hasOwn(SETTINGS, name), name).toBe(true);
    }
    for (const [name, value] of Object.entries(withCommented)) {
      if (/(_URL|SECRET|TOKEN|PASSWORD)$/.test(name)) {
        expect(value, name).toMatch(/REPLACE_ME|example\.com/);
      }
    }
    expect(envFile('deploy/postgres.env.example')).toEqual({ POSTGRES_PASSWORD: 'REPLACE_ME' });
    // serve's view: the example file plus the compose file's environment.
    const config = loadConfig({ ...example, ...serve?.environment });
    expect(requireCredentials(config)).toHaveLength(1);
    expect(requireWebhookSecrets(config)).toHaveLength(1);
    expect(config.databaseUrl).toBe('postgres://listings:REPLACE_ME@postgres:5432/listings');
    expect(config.metricsPort).toBe(Number(serve?.environment?.['METRICS_PORT']));
  });
});
