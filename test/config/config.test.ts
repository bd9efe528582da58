import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadConfig,
  requireCredentials,
  requireWebhookSecrets,
} from '../../src/config/index.ts';

const TOKEN = 'tok_SECRET_1234567890';

function credentialsFile(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'ls-config-'));
  const file = join(dir, 'credentials.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: undefined,
      pgliteDataDir: './.data/pglite',
      credentials: [],
      syncSchedule: '0 3 * * *',
      syncTimezone: 'UTC',
      syncConcurrency: 16,
      syncAccountConcurrency: 8,
      syncRequestsPerSecond: undefined,
      webhookSecrets: [],
      port: 8080,
      logLevel: 'info',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads a credentials file and strips a trailing slash from baseUrl', () => {
    const file = credentialsFile([
      { name: 'east', baseUrl: 'https://api.example.com/', authToken: TOKEN, userEmail: 'a@b.c' },
      { name: 'west', baseUrl: 'http://127.0.0.1:4010', authToken: 'x', userEmail: 'w@b.c' },
    ]);
    const config = loadConfig({ LISTINGS_CREDENTIALS_FILE: file });
    expect(config.credentials.map((c) => [c.name, c.baseUrl])).toEqual([
      ['east', 'https://api.example.com'],
      ['west', 'http://127.0.0.1:4010'],
    ]);
    expect(config.credentialsSource).toBe(file);
  });

  it('builds the `default` credential from the three variables', () => {
    const config = loadConfig({
      LISTINGS_BASE_URL: 'https://api.example.com',
      LISTINGS_AUTH_TOKEN: TOKEN,
      LISTINGS_USER_EMAIL: 'me@example.com',
    });
    expect(requireCredentials(config)).toEqual([
      {
        name: 'default',
        baseUrl: 'https://api.example.com',
        authToken: TOKEN,
        userEmail: 'me@example.com',
      },
    ]);
  });

  it('names the missing variable of the trio, and never echoes the token', () => {
    const error = errorOf(() =>
      loadConfig({ LISTINGS_AUTH_TOKEN: TOKEN, LISTINGS_USER_EMAIL: 'a@b.c' }),
    );
    expect(error.message).toContain('LISTINGS_BASE_URL is not set');
    expect(error.message).not.toContain(TOKEN);
  });

  it('rejects a baseUrl that includes /api/v2, with the fix', () => {
    const file = credentialsFile([
      {
        name: 'x',
        baseUrl: 'https://api.example.com/api/v2',
        authToken: TOKEN,
        userEmail: 'a@b.c',
      },
    ]);
    const error = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file }));
    expect(error.message).toMatch(/entry 0\.baseUrl: baseUrl must be everything before \/api\/v2/);
    expect(error.message).not.toContain(TOKEN);
  });

  it.each([
    ['a query', `https://api.example.com/?auth_token=${TOKEN}`],
    ['a fragment', `https://api.example.com/#${TOKEN}`],
  ])('rejects a baseUrl with %s, which would be stored in accounts.base_url', (_what, baseUrl) => {
    const file = credentialsFile([{ name: 'x', baseUrl, authToken: 'tok', userEmail: 'a@b.c' }]);
    const error = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file }));
    expect(error.message).toContain(
      'entry 0.baseUrl: baseUrl must be everything before /api/v2, with no query (?…) or fragment (#…)',
    );
    expect(error.message).not.toContain(TOKEN);
    const env = errorOf(() =>
      loadConfig({
        LISTINGS_BASE_URL: baseUrl,
        LISTINGS_AUTH_TOKEN: 'tok',
        LISTINGS_USER_EMAIL: 'a@b.c',
      }),
    );
    expect(env.message).toContain('with no query (?…) or fragment (#…)');
    expect(env.message).not.toContain(TOKEN);
  });

  it('names each bad entry of the credentials file by index and field', () => {
    const file = credentialsFile([
      { name: 'a', baseUrl: 'ftp://x', authToken: TOKEN, userEmail: 'not-an-email' },
      { name: 'a', baseUrl: 'https://x', authToken: '', userEmail: 'a@b.c' },
    ]);
    const message = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file })).message;
    expect(message).toContain('entry 0.baseUrl: baseUrl must be an http:// or https:// URL');
    expect(message).toContain('entry 0.userEmail: userEmail must be an e-mail address');
    expect(message).toContain('entry 1.authToken: authToken must not be empty');
    expect(message).not.toContain(TOKEN);
  });

  it('explains an unreadable or non-JSON credentials file', () => {
    expect(
      errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: '/nonexistent/creds.json' })).message,
    ).toContain('cannot be read (ENOENT)');
    const file = credentialsFile(`[{"authToken": "${TOKEN}"`);
    const message = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file })).message;
    expect(message).toContain('is not valid JSON');
    expect(message).not.toContain(TOKEN);
  });

  it('places a JSON syntax error by line and column, quoting the line with values masked', () => {
    const file = credentialsFile(
      [
        '[',
        '  { "name": "east", "baseUrl": "https://api.example.com", "authToken": "' +
          TOKEN +
          '" "userEmail": "a@b.c" }',
        ']',
      ].join('\n'),
    );
    const message = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file })).message;
    const column = 73 + TOKEN.length + 2;
    expect(message.split('\n')[0]).toBe(
      `LISTINGS_CREDENTIALS_FILE "${file}" is not valid JSON: line 2, column ${column}, ` +
        'in: { "name": "east", "baseUrl": "https://api.example.com", "authToken": "…" "userEmail": "a@b.c" }',
    );
    expect(message).not.toContain(TOKEN);

    // A token left unquoted, or unterminated, is masked too.
    for (const line of [`{"authToken": ${TOKEN}}`, `{"authToken": "${TOKEN}`, `"${TOKEN}" x`]) {
      const bad = credentialsFile(`[\n${line}\n`);
      const text = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: bad })).message;
      expect(text).toMatch(/is not valid JSON: line 2, column \d+, in: /);
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(TOKEN.slice(0, 10));
    }
    // A long line is cut around the error, still masked.
    const long = credentialsFile(
      `[${'{"name": "n", "authToken": "t"}, '.repeat(6)}{"name": "east", "authToken": "${TOKEN}",, "x": 1}]`,
    );
    const cut = errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: long })).message;
    const excerpt = cut.split('\n')[0]?.split(', in: ')[1] ?? '';
    expect(excerpt).toMatch(/^….*"authToken": "…",, "x": 1}]$/);
    expect(excerpt.length).toBeLessThanOrEqual(101);
    expect(cut).not.toContain(TOKEN);
    // An early end is placed at the end.
    const early = credentialsFile('[{"name": "east"');
    expect(errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: early })).message).toContain(
      'is not valid JSON: line 1, column 17, in: [{"name": "east"',
    );
  });

  it('refuses both ways of giving credentials at once', () => {
    const file = credentialsFile([
      { name: 'a', baseUrl: 'https://x', authToken: 't', userEmail: 'a@b.c' },
    ]);
    expect(
      errorOf(() => loadConfig({ LISTINGS_CREDENTIALS_FILE: file, LISTINGS_BASE_URL: 'https://y' }))
        .message,
    ).toContain('Use one');
  });

  it('names every wrong variable with its rule', () => {
    const message = errorOf(() =>
      loadConfig({
        SYNC_CONCURRENCY: 'lots',
        PORT: '70000',
        DATABASE_URL: 'mysql://x',
        SYNC_TIMEZONE: 'Mars/Olympus',
        LOG_LEVEL: 'loud',
        ALERT_WEBHOOK_URL: 'not a url',
      }),
    ).message;
    expect(message).toContain(
      'SYNC_CONCURRENCY must be a whole number from 1 to 1024 (got "lots")',
    );
    expect(message).toContain('PORT must be a whole number from 0 to 65535');
    expect(message).toContain('DATABASE_URL must start with postgres://');
    expect(message).toContain('SYNC_TIMEZONE must be an IANA time zone');
    expect(message).toContain('LOG_LEVEL must be one of');
    expect(message).toContain('ALERT_WEBHOOK_URL must be an http:// or https:// URL');
  });

  it('splits WEBHOOK_SECRET on commas for rotation, and requires it where needed', () => {
    expect(loadConfig({ WEBHOOK_SECRET: ' old , new ' }).webhookSecrets).toEqual(['old', 'new']);
    expect(errorOf(() => requireWebhookSecrets(loadConfig({}))).message).toContain(
      'WEBHOOK_SECRET is not set',
    );
  });

  it('tells how to configure credentials when there are none', () => {
    expect(errorOf(() => requireCredentials(loadConfig({}))).message).toContain(
      'LISTINGS_CREDENTIALS_FILE',
    );
  });
});
