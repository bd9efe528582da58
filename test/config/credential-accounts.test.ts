/**
 * Credentials against accounts: the same upstream account configured under two names is
 * refused at config time, naming both; a password inside a base URL is never stored in
 * `accounts.base_url` nor printed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

const TOKEN = 'tok_Vb81mQ2xZr';

function loadWithFile(credentials: unknown): () => unknown {
  const dir = mkdtempSync(join(tmpdir(), 'credentials-'));
  const file = join(dir, 'credentials.json');
  writeFileSync(file, JSON.stringify(credentials));
  return () => loadConfig({ LISTINGS_CREDENTIALS_FILE: file });
}

function configError(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('a base URL that is no URL', () => {
  it('is refused naming the field, beside another credential, not thrown as Invalid URL', () => {
    const error = configError(
      loadWithFile([
        { name: 'east', baseUrl: 'example.com', authToken: TOKEN, userEmail: 'ops@x.io' },
        {
          name: 'west',
          baseUrl: 'https://api.example.com',
          authToken: TOKEN,
          userEmail: 'ops@x.io',
        },
      ]),
    );
    expect(error.message).toContain('baseUrl must be an http:// or https:// URL');
    expect(error.message).not.toContain('Invalid URL');
  });
});

describe('one account, one credential', () => {
  it('refuses two credentials with the same base URL and e-mail, naming both', () => {
    const error = configError(
      loadWithFile([
        {
          name: 'east',
          baseUrl: 'https://API.example.com/',
          authToken: TOKEN,
          userEmail: 'Ops@x.io',
        },
        {
          name: 'west',
          baseUrl: 'https://api.example.com',
          authToken: 'other',
          userEmail: 'ops@x.io',
        },
      ]),
    );
    expect(error.message).toMatch(/credentials "east" and "west" are the same account/);
    expect(error.message).toContain('https://api.example.com');
    expect(error.message).not.toContain(TOKEN);
  });

  it('names the base URL without its password when refusing', () => {
    const error = configError(
      loadWithFile([
        {
          name: 'a',
          baseUrl: 'https://u:Hid3Me@api.example.com',
          authToken: TOKEN,
          userEmail: 'o@x.io',
        },
        { name: 'b', baseUrl: 'https://api.example.com', authToken: TOKEN, userEmail: 'o@x.io' },
      ]),
    );
    expect(error.message).toMatch(/"a" and "b"/);
    expect(error.message).not.toContain('Hid3Me');
  });

  it('accepts one e-mail on two upstreams, and two e-mails on one upstream', () => {
    const config = loadWithFile([
      { name: 'a', baseUrl: 'https://one.example.com', authToken: TOKEN, userEmail: 'o@x.io' },
      { name: 'b', baseUrl: 'https://two.example.com', authToken: TOKEN, userEmail: 'o@x.io' },
      { name: 'c', baseUrl: 'https://one.example.com', authToken: TOKEN, userEmail: 'p@x.io' },
    ])() as { credentials: unknown[] };
    expect(config.credentials).toHaveLength(3);
  });
});
