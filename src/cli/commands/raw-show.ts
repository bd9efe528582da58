/**
 * `listings-sync raw show` and `raw stats`: what the upstream answered, from the raw zone
 * (docs/replay.md). Read only.
 */
import { type Kysely, sql } from 'kysely';
import { decompressBody } from '../../raw/body.ts';
import type { Database } from '../../warehouse/database.ts';

export interface RawShowOptions {
  businessId: number;
  /** `YYYY-MM-DD` (UTC); the latest night with reads of the business when absent. */
  date?: string;
  operation?: string;
  /** The bodies as kept, byte for byte, instead of pretty JSON with a header per read. */
  raw?: boolean;
}

/** The text to print, or null when the raw zone holds nothing that matches. */
export async function renderRawShow(
  db: Kysely<Database>,
  options: RawShowOptions,
): Promise<string | null> {
  let date = options.date;
  if (date === undefined) {
    const latest = await db
      .selectFrom('raw_reads')
      .select((eb) => eb.fn.max('observed_at').as('at'))
      .where('business_id', '=', options.businessId)
      .executeTakeFirst();
    if (!latest?.at) return null;
    date = new Date(latest.at as Date).toISOString().slice(0, 10);
  }
  const from = new Date(`${date}T00:00:00Z`);
  const rows = await db
    .selectFrom('raw_reads as r')
    .innerJoin('raw_bodies as b', 'b.body_hash', 'r.body_hash')
    .select([
      'r.run_id',
      'r.account_name',
      'r.operation',
      'r.request',
      'r.attempt',
      'r.status',
      'r.observed_at',
      'b.encoding',
      'b.bytes',
    ])
    .where('r.business_id', '=', options.businessId)
    .where('r.observed_at', '>=', from)
    .where('r.observed_at', '<', new Date(from.getTime() + 86_400_000))
    .$if(options.operation !== undefined, (q) =>
      q.where('r.operation', '=', options.operation as string),
    )
    .orderBy('r.observed_at')
    .orderBy('r.read_id')
    .execute();
  if (rows.length === 0) return null;
  const out: string[] = [];
  for (const row of rows) {
    const text = decompressBody(row.encoding, row.bytes);
    if (options.raw) {
      out.push(text);
      continue;
    }
    let pretty = text;
    try {
      pretty = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Not JSON (an HTML error page): shown as it came.
    }
    out.push(
      `# ${new Date(row.observed_at).toISOString()} ${row.account_name} ${row.operation} ${row.request} ` +
        `HTTP ${row.status}${row.attempt > 1 ? ` (attempt ${row.attempt})` : ''} run ${row.run_id}\n${pretty}`,
    );
  }
  return `${out.join('\n')}\n`;
}

export interface RawNight {
  day: string;
  reads: number;
  /**
   * Reads retention kept of the night's runs once they were past its window (`aged_out`):
   * of those runs, the night holds only their businesses' latest reads.
   */
  agedOutReads: number;
  /** Compressed bytes of the bodies first kept that night. */
  newBytes: number;
  /** Compressed bytes the night's reads would take if each kept its own body. */
  referencedBytes: number;
}

export interface RawStats {
  reads: number;
  bodies: number;
  /** Compressed body bytes, and the bodies' size before compression. */
  storedBytes: number;
  uncompressedBytes: number;
  /** Both tables with their indexes, as the database counts them. */
  tableBytes: number;
  /** 1 − stored / referenced: what content addressing saved over one body per read. */
  savedShare: number;
  nights: RawNight[];
  /**
   * The oldest night replay can rebuild (`YYYY-MM-DD`, UTC): every run kept from it on is
   * kept whole. The latest of the accounts' own; null when the raw zone is empty.
   */
  rebuildableFrom: string | null;
  /** Each account's oldest night whose runs, and every later one's, are kept whole. */
  rebuildableFromByAccount: { account: string; night: string }[];
}

export async function readRawStats(db: Kysely<Database>): Promise<RawStats> {
  const totals = await sql<{
    reads: number;
    bodies: number;
    stored: number;
    uncompressed: number;
    referenced: number;
    table_bytes: number;
  }>`
    select (select count(*) from raw_reads)::bigint as reads,
           (select count(*) from raw_bodies)::bigint as bodies,
           (select coalesce(sum(octet_length(bytes)), 0) from raw_bodies)::bigint as stored,
           (select coalesce(sum(size), 0) from raw_bodies)::bigint as uncompressed,
           (select coalesce(sum(octet_length(b.bytes)), 0)
              from raw_reads r join raw_bodies b using (body_hash))::bigint as referenced,
           (pg_total_relation_size('raw_reads') + pg_total_relation_size('raw_bodies'))::bigint
             as table_bytes`.execute(db);
  const nights = await sql<{
    day: string;
    reads: number;
    aged_out: number;
    new_bytes: number;
    referenced: number;
  }>`
    with reads as (
      select (r.observed_at at time zone 'UTC')::date as day, r.body_hash, r.aged_out,
             octet_length(b.bytes) as bytes
        from raw_reads r join raw_bodies b using (body_hash)
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
  // Retention marks what it keeps of a run past its window (src/raw/retention.ts) and
  // deletes every other read of such a run: an account's runs are whole from its first
  // read after its last one marked (with none marked, from its first read).
  const rebuildable = await sql<{ account: string; night: string }>`
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
  const t = totals.rows[0];
  const referenced = Number(t?.referenced ?? 0);
  const stored = Number(t?.stored ?? 0);
  return {
    reads: Number(t?.reads ?? 0),
    bodies: Number(t?.bodies ?? 0),
    storedBytes: stored,
    uncompressedBytes: Number(t?.uncompressed ?? 0),
    tableBytes: Number(t?.table_bytes ?? 0),
    savedShare: referenced > 0 ? 1 - stored / referenced : 0,
    nights: nights.rows.map((n) => ({
      day: n.day,
      reads: Number(n.reads),
      agedOutReads: Number(n.aged_out),
      newBytes: Number(n.new_bytes),
      referencedBytes: Number(n.referenced),
    })),
    rebuildableFrom: rebuildable.rows.reduce<string | null>(
      (latest, row) => (latest === null || row.night > latest ? row.night : latest),
      null,
    ),
    rebuildableFromByAccount: rebuildable.rows.map((row) => ({
      account: row.account,
      night: row.night,
    })),
  };
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export function renderRawStats(stats: RawStats): string {
  if (stats.reads === 0) return 'The raw zone is empty: no sync has kept a read yet.\n';
  const byAccount =
    stats.rebuildableFromByAccount.length > 1
      ? ` (${stats.rebuildableFromByAccount.map((a) => `${a.account}: ${a.night}`).join(', ')})`
      : '';
  const lines = [
    `Raw zone: ${stats.reads} reads, ${stats.bodies} distinct bodies`,
    `  bodies: ${bytes(stats.storedBytes)} compressed (${bytes(stats.uncompressedBytes)} as received)`,
    `  tables with indexes: ${bytes(stats.tableBytes)}`,
    `  saved by content addressing: ${(stats.savedShare * 100).toFixed(1)} % of the body bytes one body per read would take`,
    `  oldest night replay can rebuild: ${stats.rebuildableFrom ?? 'none'}${byAccount}`,
    '',
    'night (UTC)   reads   new body bytes   bytes referenced',
  ];
  for (const n of stats.nights) {
    lines.push(
      `${n.day}  ${String(n.reads).padStart(6)}   ${bytes(n.newBytes).padStart(14)}   ${bytes(n.referencedBytes).padStart(16)}` +
        (n.agedOutReads > 0 ? '   past retention: latest reads only' : ''),
    );
  }
  return `${lines.join('\n')}\n`;
}
