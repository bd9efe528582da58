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
 *
 * What an operator set on the warehouse's tables and views (grants to other roles, a
 * comment) outlives a migration that replaces one (a table packed into another and
 * replaced by a view of the same name, a view dropped and made again): each migration runs
 * between a reading of them and their return onto the relations of the same names, in the
 * migration's transaction (`keepingOperatorSettings`).
 */
import { readdir } from 'node:fs/promises';
import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import { codeInChain } from '../../errors.ts';
import type { Database } from '../database.ts';

const MIGRATIONS_DIR = new URL('../../../migrations/', import.meta.url);
/** `0001_initial.ts`: four digits, an underscore, a name. */
const MIGRATION_FILE = /^\d{4}_[a-z0-9_-]+\.ts$/;

/** The files of `migrations/`, in name order. */
async function migrationFiles(): Promise<string[]> {
  return (await readdir(MIGRATIONS_DIR)).filter((f) => MIGRATION_FILE.test(f)).sort();
}

/**
 * Whether the warehouse has applied exactly the folder's migrations, asked by one read of
 * the bookkeeping table: the common case, a warehouse as current as its code, answered
 * without the Migrator, which first lists every table of every schema with its columns
 * (Kysely's check that its table exists) and loads each migration's module, about 0.1 s
 * of every process's start (docs/benchmarks.md). It holds the applied migrations to the
 * checks the Migrator makes before it finds nothing to do: each a migration of the folder,
 * all of them, in the folder's order when ordered as Kysely orders them (by the time each
 * was applied, then by name), every time readable. Anything else (no current schema, no
 * bookkeeping table yet, a migration pending, one applied that the folder lacks, one out
 * of order) goes to the Migrator, which applies or says what is wrong as before.
 */
async function appliedAll(db: Kysely<Database>): Promise<boolean> {
  // quote_ident(null) is null, and so is the name: no current schema reads as absent.
  const { rows } = await sql<{ schema: string | null; present: boolean }>`
    select current_schema() as schema,
      to_regclass(quote_ident(current_schema()) || '.kysely_migration') is not null
        as present`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema || !rows[0]?.present) return false;
  const [files, { rows: applied }] = await Promise.all([
    migrationFiles(),
    sql<{ name: string; timestamp: string }>`
      select name, timestamp from ${sql.id(schema, 'kysely_migration')}`.execute(db),
  ]);
  const names = files.map((file) => file.replace(/\.ts$/, '')).sort();
  const executed = applied.map(({ name, timestamp }) => ({
    name,
    at: new Date(timestamp).getTime(),
  }));
  if (executed.some(({ at }) => Number.isNaN(at))) return false;
  executed.sort((a, b) => a.at - b.at || a.name.localeCompare(b.name));
  return executed.length === names.length && executed.every(({ name }, i) => name === names[i]);
}

/** Reads `migrations/*.ts` in name order. */
class MigrationFolder implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = await migrationFiles();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const module = (await import(new URL(file, MIGRATIONS_DIR).href)) as Migration;
      const down = module.down;
      migrations[file.replace(/\.ts$/, '')] = {
        up: (db) => keepingOperatorSettings(db, () => module.up(db)),
        ...(down
          ? { down: (db: Kysely<unknown>) => keepingOperatorSettings(db, () => down(db)) }
          : {}),
      };
    }
    return migrations;
  }
}

/** A grant an operator made on a relation (its owner's own are the migrations'). */
interface Grant {
  privilege: string;
  /** Quoted for SQL: a role's name, or `public`. */
  grantee: string;
  grantable: boolean;
}

/** What an operator set on a relation of the current schema. */
interface OperatorSettings {
  relation: string;
  grants: Grant[];
  comment: string | null;
}

/** Runs `migrate` and gives the relations it replaced what an operator had set on them. */
async function keepingOperatorSettings(
  db: Kysely<unknown>,
  migrate: () => Promise<void>,
): Promise<void> {
  const { rows: kept } = await sql<OperatorSettings>`
    select c.relname as relation, obj_description(c.oid, 'pg_class') as comment,
      coalesce(json_agg(json_build_object('privilege', a.privilege_type,
          'grantee', case when a.grantee = 0 then 'public' else quote_ident(r.rolname) end,
          'grantable', a.is_grantable))
        filter (where a.privilege_type is not null), '[]') as grants
    from pg_class c
    left join lateral aclexplode(c.relacl) a
      on a.grantee <> c.relowner and a.privilege_type in
        ('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER')
    left join pg_roles r on r.oid = a.grantee
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
    group by c.oid
    having count(a.privilege_type) > 0 or obj_description(c.oid, 'pg_class') is not null`.execute(
    db,
  );
  await migrate();
  for (const { relation, grants, comment } of kept) {
    const { rows } = await sql<{ kind: string; comment: string | null }>`
      select relkind::text as kind, obj_description(oid, 'pg_class') as comment from pg_class
      where relname = ${relation} and relnamespace = current_schema()::regnamespace`.execute(db);
    const now = rows[0];
    if (!now) continue;
    for (const g of grants) {
      await sql`grant ${sql.raw(g.privilege)} on ${sql.table(relation)} to ${sql.raw(g.grantee)}
        ${sql.raw(g.grantable ? 'with grant option' : '')}`.execute(db);
    }
    if (comment !== null && now.comment === null) {
      const kind = sql.raw(
        now.kind === 'v' ? 'view' : now.kind === 'm' ? 'materialized view' : 'table',
      );
      await sql`comment on ${kind} ${sql.table(relation)} is ${sql.lit(comment)}`.execute(db);
    }
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
  if (await appliedAll(db)) return { applied: [] };
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
  if (await appliedAll(db)) return [];
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
