/**
 * The table of settings is the one place a setting lives: the schema, `Config`, the
 * defaults other modules use, `--help` and `listings-sync config` all derive from it, and
 * the configuration imports nothing of ours but src/log.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALERT_KIND_ENTRIES } from '../../src/alerts/kinds/index.ts';
import { DEFAULT_SINK_TIMEOUT_MS } from '../../src/alerts/sinks.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/api/client.ts';
import { ALERT_RULE_KINDS } from '../../src/config/alert-rules.ts';
import {
  COMMANDS,
  CONFIG_VARIABLES,
  commandVariables,
  configRows,
  credentialRows,
  DEFAULTS,
  environmentHelp,
  loadConfig,
  SETTINGS,
} from '../../src/config/index.ts';
import {
  DEFAULT_BUSINESS_CONCURRENCY,
  DEFAULT_OVERALL_BUSINESS_CONCURRENCY,
} from '../../src/sync/options.ts';
import { DEFAULT_DATABASE_TIMEOUTS } from '../../src/warehouse/driver/timeouts.ts';

describe('the table of settings', () => {
  it('gives every variable a one-line meaning and known commands', () => {
    for (const name of CONFIG_VARIABLES) {
      const entry = SETTINGS[name];
      expect(entry.meaning, name).toMatch(/^\S.*\S$/);
      expect(entry.meaning, name).not.toContain('\n');
      expect(entry.commands.length, name).toBeGreaterThan(0);
      for (const command of entry.commands) expect(COMMANDS, name).toContain(command);
    }
  });

  it('is what loadConfig gives with an empty environment, field by field', () => {
    const config = loadConfig({});
    for (const [field, value] of Object.entries(DEFAULTS)) {
      expect(config[field as keyof typeof config], field).toEqual(value);
    }
    expect(DEFAULTS).toMatchObject({
      syncConcurrency: 16,
      syncAccountConcurrency: 8,
      alertSinkTimeoutMs: 10_000,
      databaseStatementTimeoutMs: 60_000,
    });
  });

  it("is where the modules' defaults come from", () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(DEFAULTS.upstreamMaxBodyBytes);
    expect(DEFAULT_SINK_TIMEOUT_MS).toBe(DEFAULTS.alertSinkTimeoutMs);
    expect(DEFAULT_BUSINESS_CONCURRENCY).toBe(DEFAULTS.syncAccountConcurrency);
    expect(DEFAULT_OVERALL_BUSINESS_CONCURRENCY).toBe(DEFAULTS.syncConcurrency);
    expect(DEFAULT_DATABASE_TIMEOUTS).toEqual({
      connectMs: DEFAULTS.databaseConnectTimeoutMs,
      statementMs: DEFAULTS.databaseStatementTimeoutMs,
      lockMs: DEFAULTS.databaseLockTimeoutMs,
    });
  });

  it('a rules file tunes exactly the alert kinds there are', () => {
    // Every kind has its entry (label, message, raise), in the order of the rules.
    expect([...ALERT_RULE_KINDS]).toEqual(Object.keys(ALERT_KIND_ENTRIES));
  });
});

describe('--help', () => {
  it('lists the variables a command reads, each with its meaning and default', () => {
    const serve = environmentHelp('serve');
    expect(serve).toMatch(/^\nEnvironment:\n/);
    expect(serve).toMatch(/ {2}PORT +`serve` HTTP port \(default 8080\)\n/);
    expect(serve).toContain('WEBHOOK_SECRET');
    expect(serve).not.toContain('ALERT_SYNC_DELIVERY_SECONDS');
    expect(environmentHelp('sandbox')).toBe(
      '\nEnvironment:\n  LOG_LEVEL  fatal, error, warn, info, debug, trace or silent (default info)\n',
    );
    expect(environmentHelp('migrate')).toMatch(
      / {2}DATABASE_URL +postgres:\/\/ URL of the warehouse \(unset: the embedded PGlite in PGLITE_DATA_DIR\)\n/,
    );
  });

  it('lists every variable at the root and under `config`', () => {
    for (const name of CONFIG_VARIABLES) {
      expect(environmentHelp()).toContain(`  ${name} `);
      expect(commandVariables('config')).toContain(name);
    }
  });

  it('SYNC_ACCOUNT_CONCURRENCY says it caps businesses as well as requests', () => {
    expect(environmentHelp('sync')).toContain(
      'upstream requests in flight per credential, and businesses synced at once per credential (default 8)',
    );
  });
});

describe('listings-sync config rows', () => {
  it('shows values and sources, secrets masked', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://warehouse:s3cret-pw@db.example:5432/w',
      LISTINGS_BASE_URL: 'https://u:basepw@listings.example.com',
      LISTINGS_AUTH_TOKEN: 'tok-abcdef-123456',
      LISTINGS_USER_EMAIL: 'me@example.com',
      WEBHOOK_SECRET: 'one-secret,two-secret',
      ALERT_WEBHOOK_URL: 'https://hooks.example.com/path/HOOKSECRET',
      ALERT_WEBHOOK_SECRET: 'sign-secret',
      ALERT_SINK_TIMEOUT_SECONDS: '7',
    });
    const rows = Object.fromEntries(configRows(config).map(([name, ...rest]) => [name, rest]));
    expect(Object.keys(rows)).toEqual(CONFIG_VARIABLES);
    expect(rows.DATABASE_URL).toEqual(['postgres://warehouse:[REDACTED]@db.example:5432/w', 'env']);
    expect(rows.LISTINGS_AUTH_TOKEN).toEqual(['[set, 17 characters]', 'env']);
    expect(rows.WEBHOOK_SECRET).toEqual(['[2 secret(s) set]', 'env']);
    expect(rows.ALERT_WEBHOOK_URL).toEqual(['https://hooks.example.com/[REDACTED]', 'env']);
    expect(rows.ALERT_WEBHOOK_SECRET).toEqual(['[set, 11 characters]', 'env']);
    expect(rows.ALERT_SINK_TIMEOUT_SECONDS).toEqual(['7', 'env']);
    expect(rows.SYNC_REQUESTS_PER_SECOND).toEqual(['0 (no cap)', 'default']);
    expect(rows.ALERT_RULES_FILE).toEqual(['(unset: built-in rules)', 'default']);
    expect(rows.LISTINGS_CREDENTIALS_FILE).toEqual(['(unset)', 'default']);
    const text = JSON.stringify([configRows(config), credentialRows(config)]);
    for (const secret of [
      's3cret-pw',
      'basepw',
      'tok-abcdef',
      'one-secret',
      'HOOKSECRET',
      'sign-secret',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(credentialRows(config)).toEqual({
      header: ['credential', 'baseUrl', 'userEmail', 'authToken', 'source'],
      rows: [
        [
          'default',
          'https://u:[REDACTED]@listings.example.com',
          'me@example.com',
          '[set, 17 characters]',
          'env',
        ],
      ],
    });
  });
});

describe('the base imports nothing of ours', () => {
  it('src/config/** imports only itself, src/log.ts and src/errors.ts; those two import nothing of ours', () => {
    const root = join(import.meta.dirname, '../../src');
    const files = [
      ...readdirSync(join(root, 'config'), { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join('config', f)),
      'log.ts',
      'errors.ts',
    ];
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const source = readFileSync(join(root, file), 'utf8');
      const specifiers = [...source.matchAll(/\bfrom\s+'([^']+)'|import\(\s*'([^']+)'/g)].map(
        (m) => m[1] ?? m[2] ?? '',
      );
      const ours = specifiers.filter((s) => s.startsWith('.'));
      const allowed = !file.startsWith('config')
        ? []
        : ours.filter((s) => /^\.\/[^/]+$|^\.\.\/(log|errors)\.ts$/.test(s));
      expect(ours, file).toEqual(allowed);
    }
  });
});
