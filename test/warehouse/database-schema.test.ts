/**
 * DATABASE_SCHEMA: a warehouse in a schema other than `public` (docs/configuration.md,
 * DATABASE_SCHEMA). `migrate` creates the schema and fills it, every other command reads
 * it, a schema that does not exist is refused naming the schemas that hold a warehouse,
 * and the "migrations pending" answer of an empty schema names them too. The PostgreSQL
 * cases need a server (TEST_DATABASE_URL); a name that is not a plain identifier, and a
 * missing schema on PGlite, run on either backend. The demo's own line is
 * test/demo/demo-postgres.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAgainLines } from '../../src/demo/demo.ts';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import { migrateTo } from '../../src/warehouse/driver/migrate.ts';
import { runCli } from '../helpers/cli.ts';
import {
  createPgliteDataDir,
  createSchema,
  dropSchema,
  freshSchemaName,
  testBackends,
} from '../helpers/database.ts';

const serverUrl = process.env['TEST_DATABASE_URL']?.trim();

describe('DATABASE_SCHEMA', () => {
  it('refuses a name that is not a plain schema name, naming the setting and the rule', async () => {
    const runs = await runCli(['runs'], { DATABASE_SCHEMA: 'Listings-Demo' });
    expect(runs.code).toBe(1);
    expect(runs.stderr).toContain(
      'DATABASE_SCHEMA must be a plain schema name: lowercase letters, digits and _, starting with a letter or _, at most 63 characters (such as listings_demo)',
    );
  });

  it("the PostgreSQL demo's line that reads it again prints no password", () => {
    expect(
      readAgainLines('postgres://sync:Zq1%40Kx9@db.internal:5432/nc_demo', 'listings_demo'),
    ).toEqual([
      'Read it again with:',
      "  DATABASE_URL='postgres://sync:[REDACTED]@db.internal:5432/nc_demo' DATABASE_SCHEMA=listings_demo npx listings-sync report",
      '  (with your password in place of [REDACTED])',
    ]);
  });

  it('on PGlite, a schema that does not exist is refused, naming the one that holds the warehouse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'schema-pglite-'));
    try {
      await createPgliteDataDir(join(dir, 'db'));
      const runs = await runCli(['runs'], {
        PGLITE_DATA_DIR: join(dir, 'db'),
        DATABASE_SCHEMA: 'nothere',
      });
      expect(runs.code).toBe(1);
      expect(runs.stderr).toContain(
        'DATABASE_SCHEMA names the schema nothere, which the embedded PGlite database in',
      );
      expect(runs.stderr).toContain(
        'Schemas of this database that hold a warehouse: public; point a command at one with DATABASE_SCHEMA=public.',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe.skipIf(!testBackends.includes('postgres') || !serverUrl)('on PostgreSQL', () => {
    const schema = freshSchemaName();
    // A warehouse of the tests' own that the refusals must name, whatever order they run in.
    const held = freshSchemaName();
    const empty = freshSchemaName();
    const behind = freshSchemaName();
    const url = serverUrl as string;

    beforeAll(async () => {
      const migrate = await runCli(['migrate'], { DATABASE_URL: url, DATABASE_SCHEMA: held });
      expect(migrate.code, migrate.stderr).toBe(0);
    });

    afterAll(async () => {
      await dropSchema(schema);
      await dropSchema(held);
      await dropSchema(empty);
      await dropSchema(behind);
    });

    it('migrate creates the schema and fills it; every command then reads it there', async () => {
      const migrate = await runCli(['migrate'], { DATABASE_URL: url, DATABASE_SCHEMA: schema });
      expect(migrate.code).toBe(0);
      expect(migrate.stdout).toMatch(/^Applied \d+ migration\(s\) to PostgreSQL at /);

      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const tables = await client.query(
          `select count(*)::int as n from information_schema.tables
            where table_schema = $1 and table_name in ('businesses', 'sync_runs', 'kysely_migration')`,
          [schema],
        );
        expect(tables.rows[0].n).toBe(3);
        await client.query(
          `insert into "${schema}".sync_runs (run_id, trigger, status, streams, accounts)
           values (gen_random_uuid(), 'manual', 'succeeded', '[]', '[]')`,
        );
      } finally {
        await client.end();
      }

      const again = await runCli(['migrate'], { DATABASE_URL: url, DATABASE_SCHEMA: schema });
      expect(again.stdout).toMatch(/is already up to date\.\n$/);
      const runs = await runCli(['runs'], { DATABASE_URL: url, DATABASE_SCHEMA: schema });
      expect(runs.stderr).toBe('');
      expect(runs.code).toBe(0);
      expect(runs.stdout).toContain('succeeded');
      // `check` reads it there too.
      const check = await runCli(['check'], { DATABASE_URL: url, DATABASE_SCHEMA: schema });
      const row = check.stdout.split('\n').find((line) => line.startsWith('warehouse '));
      expect(row?.split(/ {2,}/)[1]).toBe('ok');
    });

    it('a schema that does not exist is refused, naming the schemas that hold a warehouse', async () => {
      const runs = await runCli(['runs'], { DATABASE_URL: url, DATABASE_SCHEMA: 'nc39_nothere' });
      expect(runs.code).toBe(1);
      expect(runs.stderr).toContain(
        'DATABASE_SCHEMA names the schema nc39_nothere, which PostgreSQL at ',
      );
      expect(runs.stderr).toContain(
        'does not have. `listings-sync migrate` creates it and its tables. Schemas of this database that hold a warehouse: ',
      );
      expect(runs.stderr).toMatch(new RegExp(`warehouse: [a-z0-9_, ]*\\b${held}\\b`));
    });

    it('"migrations pending" in an empty schema names the schemas that hold a warehouse', async () => {
      await createSchema(empty);
      const runs = await runCli(['runs'], { DATABASE_URL: url, DATABASE_SCHEMA: empty });
      expect(runs.code).toBe(1);
      expect(runs.stderr).toMatch(
        new RegExp(
          `^listings-sync: The warehouse schema is not current: \\d+ migration\\(s\\) pending \\(0001_initial, .*\\) in schema ${empty}\\. Run \`listings-sync migrate\` first\\. Schemas of this database that hold a warehouse: `,
        ),
      );
      expect(runs.stderr).toMatch(new RegExp(`warehouse: [a-z0-9_, ]*\\b${held}\\b`));
      expect(runs.stderr).toContain('point a command at one with DATABASE_SCHEMA=');
      expect(runs.stderr).not.toMatch(new RegExp(`warehouse: [a-z0-9_, ]*\\b${empty}\\b`));
    });

    it('a warehouse behind its code is sent to migrate, without the list of other schemas', async () => {
      const warehouse = await openWarehouse({ databaseUrl: url, searchPath: behind });
      try {
        await sql`create schema ${sql.id(behind)}`.execute(warehouse.db);
        await migrateTo(warehouse.db, '0001_initial');
      } finally {
        await warehouse.close();
      }
      const runs = await runCli(['runs'], { DATABASE_URL: url, DATABASE_SCHEMA: behind });
      expect(runs.code).toBe(1);
      expect(runs.stderr).toMatch(
        new RegExp(
          `^listings-sync: The warehouse schema is not current: \\d+ migration\\(s\\) pending \\(0002_alert_sinks, [^)]*\\) in schema ${behind}\\. Run \`listings-sync migrate\` first\\.\n$`,
        ),
      );
    });

    it('refuses DATABASE_SCHEMA beside a search_path in DATABASE_URL', async () => {
      const withPath = `${url}?options=-c%20search_path%3Dpublic`;
      const runs = await runCli(['runs'], { DATABASE_URL: withPath, DATABASE_SCHEMA: schema });
      expect(runs.code).toBe(1);
      expect(runs.stderr).toBe(
        `listings-sync: DATABASE_SCHEMA is set (${schema}) and DATABASE_URL's options set a search_path too: keep one of them (DATABASE_SCHEMA, docs/configuration.md).\n`,
      );
    });
  });
});
