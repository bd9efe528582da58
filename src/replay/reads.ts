/**
 * What `listings-sync replay` reads of the live schema and does to the schemas it builds
 * (docs/replay.md, "Replay into a fresh schema"): the kept runs and reads of `raw_reads`
 * with their `sync_runs` rows, the kept bodies of `raw_bodies`, the `accounts` they were
 * read for, the schema the replay builds into, and the `quarantine` rows a replay recovers.
 * Rebuilding from them is src/replay/replay.ts's. `raw` is the live schema's connection
 * (`withSchema(source)`).
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../warehouse/database.ts';

/** A run with kept reads in the range and filters asked for. */
export interface KeptRun {
  run_id: string;
  started_at: Date;
  streams: unknown;
  shard: string | null;
  status: string;
  settings: unknown;
  first_observed: Date;
  last_observed: Date;
}

/** The reads a replay is limited to: observed from/before instants, of one account or business. */
export interface KeptRunFilter {
  /** Observed at or after. */
  from?: Date;
  /** Observed before. */
  before?: Date;
  account?: string;
  businessId?: number;
}

/** One kept read, as the replay indexes it (request → answer). */
export interface KeptReadRow {
  request: string;
  operation: string;
  status: number;
  observed_at: Date;
  body_hash: string;
}

export async function currentSchema(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error('The warehouse has no current schema (check its search_path).');
  return schema;
}

/** How many tables the schema holds (none: it is fresh, or does not exist yet). */
export async function tablesInSchema(db: Kysely<Database>, schema: string): Promise<number> {
  const existing = await sql<{ n: number }>`
    select count(*)::int as n from information_schema.tables where table_schema = ${schema}`.execute(
    db,
  );
  return existing.rows[0]?.n ?? 0;
}

export async function createSchema(db: Kysely<Database>, schema: string): Promise<void> {
  await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
}

/** Moves the connection's search path to `schema` (PGlite's one connection). */
export async function setSearchPath(db: Kysely<Database>, schema: string): Promise<void> {
  await sql`set search_path to ${sql.id(schema)}`.execute(db);
}

/** Every account, with what the replayed sync's credential needs of it. */
export async function keptAccounts(
  raw: Kysely<Database>,
): Promise<{ name: string; user_email: string; base_url: string }[]> {
  return raw.selectFrom('accounts').select(['name', 'user_email', 'base_url']).execute();
}

/** The runs with kept reads in the range and filters, in the order they ran. */
export async function keptRuns(raw: Kysely<Database>, filter: KeptRunFilter): Promise<KeptRun[]> {
  const rows = await raw
    .selectFrom('raw_reads as r')
    .innerJoin('sync_runs as s', 's.run_id', 'r.run_id')
    .select(['r.run_id', 's.started_at', 's.streams', 's.shard', 's.status', 's.settings'])
    .select((eb) => [
      eb.fn.min('r.observed_at').as('first_observed'),
      eb.fn.max('r.observed_at').as('last_observed'),
    ])
    .$if(filter.from !== undefined, (q) => q.where('r.observed_at', '>=', filter.from as Date))
    .$if(filter.before !== undefined, (q) => q.where('r.observed_at', '<', filter.before as Date))
    .$if(filter.account !== undefined, (q) =>
      q.where('r.account_name', '=', filter.account as string),
    )
    .$if(filter.businessId !== undefined, (q) =>
      q.where('r.business_id', '=', filter.businessId as number),
    )
    .where('r.uncommitted', '=', false)
    .groupBy(['r.run_id', 's.started_at', 's.streams', 's.shard', 's.status', 's.settings'])
    .orderBy('s.started_at')
    .orderBy('r.run_id')
    .execute();
  return rows as unknown as KeptRun[];
}

/** The first and last observation the raw zone holds; undefined when it holds none. */
export async function keptReadSpan(
  raw: Kysely<Database>,
): Promise<{ first: Date | undefined; last: Date | undefined }> {
  const span = await raw
    .selectFrom('raw_reads')
    .select((eb) => [eb.fn.min('observed_at').as('first'), eb.fn.max('observed_at').as('last')])
    .executeTakeFirst();
  return {
    first: span?.first ? new Date(span.first as Date) : undefined,
    last: span?.last ? new Date(span.last as Date) : undefined,
  };
}

/** The accounts a run kept reads of (only `account`, when given), by name. */
export async function accountsOfRun(
  raw: Kysely<Database>,
  runId: string,
  account: string | undefined,
): Promise<string[]> {
  const rows = await raw
    .selectFrom('raw_reads')
    .select('account_name')
    .distinct()
    .where('run_id', '=', runId)
    .$if(account !== undefined, (q) => q.where('account_name', '=', account as string))
    .orderBy('account_name')
    .execute();
  return rows.map((r) => r.account_name);
}

/** One credential's part of one kept run: its reads of businesses that committed. */
function committedReads(raw: Kysely<Database>, runId: string, accountName: string) {
  return raw
    .selectFrom('raw_reads as r')
    .where('r.run_id', '=', runId)
    .where('r.account_name', '=', accountName)
    .where('r.uncommitted', '=', false);
}

/** The run's reads of the credential itself (business_id null), in read order. */
export async function accountReadsOfRun(
  raw: Kysely<Database>,
  run: { runId: string; accountName: string },
): Promise<KeptReadRow[]> {
  return committedReads(raw, run.runId, run.accountName)
    .select(['r.request', 'r.operation', 'r.status', 'r.observed_at', 'r.body_hash'])
    .where('r.business_id', 'is', null)
    .orderBy('r.read_id')
    .execute();
}

/**
 * Each business the run committed (only `businessId`, when given), with the latest time
 * its reads were kept with. Operation-10 polls name a business but are the credential's,
 * at their own time: left out.
 */
export async function businessTimesOfRun(
  raw: Kysely<Database>,
  run: { runId: string; accountName: string; businessId?: number },
): Promise<{ businessId: number; at: Date }[]> {
  const rows = await committedReads(raw, run.runId, run.accountName)
    .select(['r.business_id', (eb) => eb.fn.max('r.observed_at').as('at')])
    .where('r.business_id', 'is not', null)
    .where('r.operation', '<>', 'get_response_status')
    .$if(run.businessId !== undefined, (q) =>
      q.where('r.business_id', '=', run.businessId as number),
    )
    .groupBy('r.business_id')
    .execute();
  return rows.map((row) => ({ businessId: Number(row.business_id), at: new Date(row.at as Date) }));
}

/**
 * How many reads the credential's part of the run kept: of `businessId` and the
 * credential itself when given, else all.
 */
export async function countReadsOfRun(
  raw: Kysely<Database>,
  run: { runId: string; accountName: string; businessId?: number },
): Promise<number> {
  const row = await committedReads(raw, run.runId, run.accountName)
    .select((eb) => eb.fn.countAll().as('n'))
    .$if(run.businessId !== undefined, (q) =>
      q.where((eb) =>
        eb.or([
          eb('r.business_id', '=', run.businessId as number),
          eb('r.business_id', 'is', null),
        ]),
      ),
    )
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * The run's reads of one business, in read order. Bounded by the run's own span, so the
 * (business_id, observed_at) index reads this run's rows, not every night's of the business.
 */
export async function businessReadsOfRun(
  raw: Kysely<Database>,
  run: { runId: string; accountName: string; businessId: number; first: Date; last: Date },
): Promise<KeptReadRow[]> {
  return committedReads(raw, run.runId, run.accountName)
    .select(['r.request', 'r.operation', 'r.status', 'r.observed_at', 'r.body_hash'])
    .where('r.business_id', '=', run.businessId)
    .where('r.observed_at', '>=', run.first)
    .where('r.observed_at', '<=', run.last)
    .orderBy('r.read_id')
    .execute();
}

/**
 * One kept body, compressed as stored, with the hash of its base when it is a delta
 * (migration 0032); throws when the raw zone lacks it.
 */
export async function keptBody(
  raw: Kysely<Database>,
  hash: string,
): Promise<{ encoding: string; bytes: Uint8Array; base_hash: string | null }> {
  return raw
    .selectFrom('raw_bodies')
    .select(['encoding', 'bytes', sql<string | null>`encode(base_hash, 'hex')`.as('base_hash')])
    .where('body_hash', '=', Buffer.from(hash, 'hex'))
    .executeTakeFirstOrThrow();
}

/** A kept body as stored: compressed, with the hash of its base when it is a delta. */
export interface StoredBody {
  encoding: string;
  bytes: Uint8Array;
  base_hash: string | null;
}

/**
 * The kept bodies of these hashes in one statement (a business's reads of a night, say),
 * with the bases of those kept as deltas, by hash; a hash the raw zone lacks is left out
 * (`keptBody` then names it, as it would).
 */
export async function keptBodiesOf(
  raw: Kysely<Database>,
  hashes: readonly string[],
): Promise<Map<string, StoredBody>> {
  const found = new Map<string, StoredBody>();
  if (hashes.length === 0) return found;
  const rows = await raw
    .selectFrom('raw_bodies')
    .select([
      sql<string>`encode(body_hash, 'hex')`.as('hash'),
      'encoding',
      'bytes',
      sql<string | null>`encode(base_hash, 'hex')`.as('base_hash'),
    ])
    .where((eb) => {
      const keys = hashes.map((hash) => Buffer.from(hash, 'hex'));
      // The bases of those kept as deltas too (migration 0032): one step, never a chain.
      return eb.or([
        eb('body_hash', 'in', keys),
        eb(
          'body_hash',
          'in',
          eb.selectFrom('raw_bodies as d').select('d.base_hash').where('d.body_hash', 'in', keys),
        ),
      ]);
    })
    .execute();
  for (const { hash, ...body } of rows) found.set(hash, body);
  return found;
}

/**
 * Copies into `db`'s schema the `source` schema's quarantine rows of these runs whose
 * record is not quarantined again there (no equal row), with `recovered_at` set (a row
 * recovered before keeps its time); returns how many were recovered now, not before.
 */
export async function copyRecoveredQuarantine(
  db: Kysely<Database>,
  source: string,
  runIds: readonly string[],
): Promise<number> {
  if (runIds.length === 0) return 0;
  const { rows } = await sql<{ recovered: number }>`
    with recovered as (
      select q.run_id, q.account_name, q.business_id, q.stream, q.location, q.reason, q.payload,
             q.quarantined_at, q.recovered_at
        from ${sql.id(source, 'quarantine')} q
       where q.run_id in (${sql.join(runIds)})
         and not exists (
           select 1 from quarantine t
            where t.account_name = q.account_name
              and t.business_id is not distinct from q.business_id
              and t.stream = q.stream
              and t.payload is not distinct from q.payload)
    ), copied as (
      insert into quarantine
        (run_id, account_name, business_id, stream, location, reason, payload, quarantined_at, recovered_at)
      select run_id, account_name, business_id, stream, location, reason, payload,
             quarantined_at, coalesce(recovered_at, now())
        from recovered
    )
    -- The insert runs whether or not the query reads it (PostgreSQL runs every
    -- data-modifying WITH to completion).
    select count(*)::int as recovered from recovered where recovered_at is null`.execute(db);
  return rows[0]?.recovered ?? 0;
}
