/**
 * A DATABASE_URL password is never printed, whatever characters it holds: in the
 * warehouse's description (every `migrate`), in connection failures, and in the causes
 * attached to them.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { redactSecrets, redactText, redactUrl } from '../../src/log.ts';
import { describeWarehouse, openConfiguredWarehouse } from '../../src/warehouse/open.ts';
import { runCli } from '../helpers/cli.ts';
import { createTestWarehouse, testBackends } from '../helpers/database.ts';

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

  it('leaves an e-mail in a query alone, and covers an @ in an http password', () => {
    const line = 'GET http://127.0.0.1:4010/api/v2/businesses.json?user_email=ops@agency.example';
    expect(redactText(line)).toBe(line);
    expect(redactText('http://proxy:Zq1@Kx9@upstream.example/x')).toBe(
      'http://proxy:[REDACTED]@upstream.example/x',
    );
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

  it.runIf(testBackends.includes('postgres'))(
    '`migrate` prints where it migrated, without a password holding @, / and #',
    async () => {
      // A fresh schema; the server trusts local connections, so any password connects.
      const target = await createTestWarehouse('postgres', { migrate: false });
      try {
        const url = new URL(target.databaseUrl as string);
        const password = 'Zq1@Kx9/Wv3#Ty4';
        const withPassword = `postgres://${url.username || 'postgres'}:${password}@${url.host}${url.pathname}?options=-csearch_path%3D${target.searchPath}`;
        // Encoded, as a careful operator writes it: this one parses and connects.
        const encoded = withPassword.replace(password, encodeURIComponent(password));
        const run = await runCli(['migrate'], { DATABASE_URL: encoded });
        expect(run.code).toBe(0);
        expect(run.stdout).toMatch(
          /^Applied \d+ migration\(s\) to PostgreSQL at postgres:\/\/\w+:\[REDACTED\]@/,
        );
        // An unencoded @ still parses (the last @ ends the password): connects, prints none of it.
        const at = await runCli(['migrate'], {
          DATABASE_URL: withPassword.replace(password, 'Zq1@Kx9'),
        });
        expect(at.code).toBe(0);
        expect(at.stdout).toMatch(/is already up to date/);
        // Unencoded / and #: it cannot be parsed, and no part of it is printed.
        const raw = await runCli(['migrate'], { DATABASE_URL: withPassword });
        expect(raw.code).toBe(1);
        for (const output of [
          run.stdout + run.stderr,
          at.stdout + at.stderr,
          raw.stdout + raw.stderr,
        ]) {
          for (const fragment of [...fragments(password), encodeURIComponent(password)]) {
            expect(output).not.toContain(fragment);
          }
        }
      } finally {
        await target.close();
      }
    },
  );
});
