/**
 * What `migrate` and `check` say when DATABASE_URL does not lead to a warehouse: the URL
 * with its password alone replaced (user, host, port and database named), the reason and
 * the fix; and for a URL that cannot be parsed, a refusal naming DATABASE_URL and
 * percent-encoding, with `check` failing its configuration row. The password never
 * appears. An unknown database needs a real server (TEST_DATABASE_URL); the rest runs on
 * either backend. The pure rules are test/log/database-url-readable.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { UNREADABLE_DATABASE_URL } from '../../src/log.ts';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import { runCli } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { fragments } from '../helpers/database-url-passwords.ts';

const serverUrl = process.env['TEST_DATABASE_URL']?.trim();

/** `check`'s row for `name`, its cells split on the table's runs of spaces. */
function checkRow(stdout: string, name: string): string[] | undefined {
  return stdout
    .split('\n')
    .find((line) => line.startsWith(`${name} `))
    ?.split(/ {2,}/);
}

describe('DATABASE_URL in error messages', () => {
  it.runIf(testBackends.includes('postgres') && serverUrl)(
    'an unknown database is named with its user, host and port, and the password is not',
    async () => {
      const server = new URL(serverUrl as string);
      const user = server.username || 'postgres';
      const database = `nc4_missing_${randomBytes(4).toString('hex')}`;
      const hostPort = `${server.hostname}:${server.port || '5432'}`;
      const password = 'Zq1@Kx9';
      // The server trusts local connections, so any password gets as far as the database.
      const url = `postgres://${user}:${password}@${hostPort}/${database}`;
      const expected =
        `Cannot open PostgreSQL at postgres://${user}:[REDACTED]@${hostPort}/${database}: ` +
        `database "${database}" does not exist: create it on that server (\`createdb\`), ` +
        'or name an existing database in DATABASE_URL';

      const migrate = await runCli(['migrate'], { DATABASE_URL: url });
      expect(migrate.code).toBe(1);
      expect(migrate.stderr).toBe(`listings-sync: ${expected}\n`);
      const check = await runCli(['check'], { DATABASE_URL: url });
      expect(check.code).toBe(1);
      expect(checkRow(check.stdout, 'configuration')).toEqual(['configuration', 'ok', 'valid']);
      expect(checkRow(check.stdout, 'warehouse')).toEqual(['warehouse', 'FAILED', expected]);
      for (const output of [migrate.stdout + migrate.stderr, check.stdout + check.stderr]) {
        for (const fragment of fragments(password)) expect(output).not.toContain(fragment);
      }

      // A password that is also the user's name (and the scheme's) leaves both readable.
      const same = await runCli(['migrate'], {
        DATABASE_URL: `postgres://postgres:postgres@${hostPort}/${database}`,
      });
      expect(same.stderr).toContain(
        `Cannot open PostgreSQL at postgres://postgres:[REDACTED]@${hostPort}/${database}: database "${database}" does not exist`,
      );
    },
  );

  it.runIf(testBackends.includes('postgres') && serverUrl)(
    "a one-letter password or a piece of a word does not garble the server's answer (an unknown user)",
    async () => {
      const server = new URL(serverUrl as string);
      const hostPort = `${server.hostname}:${server.port || '5432'}`;
      for (const password of ['e', 'x', 'es', 'ro']) {
        const url = `postgres://nc39_nouser:${password}@${hostPort}/postgres`;
        const runs = await runCli(['runs'], { DATABASE_URL: url });
        expect(runs.code).toBe(1);
        expect(runs.stderr).toBe(
          `listings-sync: Cannot open PostgreSQL at postgres://nc39_nouser:[REDACTED]@${hostPort}/postgres: ` +
            'role "nc39_nouser" does not exist: check the user and the password in DATABASE_URL, ' +
            "and the server's pg_hba.conf\n",
        );
      }
    },
  );

  it('a one-letter password does not garble a refused connection', async () => {
    for (const password of ['e', 'c']) {
      const url = `postgres://warehouse:${password}@127.0.0.1:1/listings`;
      const migrate = await runCli(['migrate'], { DATABASE_URL: url });
      expect(migrate.stderr).toBe(
        'listings-sync: Cannot open PostgreSQL at postgres://warehouse:[REDACTED]@127.0.0.1:1/listings: ' +
          'connect ECONNREFUSED 127.0.0.1:1: nothing accepts connections at 127.0.0.1:1; ' +
          'start the server, or correct the host and port in DATABASE_URL\n',
      );
    }
  });

  it('a server that refuses connections is named, with what to correct', async () => {
    const url = 'postgres://warehouse:PlainS3cretZq@127.0.0.1:1/listings';
    const expected =
      'Cannot open PostgreSQL at postgres://warehouse:[REDACTED]@127.0.0.1:1/listings: ' +
      'connect ECONNREFUSED 127.0.0.1:1: nothing accepts connections at 127.0.0.1:1; ' +
      'start the server, or correct the host and port in DATABASE_URL';
    const migrate = await runCli(['migrate'], { DATABASE_URL: url });
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toBe(`listings-sync: ${expected}\n`);
    const check = await runCli(['check'], { DATABASE_URL: url });
    expect(checkRow(check.stdout, 'warehouse')).toEqual(['warehouse', 'FAILED', expected]);
    for (const output of [migrate.stdout + migrate.stderr, check.stdout + check.stderr]) {
      expect(output).not.toContain('PlainS3cretZq');
    }
  });

  it('a # in the password is refused by every command and by `check`, printing none of the URL', async () => {
    const password = 'pa#ssword';
    const url = `postgres://warehouse:${password}@db.internal:5432/listings`;
    const migrate = await runCli(['migrate'], { DATABASE_URL: url });
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toBe(
      `listings-sync: The configuration is not valid:\n  - DATABASE_URL: ${UNREADABLE_DATABASE_URL}\n`,
    );
    const check = await runCli(['check'], { DATABASE_URL: url });
    expect(check.code).toBe(1);
    // The configuration is not reported valid, and nothing is tried with it.
    expect(checkRow(check.stdout, 'configuration')).toEqual([
      'configuration',
      'FAILED',
      'The configuration is not valid:',
    ]);
    expect(check.stdout).toContain(`- DATABASE_URL: ${UNREADABLE_DATABASE_URL}`);
    expect(check.stdout).not.toMatch(/\bvalid\b(?! *:)/);
    expect(checkRow(check.stdout, 'warehouse')).toBeUndefined();
    for (const output of [migrate.stdout + migrate.stderr, check.stdout + check.stderr]) {
      for (const part of ['pa#', '#ss', 'ssword@', 'warehouse:', 'db.internal']) {
        expect(output).not.toContain(part);
      }
    }
    // Code that opens such a URL directly (the demo) refuses it before any connection.
    await expect(openWarehouse({ databaseUrl: url })).rejects.toThrow(UNREADABLE_DATABASE_URL);
  });
});
