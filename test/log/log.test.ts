import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, redactText } from '../../src/log.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';

const TOKEN = 'tok_SECRET_abcdef123456';
const PASSWORD = 'hunter2-directory-pass';

describe('redaction', () => {
  it('removes tokens from URLs and free text', () => {
    expect(
      redactText(`GET https://x/api/v2/businesses.json?auth_token=${TOKEN}&user_email=a@b.c`),
    ).toBe(`GET https://x/api/v2/businesses.json?auth_token=${REDACTED}&user_email=a@b.c`);
    expect(redactText(`{"site_password":"${PASSWORD}"}`)).not.toContain(PASSWORD);
    expect(redactText(`Authorization: Bearer ${TOKEN}`)).not.toContain(TOKEN);
    expect(redactText(`postgres://user:${PASSWORD}@db:5432/warehouse`)).toBe(
      `postgres://user:${REDACTED}@db:5432/warehouse`,
    );
  });

  it('removes secrets under secret keys at any depth, and in errors', () => {
    const value = {
      credential: { name: 'east', authToken: TOKEN },
      listings: [{ site_username: 'bob', site_password: PASSWORD }],
      headers: { authorization: `Bearer ${TOKEN}` },
      error: new Error(`request to https://x?auth_token=${TOKEN} failed`, {
        cause: new Error(`site_password=${PASSWORD}`),
      }),
    };
    const text = JSON.stringify(redactSecrets(value));
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(PASSWORD);
    expect(text).toContain('east');
    // A directory login is half a directory credential: never stored or logged either.
    expect(text).not.toContain('bob');
  });

  it('removes directory logins from quoted payload snippets (summaries, sync_runs.stats)', () => {
    const snippet =
      'listings[3]: status: Invalid option; payload {"id":3,"site_username":"acme-login",' +
      '"site_password":"hunter2","status":"Weird"} and site_username=acme-login';
    const text = redactText(snippet);
    expect(text).not.toContain('acme-login');
    expect(text).not.toContain('hunter2');
    expect(text).toContain('"status":"Weird"');
  });

  it('never lets a secret reach a log line, whatever the call shape', () => {
    const { logger, lines } = memoryLogger();
    logger.info({ authToken: TOKEN, url: `https://x/?auth_token=${TOKEN}` }, 'calling');
    logger.warn(`failed with auth_token=${TOKEN}`);
    logger.error({ err: new Error(`bad site_password=${PASSWORD}`) }, 'oops');
    logger
      .child({ webhookSecret: 'whsec_123' })
      .info({ nested: { deep: { site_password: PASSWORD } } }, 'x');
    const output = lines().join('\n');
    expect(lines()).toHaveLength(4);
    for (const secret of [TOKEN, PASSWORD, 'whsec_123']) expect(output).not.toContain(secret);
    expect(output).toContain('calling');
  });
});
