/**
 * Migrated warehouse templates, built once per test run and cloned per test warehouse.
 *
 * Starting PGlite runs initdb inside WASM, about 2–4 s on a 2-core machine; loading a
 * dumped data directory takes about 0.3 s, copying an unpacked one into a directory 50 ms. Migrating a PostgreSQL schema costs ~110 ms;
 * `CREATE DATABASE … TEMPLATE` copies a migrated one in ~25 ms, and a database per test
 * warehouse also keeps advisory locks and catalog scans apart between test files.
 *
 * Both templates are named by a hash of what shapes them (the migrations, the migrator,
 * the PGlite version), so adding a migration builds a new one and a stale one is never used,
 * and two checkouts with different migrations on one machine or server use different ones.
 * The PGlite ones outlive the run, in the machine's temporary directory (`testCacheDir()`,
 * not the run's own, which test/helpers/temporary-root.ts removes at the end). Each run
 * marks its own templates used; one no run has used for `STALE_TEMPLATE_MS` (another
 * checkout's, a migration set gone) is removed by the next run's set-up.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/warehouse/database.ts';
import { openWarehouse } from '../../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../../src/warehouse/driver/migrate.ts';
import { testCacheDir } from './temporary-root.ts';

const ROOT = join(import.meta.dirname, '../..');

let cachedKey: string | undefined;

/** A short hash of every input that decides what a migrated warehouse looks like. */
export function templateKey(): string {
  if (cachedKey) return cachedKey;
  const hash = createHash('sha256');
  const migrations = join(ROOT, 'migrations');
  for (const file of readdirSync(migrations).sort()) {
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(migrations, file)))
      .update('\0');
  }
  hash.update(readFileSync(join(ROOT, 'src/warehouse/driver/migrate.ts')));
  // A dump is only loadable by the PGlite build that wrote it.
  hash.update(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json')));
  cachedKey = hash.digest('hex').slice(0, 16);
  return cachedKey;
}

export function pgliteTemplatePath(): string {
  return join(testCacheDir(), `listings-sync-pglite-template-${templateKey()}.tar`);
}

/** An initialised but unmigrated data directory, dumped: a `migrate: false` warehouse. */
export function pgliteEmptyTemplatePath(): string {
  return join(testCacheDir(), `listings-sync-pglite-empty-${templateKey()}.tar`);
}

/** The migrated template unpacked, for tests that give a command a data directory. */
export function pgliteTemplateDir(): string {
  return join(testCacheDir(), `listings-sync-pglite-template-${templateKey()}.d`);
}

/**
 * Builds the PGlite templates unless they exist: the dump of an initialised data
 * directory, the dump of a migrated one, and the migrated one unpacked into a directory
 * (copying it costs a test about 50 ms of CPU where loading a dump into a directory
 * costs about 0.7 s). Each is written under a temporary name and renamed, so a reader
 * never sees half of one and two builders (workers started without the global set-up)
 * both end with a whole one.
 */
export async function ensurePgliteTemplate(): Promise<string> {
  const path = pgliteTemplatePath();
  if (existsSync(path) && existsSync(pgliteEmptyTemplatePath()) && existsSync(pgliteTemplateDir()))
    return path;
  const pglite = await PGlite.create();
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
  let migrated: Blob;
  try {
    await writeWhole(pgliteEmptyTemplatePath(), await pglite.dumpDataDir('none'));
    await migrateToLatest(db);
    migrated = await pglite.dumpDataDir('none');
    await writeWhole(path, migrated);
  } finally {
    await db.destroy();
    if (!pglite.closed) await pglite.close();
  }
  const dir = pgliteTemplateDir();
  if (!existsSync(dir)) {
    const partial = partialName(dir);
    const unpacked = await openWarehouse({ pgliteDataDir: partial, loadDataDir: migrated });
    await unpacked.close();
    try {
      renameSync(partial, dir);
    } catch (error) {
      // Another builder renamed its copy first: theirs is as good.
      rmSync(partial, { recursive: true, force: true });
      if (!existsSync(dir)) throw error;
    }
  }
  return path;
}

function partialName(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
}

async function writeWhole(path: string, dump: Blob): Promise<void> {
  const partial = partialName(path);
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, path);
}

let cachedDump: Blob | undefined;
let cachedEmptyDump: Blob | undefined;

/** The migrated PGlite data directory, read once per worker. */
export async function pgliteTemplate(): Promise<Blob> {
  if (!cachedDump) cachedDump = new Blob([readFileSync(await ensurePgliteTemplate())]);
  return cachedDump;
}

/** An initialised, unmigrated PGlite data directory (initdb costs about 2 s a time). */
export async function pgliteEmptyTemplate(): Promise<Blob> {
  if (!cachedEmptyDump) {
    await ensurePgliteTemplate();
    cachedEmptyDump = new Blob([readFileSync(pgliteEmptyTemplatePath())]);
  }
  return cachedEmptyDump;
}

/** Copies the migrated template into `dir`, a data directory a command can open. */
export async function copyPgliteTemplate(dir: string): Promise<void> {
  await ensurePgliteTemplate();
  cpSync(pgliteTemplateDir(), dir, { recursive: true });
}

/** The name every test run with these migrations shares on a PostgreSQL server. */
export function postgresTemplateName(): string {
  return `listings_sync_template_${templateKey()}`;
}

/** Runs one statement on the server's maintenance connection (the URL's own database). */
export async function adminQuery<Row extends pg.QueryResultRow = pg.QueryResultRow>(
  databaseUrl: string,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export function databaseUrlFor(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

const DUPLICATE_DATABASE = '42P04';

/**
 * Builds the PostgreSQL template database unless it exists: migrated under a private
 * name, then renamed (nobody may be connected to a template while it is copied, and a
 * rename makes it appear whole). A builder that loses the race drops its copy.
 */
export async function ensurePostgresTemplate(databaseUrl: string): Promise<string> {
  const name = postgresTemplateName();
  const found = await adminQuery(databaseUrl, 'select 1 from pg_database where datname = $1', [
    name,
  ]);
  if (found.length > 0) return name;
  const building = `${name}_b${randomBytes(4).toString('hex')}`;
  await adminQuery(databaseUrl, `create database "${building}"`);
  try {
    const warehouse = await openWarehouse({ databaseUrl: databaseUrlFor(databaseUrl, building) });
    try {
      await migrateToLatest(warehouse.db);
    } finally {
      await warehouse.close();
    }
    await adminQuery(databaseUrl, `alter database "${building}" rename to "${name}"`);
  } catch (error) {
    await adminQuery(databaseUrl, `drop database if exists "${building}" with (force)`);
    if ((error as { code?: string }).code !== DUPLICATE_DATABASE) throw error;
  }
  return name;
}

/** Drops the databases a test run left behind: clones whose close() never ran. */
export async function dropClones(databaseUrl: string, prefix: string): Promise<void> {
  const rows = await adminQuery<{ datname: string }>(
    databaseUrl,
    "select datname from pg_database where starts_with(datname, $1) and datname <> 'postgres'",
    [prefix],
  );
  for (const { datname } of rows) {
    await adminQuery(databaseUrl, `drop database if exists "${datname}" with (force)`);
  }
}

/**
 * How long a template no run has used is kept: other checkouts on the machine or the
 * server (another branch's migrations) use theirs meanwhile, and each run marks its own; a
 * week unused is a migration set gone.
 */
export const STALE_TEMPLATE_MS = 7 * 86_400_000;

/** A PGlite template the clean-up cannot touch: gone already, another user's, read-only. */
const LEFT_AS_IS: ReadonlySet<string> = new Set(['ENOENT', 'EPERM', 'EACCES', 'EROFS']);

/** The PGlite templates' names in the cache directory, the key second. */
const PGLITE_TEMPLATE_ENTRY = /^listings-sync-pglite-(?:template|empty)-([0-9a-f]{16})\.(?:tar|d)$/;

/**
 * Marks `key`'s PGlite templates in `dir` used (their modification time) and removes the
 * others no run has marked for `STALE_TEMPLATE_MS`; returns the names removed.
 */
export function prunePgliteTemplates(
  dir: string = testCacheDir(),
  key: string = templateKey(),
  now: Date = new Date(),
): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    const found = PGLITE_TEMPLATE_ENTRY.exec(name);
    if (!found) continue;
    const path = join(dir, name);
    try {
      if (found[1] === key) utimesSync(path, now, now);
      else if (now.getTime() - statSync(path).mtimeMs >= STALE_TEMPLATE_MS) {
        rmSync(path, { recursive: true, force: true });
        removed.push(name);
      }
    } catch (error) {
      // Another run's set-up removed it first, or it is another user's (a shared temporary
      // directory) or on a read-only one: left as it is.
      if (!LEFT_AS_IS.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
  return removed;
}

/** Why a template is left for later: in use (55006), or another role's (42501). */
const LEFT_ALONE: ReadonlySet<string> = new Set(['55006', '42501']);

/** A PostgreSQL template's comment: when a run last used it. */
const TEMPLATE_NOTE = 'listings-sync test template, last used ';

/**
 * Marks `key`'s PostgreSQL template used (its comment says when) and drops the other
 * templates unused for `STALE_TEMPLATE_MS`; one with no mark (made before marks, or by
 * an older checkout) is marked now, so its week starts. A template some session is
 * connected to, or that another role owns, is left as it is. Returns the names dropped.
 */
export async function prunePostgresTemplates(
  databaseUrl: string,
  key: string = templateKey(),
  now: Date = new Date(),
): Promise<string[]> {
  const mark = (name: string) =>
    adminQuery(
      databaseUrl,
      `comment on database "${name}" is '${TEMPLATE_NOTE}${now.toISOString()}'`,
    );
  const current = `listings_sync_template_${key}`;
  await mark(current);
  const others = await adminQuery<{ datname: string; note: string | null }>(
    databaseUrl,
    `select datname, shobj_description(oid, 'pg_database') as note from pg_database
      where datname ~ '^listings_sync_template_[0-9a-f]{16}$' and datname <> $1`,
    [current],
  );
  const dropped: string[] = [];
  for (const { datname, note } of others) {
    const used = note?.startsWith(TEMPLATE_NOTE)
      ? Date.parse(note.slice(TEMPLATE_NOTE.length))
      : NaN;
    try {
      if (Number.isNaN(used)) await mark(datname);
      else if (now.getTime() - used >= STALE_TEMPLATE_MS) {
        await adminQuery(databaseUrl, `drop database if exists "${datname}"`);
        dropped.push(datname);
      }
    } catch (error) {
      // 55006: another run is cloning it right now (a later run drops it); 42501: another
      // role's, which its own runs look after.
      if (!LEFT_ALONE.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
  return dropped;
}
