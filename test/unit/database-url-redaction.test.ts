/**
 * A DATABASE_URL password is never printed, whatever characters it holds: in the
 * warehouse's description (every `migrate`), in connection failures, and in the causes
 * attached to them.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { redactSecrets, redactText, redactUrl } from '../../src/log.ts';
import { describeWarehouse, openConfiguredWarehouse } from '../../src/warehouse/open.ts';

const PASSWORDS = [
  'Zq1/Kx9',
  'Zq1#Kx9',
  'Zq1?Kx9',
  'Zq1@Kx9',
  'Zq1@Kx9/Wv3#Ty4?Rb5',
  'PlainS3cretZq',
];

/** Every stretch of the password that could identify it: the whole, and each side of a reserved char. */
function fragments(password: string): string[] {
  return [password, ...password.split(/[/#?@]/).filter((part) => part.length >= 2)];
}

describe('database URL passwords', () => {
  it.each(PASSWORDS)('describeWarehouse never shows the password %s', (password) => {
    const config = loadConfig({
      DATABASE_URL: `postgres://warehouse:${password}@db.internal:5432/listings`,
    });
    const text = describeWarehouse(config);
    for (const fragment of fragments(password)) expect(text).not.toContain(fragment);
    expect(text).toMatch(/^PostgreSQL at /);
  });

  it('keeps host, port and database of a URL that parses, and marks the password', () => {
    expect(redactUrl('postgres://warehouse:p%40ss@db.internal:5432/listings?sslmode=require')).toBe(
      'postgres://warehouse:[REDACTED]@db.internal:5432/listings?sslmode=require',
    );
    expect(redactUrl('postgres://db.internal/listings')).toBe('postgres://db.internal/listings');
  });

  it('prints no part of a URL that does not parse cleanly', () => {
    for (const url of [
      'postgres://warehouse:Zq1/Kx9@db.internal:5432/listings',
      'postgres://warehouse:123/Kx9@db.internal/listings',
      'postgres://warehouse:Zq1#Kx9@db.internal/listings',
      'not a url at all Zq1Kx9',
    ]) {
      const text = redactUrl(url);
      expect(text).not.toMatch(/warehouse|db\.internal|Zq1|Kx9|123/);
    }
  });

  it.each(PASSWORDS)('redactText covers a URL password %s in free text', (password) => {
    const text = redactText(
      `connect to postgres://warehouse:${password}@db.internal:5432/listings failed`,
    );
    for (const fragment of fragments(password)) expect(text).not.toContain(fragment);
    expect(text).toContain('failed');
  });

  it.each(PASSWORDS)(
    'a connection failure with the password %s leaks it nowhere',
    async (password) => {
      // Port 1 refuses at once; an unparseable URL fails before connecting.
      const url = `postgres://warehouse:${password}@127.0.0.1:1/listings`;
      const error = await openConfiguredWarehouse(loadConfig({ DATABASE_URL: url })).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error).toBeInstanceOf(Error);
      // What a log line would carry: message, stack and the whole cause chain.
      const logged = JSON.stringify(redactSecrets({ err: error }));
      const raw = JSON.stringify({
        message: error?.message,
        cause: error?.cause,
        causeMessage: (error?.cause as Error | undefined)?.message,
      });
      for (const fragment of fragments(password)) {
        expect(error?.message).not.toContain(fragment);
        expect(raw).not.toContain(fragment);
        expect(logged).not.toContain(fragment);
      }
      expect(error?.message).toMatch(/^Cannot (open|reach) PostgreSQL/);
    },
  );
});
