/**
 * A DATABASE_URL in a message names everything but its password: scheme, user, host, port
 * and database stay readable even when the password is one of those words, and a URL that
 * cannot be parsed is refused by configuration loading, naming DATABASE_URL and the fix
 * and no part of the value (docs/configuration.md, DATABASE_URL). The messages of real
 * connection failures and of `check` are test/warehouse/database-url-messages.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import {
  REDACTED,
  redactDatabaseUrlIn,
  redactText,
  redactUrl,
  UNREADABLE_DATABASE_URL,
} from '../../src/log.ts';
import { fragments, UNPARSEABLE_PASSWORDS } from '../helpers/database-url-passwords.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';

describe('a DATABASE_URL in messages', () => {
  it('keeps scheme, user, host, port and database when the password is the user name', () => {
    const url = 'postgres://postgres:postgres@127.0.0.1:5432/nc4_doesnotexist';
    const message = `The warehouse database at ${redactUrl(url)} cannot be reached: database "nc4_doesnotexist" does not exist`;
    expect(redactDatabaseUrlIn(message, url)).toBe(
      'The warehouse database at postgres://postgres:[REDACTED]@127.0.0.1:5432/nc4_doesnotexist ' +
        'cannot be reached: database "nc4_doesnotexist" does not exist',
    );
    // The URL itself, in a driver's text, is printed the same way.
    expect(redactDatabaseUrlIn(`connect to ${url} failed`, url)).toBe(
      'connect to postgres://postgres:[REDACTED]@127.0.0.1:5432/nc4_doesnotexist failed',
    );
  });

  it('still removes the password wherever else a driver echoes it, raw or decoded', () => {
    const url = 'postgres://sync:Zq1%40Kx9%2Fz@db.internal:6543/listings';
    const text = redactDatabaseUrlIn(
      `at ${url}: password "Zq1@Kx9/z" refused; raw Zq1%40Kx9%2Fz`,
      url,
    );
    expect(text).not.toMatch(/Zq1|Kx9/);
    expect(text).toContain('postgres://sync:[REDACTED]@db.internal:6543/listings');
    expect(text).toContain(`raw ${REDACTED}`);
  });

  it('keeps its own advice readable when the password of an unparseable URL shares its words', () => {
    // "pa" and "ssword" are the stretches of this password either side of its "#".
    const url = 'postgres://warehouse:pa#ssword@db.internal:5432/listings';
    const message = `Cannot open PostgreSQL at ${redactUrl(url)}: ${UNREADABLE_DATABASE_URL}`;
    expect(redactDatabaseUrlIn(message, url)).toBe(message);
    expect(message).toContain('percent-encode / # ? @ in a password');
    // A driver that split the URL at the "#" would echo a stretch as a host: it goes.
    expect(redactDatabaseUrlIn('getaddrinfo ENOTFOUND ssword', url)).toBe(
      `getaddrinfo ENOTFOUND ${REDACTED}`,
    );
  });

  it.each(['e', 'x', 'o', 'es', 'ro', 'ist'])(
    'leaves every word whole when the password %s is a piece of them',
    (password) => {
      const url = `postgres://nouser:${password}@127.0.0.1:5432/nc_wh`;
      const message =
        `Cannot open PostgreSQL at ${redactUrl(url)}: role "nouser" does not exist: ` +
        'check the user and the password in DATABASE_URL';
      expect(message).toContain('postgres://nouser:[REDACTED]@127.0.0.1:5432/nc_wh');
      expect(redactDatabaseUrlIn(message, url)).toBe(message);
      // Where the driver echoes it as a value (quoted, or a word of its own), it goes.
      expect(redactDatabaseUrlIn(`password "${password}" refused, ${password}.`, url)).toBe(
        `password "${REDACTED}" refused, ${REDACTED}.`,
      );
    },
  );

  it('replaces a password that is a whole word of the text, and one with punctuation wherever it stands', () => {
    const url = 'postgres://nouser:not@127.0.0.1:5432/nc_wh';
    expect(redactDatabaseUrlIn('role "nouser" does not exist', url)).toBe(
      `role "nouser" does ${REDACTED} exist`,
    );
    const punctuated = 'postgres://nouser:%40x@127.0.0.1:5432/nc_wh';
    expect(redactDatabaseUrlIn('host a@x refused', punctuated)).toBe(`host a${REDACTED} refused`);
  });

  it('survives the log redaction net, which still removes a password in a URL', () => {
    const { logger, lines } = memoryLogger();
    const url = 'postgres://postgres:postgres@127.0.0.1:5432/nc4_doesnotexist';
    const message = `Cannot open PostgreSQL at ${redactUrl(url)}: database "nc4_doesnotexist" does not exist`;
    logger.error({ err: new Error(message) }, message);
    logger.error(`raw postgres://warehouse:PlainS3cretZq@db.internal:5432/listings`);
    const [first, second] = lines().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first?.['msg']).toBe(message);
    expect((first?.['err'] as { message?: string } | undefined)?.message).toBe(message);
    expect(second?.['msg']).toBe(`raw postgres://warehouse:${REDACTED}@db.internal:5432/listings`);
  });

  it.each(UNPARSEABLE_PASSWORDS)(
    'configuration loading refuses a URL whose password %s is not percent-encoded, printing none of it',
    (password) => {
      const env = { DATABASE_URL: `postgres://warehouse:${password}@db.internal:5432/listings` };
      let error: unknown;
      try {
        loadConfig(env);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as Error).message;
      expect(message).toBe(
        `The configuration is not valid:\n  - DATABASE_URL: ${UNREADABLE_DATABASE_URL}`,
      );
      expect(message).toContain('Percent-encode them in the password');
      // Any part of the value may be the password: none is printed.
      for (const part of [...fragments(password), 'warehouse', 'db.internal', '5432']) {
        expect(message).not.toContain(part);
      }
      // Encoded, the same password loads, and prints as its user, host, port and database.
      const encoded = loadConfig({
        DATABASE_URL: `postgres://warehouse:${encodeURIComponent(password)}@db.internal:5432/listings`,
      });
      expect(redactUrl(encoded.databaseUrl as string)).toBe(
        'postgres://warehouse:[REDACTED]@db.internal:5432/listings',
      );
    },
  );

  it.each(UNPARSEABLE_PASSWORDS)('redactText covers the password %s in free text', (password) => {
    const text = redactText(
      `connect to postgres://warehouse:${password}@db.internal:5432/listings failed`,
    );
    for (const fragment of fragments(password)) expect(text).not.toContain(fragment);
    expect(text).toContain('failed');
  });
});
