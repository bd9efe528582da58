/**
 * Databases for tests: every suite runs on PGlite (in memory), and on PostgreSQL too
 * when TEST_DATABASE_URL is set, each in a fresh schema dropped on close.
 *
 *   describe.each(testBackends)('listings (%s)', (backend) => { … createTestWarehouse(backend) … })
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { openWarehouse, type Warehouse } from '../../src/warehouse/connection.ts';
import { migrateToLatest } from '../../src/warehouse/migrate.ts';
import { CONTRACT_TABLES } from '../../src/warehouse/tables.ts';

export type TestBackend = 'pglite' | 'postgres';

/** Read here rather than through config.ts: a test-only variable. */
const testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim() || undefined;

export const testBackends: TestBackend[] = testDatabaseUrl ? ['pglite', 'postgres'] : ['pglite'];

export type TestWarehouse = Warehouse & { searchPath?: string; databaseUrl?: string };

/** A schema name no other test uses. */
export function freshSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export async function createSchema(schema: string): Promise<void> {
  await adminQuery(`create schema "${schema}"`);
}

export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(`drop schema if exists "${schema}" cascade`);
}

/**
 * A warehouse ready for a test: migrated unless `migrate: false`. PostgreSQL gets a
 * fresh schema (`search_path` on every pooled connection) that close() drops.
 */
export async function createTestWarehouse(
  backend: TestBackend,
  options: { migrate?: boolean } = {},
): Promise<TestWarehouse> {
  const migrate = options.migrate ?? true;
  if (backend === 'pglite') {
    const warehouse = await openWarehouse({ memory: true });
    if (migrate) await migrateToLatest(warehouse.db);
    return warehouse;
  }
  if (!testDatabaseUrl) throw new Error('TEST_DATABASE_URL is not set.');
  const schema = freshSchemaName();
  await createSchema(schema);
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse({ databaseUrl: testDatabaseUrl, searchPath: schema });
    if (migrate) await migrateToLatest(warehouse.db);
  } catch (error) {
    await dropSchema(schema);
    throw error;
  }
  const opened = warehouse;
  return {
    ...opened,
    searchPath: schema,
    databaseUrl: testDatabaseUrl,
    close: async () => {
      await opened.close();
      await dropSchema(schema);
    },
  };
}

/** Empties every table (identities restart), so one warehouse can serve a whole suite. */
export async function truncateAll(warehouse: Warehouse): Promise<void> {
  await sql`truncate ${sql.join(CONTRACT_TABLES.map((t) => sql.table(t)))} restart identity cascade`.execute(
    warehouse.db,
  );
}
