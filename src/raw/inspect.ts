/**
 * What `listings-sync raw show` and `raw stats` read from the raw zone (`raw_reads`,
 * `raw_bodies`: docs/warehouse.md, "Raw zone"; the commands: docs/replay.md, "Looking at
 * the raw zone"). Read only.
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';
import { storedBodyText } from './body.ts';
import { UNREAD_BODY_HASHES } from './prune.ts';

/** When the business was last read (its latest read's `observed_at`); undefined with none. */
export async function latestReadOf(db: Db, businessId: number): Promise<Date | undefined> {
  const latest = await db
    .selectFrom('raw_reads')
    .select((eb) => eb.fn.max('observed_at').as('at'))
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  return latest?.at ? new Date(latest.at as Date) : undefined;
}

export interface RawReadWithBody {
  run_id: string;
  account_name: string;
  operation: string;
  request: string;
  attempt: number;
  status: number;
  observed_at: Date;
  /** The body's sha256, hex. */
  body_hash: string;
  /** The body as kept: `bytes` compressed with `encoding`, with its base's when a delta. */
  encoding: string;
  bytes: Uint8Array;
  base_encoding: string | null;
  base_bytes: Uint8Array | null;
}

/**
 * The business's reads from `from` to one day later (excluded), of one operation when
 * given, with their bodies, in the order they were read.
 */
export async function readsOfBusinessDay(
  db: Db,
  businessId: number,
  from: Date,
  operation: string | undefined,
): Promise<RawReadWithBody[]> {
  return db
    .selectFrom('raw_reads as r')
    .innerJoin('raw_bodies as b', (join) =>
      join.on(sql<boolean>`b.body_hash = decode(r.body_hash, 'hex')`),
    )
    .leftJoin('raw_bodies as base', 'base.body_hash', 'b.base_hash')
    .select([
      'r.run_id',
      'r.account_name',
      'r.operation',
      'r.request',
      'r.attempt',
      'r.status',
      'r.observed_at',
      'r.body_hash',
      'b.encoding',
      'b.bytes',
      'base.encoding as base_encoding',
      'base.bytes as base_bytes',
    ])
    .where('r.business_id', '=', businessId)
    .where('r.observed_at', '>=', from)
    .where('r.observed_at', '<', new Date(from.getTime() + 86_400_000))
    .$if(operation !== undefined, (q) => q.where('r.operation', '=', operation as string))
    .orderBy('r.observed_at')
    .orderBy('r.read_id')
    .execute();
}

/** Every kept body's text, deltas read with their base (migration 0032), in hash order. */
export async function keptBodyTexts(db: Db): Promise<{ body_hash: string; text: string }[]> {
  const rows = await db
    .selectFrom('raw_bodies as b')
    .leftJoin('raw_bodies as base', 'base.body_hash', 'b.base_hash')
    .select([
      sql<string>`encode(b.body_hash, 'hex')`.as('body_hash'),
      'b.encoding',
      'b.bytes',
      'base.encoding as base_encoding',
      'base.bytes as base_bytes',
    ])
    .orderBy('b.body_hash')
    .execute();
  return rows.map((row) => ({ body_hash: row.body_hash, text: storedBodyText(row) }));
}

/** The operations the raw zone holds reads of, for one business on one night, by name. */
export async function operationsOfBusinessDay(
  db: Db,
  businessId: number,
  from: Date,
): Promise<string[]> {
  const rows = await db
    .selectFrom('raw_reads')
    .select('operation')
    .distinct()
    .where('business_id', '=', businessId)
    .where('observed_at', '>=', from)
    .where('observed_at', '<', new Date(from.getTime() + 86_400_000))
    .orderBy('operation')
    .execute();
  return rows.map((row) => row.operation);
}

/**
 * The raw zone's totals as the database returns them: `bigint`s, which node-postgres
 * returns as strings (the caller converts them with `Number`).
 */
export interface RawZoneTotals {
  reads: number | string;
  bodies: number | string;
  stored: number | string;
  uncompressed: number | string;
  referenced: number | string;
  /** Compressed bytes of the bodies no read refers to (retention left them as bases). */
  unread: number | string;
  /** Of those, the bodies kept only as the base of a delta that is read: count, bytes. */
  bases_only: number | string;
  bases_only_bytes: number | string;
  table_bytes: number | string;
}

/**
 * Reads, bodies, their compressed and uncompressed bytes, the bytes of the bodies no read
 * refers to (of them, those kept as the base of a delta), and both tables' size with
 * indexes. The unread bodies as src/raw/prune.ts finds them: the reads' hashes cut out of
 * their sets (migration 0035), taken from the bodies' keys in one EXCEPT.
 */
export async function readRawZoneTotals(db: Db): Promise<RawZoneTotals | undefined> {
  const { rows } = await sql<RawZoneTotals>`
    with unread as (
      select b.bytes,
             exists (select 1 from raw_bodies delta where delta.base_hash = b.body_hash) as base
        from raw_bodies b
       where b.body_hash in (${UNREAD_BODY_HASHES})
    )
    select (select count(*) from raw_reads)::bigint as reads,
           (select count(*) from raw_bodies)::bigint as bodies,
           (select coalesce(sum(octet_length(bytes)), 0) from raw_bodies)::bigint as stored,
           (select coalesce(sum(size), 0) from raw_bodies)::bigint as uncompressed,
           (select coalesce(sum(octet_length(b.bytes)), 0)
              from raw_reads r join raw_bodies b on b.body_hash = decode(r.body_hash, 'hex'))::bigint as referenced,
           (select coalesce(sum(octet_length(bytes)), 0) from unread)::bigint as unread,
           (select count(*) from unread where base)::bigint as bases_only,
           (select coalesce(sum(octet_length(bytes)), 0) from unread where base)::bigint
             as bases_only_bytes,
           (pg_total_relation_size('raw_read_sets') + pg_total_relation_size('raw_bodies'))::bigint
             as table_bytes`.execute(db);
  return rows[0];
}

/** One night's figures, `bigint`s as `RawZoneTotals`'s. */
export interface RawZoneNight {
  day: string;
  reads: number | string;
  aged_out: number | string;
  new_bytes: number | string;
  referenced: number | string;
}

/**
 * Per UTC night, in order: its reads, those retention kept past its window (`aged_out`),
 * the compressed bytes of the bodies first kept that night, and the bytes its reads refer to.
 */
export async function readRawZoneNights(db: Db): Promise<RawZoneNight[]> {
  const { rows } = await sql<RawZoneNight>`
    with reads as (
      select (r.observed_at at time zone 'UTC')::date as day, r.body_hash, r.aged_out,
             octet_length(b.bytes) as bytes
        from raw_reads r join raw_bodies b on b.body_hash = decode(r.body_hash, 'hex')
    ), first_kept as (
      select body_hash, min(day) as day, min(bytes) as bytes from reads group by body_hash
    )
    select to_char(d.day, 'YYYY-MM-DD') as day, d.reads, d.aged_out,
           coalesce(f.new_bytes, 0)::bigint as new_bytes, d.referenced
      from (select day, count(*)::bigint as reads, count(*) filter (where aged_out)::bigint as aged_out,
                   sum(bytes)::bigint as referenced
              from reads group by day) d
      left join (select day, sum(bytes)::bigint as new_bytes from first_kept group by day) f
        using (day)
     order by d.day`.execute(db);
  return rows;
}

/**
 * Each account's oldest night (`YYYY-MM-DD`, UTC) from which its runs are kept whole, in
 * account order. Retention marks what it keeps of a run past its window
 * (src/raw/retention.ts) and deletes every other read of such a run: an account's runs are
 * whole from its first read after its last one marked (with none marked, from its first
 * read).
 */
export async function readRebuildableNights(db: Db): Promise<{ account: string; night: string }[]> {
  const { rows } = await sql<{ account: string; night: string }>`
    with edge as (
      select account_name, max(observed_at) filter (where aged_out) as aged_until
        from raw_reads group by account_name
    )
    select e.account_name as account,
           to_char(min(r.observed_at) at time zone 'UTC', 'YYYY-MM-DD') as night
      from edge e
      join raw_reads r
        on r.account_name = e.account_name
       and (e.aged_until is null or r.observed_at > e.aged_until)
     group by e.account_name
     order by e.account_name`.execute(db);
  return rows;
}
