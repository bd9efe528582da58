/**
 * A DATABASE_URL password is never printed when the connection fails (message, stack and
 * the whole cause chain) nor by `migrate`, whatever characters it holds. The pure
 * redaction rules are test/log/database-url-redaction.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { redactSecrets } from '../../src/log.ts';
import { openConfiguredWarehouse } from '../../src/warehouse/driver/open.ts';
import { runCli } from '../helpers/cli.ts';
import { createTestWarehouse, testBackends } from '../helpers/database.ts';
import { fragments, PASSWORDS } from '../helpers/database-url-passwords.ts';

describe('database URL passwords, against a server', () => {
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
