/**
 * A DATABASE_URL password is never printed, whatever characters it holds: in the
 * warehouse's description (every `migrate`) and in redacted text. Connection failures and
 * `migrate` itself, which reach a server, are test/warehouse/database-url-redaction.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { redactText, redactUrl } from '../../src/log.ts';
import { describeWarehouse } from '../../src/warehouse/driver/open.ts';
import { fragments, PASSWORDS } from '../helpers/database-url-passwords.ts';

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

  it('leaves an e-mail in a query alone, and covers an @ in an http password', () => {
    const line = 'GET http://127.0.0.1:4010/api/v2/businesses.json?user_email=ops@agency.example';
    expect(redactText(line)).toBe(line);
    expect(redactText('http://proxy:Zq1@Kx9@upstream.example/x')).toBe(
      'http://proxy:[REDACTED]@upstream.example/x',
    );
  });
});
