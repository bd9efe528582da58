/**
 * `npm start` with DATABASE_URL: the simulated days land in their own schema of that
 * PostgreSQL, where psql or a BI tool can read them, and the summary says where.
 * PostgreSQL only (TEST_DATABASE_URL); on PGlite alone there is nothing to test here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo/demo.ts';
import { redactUrl, silentLogger } from '../../src/log.ts';
import { runCli } from '../helpers/cli.ts';
import { dropSchema, freshSchemaName, testBackends } from '../helpers/database.ts';

const url = process.env['TEST_DATABASE_URL']?.trim();

describe.skipIf(!testBackends.includes('postgres') || !url)('demo into PostgreSQL', () => {
  const schema = freshSchemaName();
  let dir = '';

  afterAll(async () => {
    await dropSchema(schema);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('loads the simulated days into its own schema and names it in the summary', async () => {
    dir = await mkdtemp(join(tmpdir(), 'demo-pg-'));
    const lines: string[] = [];
    const result = await runDemo(loadConfig({ DATABASE_URL: url }), silentLogger(), {
      days: 2,
      accounts: 1,
      businessesPerAccount: 2,
      schema,
      dataDir: join(dir, 'never-used'),
      reportPath: join(dir, 'report.html'),
      endDate: '2026-03-10',
      write: (line) => lines.push(line),
    });
    expect(result.daysSimulated).toBe(3);
    expect(lines.find((l) => l.startsWith('Warehouse: '))).toMatch(
      /^Warehouse: PostgreSQL at postgres:\/\/\S+, schema t_[0-9a-f]+ \(\d+ migration\(s\) applied\)$/,
    );
    expect(lines.find((l) => l.startsWith('Warehouse: '))).toContain(`, schema ${schema} (`);
    expect(lines.some((l) => l.includes(`set search_path to ${schema}`))).toBe(true);
    // The exact command line that reads it again, and it does.
    const readAgain = `  DATABASE_URL='${redactUrl(url as string)}' DATABASE_SCHEMA=${schema} npx listings-sync report`;
    expect(lines[lines.indexOf('Read it again with:') + 1]).toBe(readAgain);
    const runs = await runCli(['runs'], { DATABASE_URL: url as string, DATABASE_SCHEMA: schema });
    expect(runs.code).toBe(0);
    expect(runs.stdout).toContain('demo');
    // Each run's upstream day, the simulated one, read from the raw zone on PostgreSQL too.
    for (const day of ['2026-03-08', '2026-03-09', '2026-03-10']) {
      expect(runs.stdout).toMatch(new RegExp(`\\s${day}\\s+succeeded\\s+demo\\s`));
    }

    // Read back the way an analyst would: a plain client, the schema by name.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const days = await client.query(
        `select distinct observed_on::text as day from "${schema}".rank_observations order by 1`,
      );
      expect(days.rows.map((r) => r.day)).toEqual(['2026-03-08', '2026-03-09', '2026-03-10']);
      const view = await client.query(`select count(*)::int as n from "${schema}".v_rank_latest`);
      expect(view.rows[0].n).toBeGreaterThan(0);

      // --fresh: the schema made again, and a new demo of the size asked in it.
      const again: string[] = [];
      await runDemo(loadConfig({ DATABASE_URL: url }), silentLogger(), {
        days: 1,
        accounts: 1,
        businessesPerAccount: 1,
        fresh: true,
        schema,
        dataDir: join(dir, 'never-used'),
        reportPath: join(dir, 'report.html'),
        endDate: '2026-03-10',
        write: (line) => again.push(line),
      });
      expect(again.find((l) => l.startsWith('Warehouse: '))).toContain(
        `, schema ${schema}, emptied (--fresh) (`,
      );
      const rebuilt = await client.query(
        `select (select count(*)::int from "${schema}".sync_runs) as runs,
           (select max(business_id % 10000000)::int from "${schema}".businesses) as size,
           (select array_agg(distinct observed_on::text order by observed_on::text)
              from "${schema}".rank_observations) as days`,
      );
      expect(rebuilt.rows[0]).toEqual({ runs: 2, size: 1, days: ['2026-03-09', '2026-03-10'] });
    } finally {
      await client.end();
    }
  });
});

describe.skipIf(!testBackends.includes('postgres') || !url)('demo and DATABASE_SCHEMA', () => {
  // A database of its own, so that the demo's own schema (listings_demo) is this test's.
  const database = freshSchemaName();
  const admin = () => new pg.Client({ connectionString: url });
  const databaseUrl = () => {
    const u = new URL(url as string);
    u.pathname = `/${database}`;
    return u.toString();
  };
  let dir = '';

  afterAll(async () => {
    const client = admin();
    await client.connect();
    try {
      await client.query(`drop database if exists "${database}" with (force)`);
    } finally {
      await client.end();
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("never loads into DATABASE_SCHEMA, which names the user's own warehouse", async () => {
    const client = admin();
    await client.connect();
    try {
      await client.query(`create database "${database}"`);
    } finally {
      await client.end();
    }
    dir = await mkdtemp(join(tmpdir(), 'demo-pg-'));
    const lines: string[] = [];
    await runDemo(
      loadConfig({ DATABASE_URL: databaseUrl(), DATABASE_SCHEMA: 'warehouse' }),
      silentLogger(),
      {
        days: 1,
        accounts: 1,
        businessesPerAccount: 1,
        dataDir: join(dir, 'never-used'),
        reportPath: join(dir, 'report.html'),
        endDate: '2026-03-10',
        write: (line) => lines.push(line),
      },
    );
    expect(lines.find((l) => l.startsWith('Warehouse: '))).toContain(', schema listings_demo (');
    const reader = new pg.Client({ connectionString: databaseUrl() });
    await reader.connect();
    try {
      const schemas = await reader.query(
        "select schema_name from information_schema.schemata where schema_name in ('warehouse', 'listings_demo') order by 1",
      );
      expect(schemas.rows.map((r) => r.schema_name)).toEqual(['listings_demo']);
    } finally {
      await reader.end();
    }
  });
});
