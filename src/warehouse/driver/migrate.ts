/**
 * Runs the numbered Kysely migrations in `migrations/`.
 *
 * Two migrators never race: Kysely's PostgreSQL adapter holds a session advisory lock
 * (`pg_advisory_lock`) on a dedicated connection for the whole run, and applies the
 * pending migrations in one transaction, so a second migrator waits and then finds
 * nothing to do. PGlite is one connection, which Kysely serialises.
 *
 * The bookkeeping tables (`kysely_migration`, `kysely_migration_lock`) live in the
 * connection's current schema, named explicitly: Kysely otherwise looks for them in
 * every schema and would mistake another schema's table for ours.
 */
import { readdir } from 'node:fs/promises';
import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import { codeInChain } from '../../errors.ts';
import type { Database } from '../database.ts';

const MIGRATIONS_DIR = new URL('../../../migrations/', import.meta.url);
/** `0001_initial.ts`: four digits, an underscore, a name. */
const MIGRATION_FILE = /^\d{4}_[a-z0-9_-]+\.ts$/;

/** Reads `migrations/*.ts` in name order. */
class MigrationFolder implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const module = (await import(new URL(file, MIGRATIONS_DIR).href)) as Migration;
      migrations[file.replace(/\.ts$/, '')] = { up: module.up, down: module.down };
    }
    return migrations;
  }
}

async function migratorFor(db: Kysely<Database>): Promise<Migrator> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(
    db,
  );
  const schema = rows[0]?.schema;
  if (!schema) {
    throw new Error(
      'The warehouse connection has no current schema: its search_path names no existing schema. Create the schema or fix the search path.',
    );
  }
  return new Migrator({ db, provider: new MigrationFolder(), migrationTableSchema: schema });
}

/**
 * Kysely finds its bookkeeping tables by listing the tables of every schema; a schema
 * dropped by someone else during that scan fails it with 3F000 (invalid_schema_name), and
 * the scan is worth running again (seen with many short-lived schemas, as in tests).
 */
const SCAN_ATTEMPTS = 3;

function isVanishedSchema(error: unknown): boolean {
  return codeInChain(error, (code) => code === '3F000') !== undefined;
}

/** Applies every pending migration; returns the names applied (none when up to date). */
export async function migrateToLatest(db: Kysely<Database>): Promise<{ applied: string[] }> {
  const migrator = await migratorFor(db);
  let { error, results } = await migrator.migrateToLatest();
  for (let attempt = 1; attempt < SCAN_ATTEMPTS && error && isVanishedSchema(error); attempt++) {
    if (results?.some((r) => r.status !== 'NotExecuted')) break;
    ({ error, results } = await migrator.migrateToLatest());
  }
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      failed
        ? `Migration ${failed} failed, and no migration of this run was applied: ${reason}`
        : `The warehouse could not be migrated: ${reason}`,
      { cause: error },
    );
  }
  return {
    applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName),
  };
}

/** Names of the migrations not yet applied, in the order they would run. */
export async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const migrator = await migratorFor(db);
  for (let attempt = 1; ; attempt++) {
    try {
      const all = await migrator.getMigrations();
      return all.filter((m) => m.executedAt === undefined).map((m) => m.name);
    } catch (error) {
      if (attempt >= SCAN_ATTEMPTS || !isVanishedSchema(error)) throw error;
    }
  }
}

/**
 * Applies (or reverts) migrations until `name` is the last one applied: for tests and
 * benchmarks that build a warehouse as an earlier release left it, then migrate it.
 */
export async function migrateTo(db: Kysely<Database>, name: string): Promise<void> {
  const migrator = await migratorFor(db);
  let { error, results } = await migrator.migrateTo(name);
  for (let attempt = 1; attempt < SCAN_ATTEMPTS && error && isVanishedSchema(error); attempt++) {
    if (results?.some((r) => r.status !== 'NotExecuted')) break;
    ({ error, results } = await migrator.migrateTo(name));
  }
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Migrating to ${name} failed${failed ? ` at ${failed}` : ''}: ${reason}`, {
      cause: error,
    });
  }
}
