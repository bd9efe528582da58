/**
 * `listings-sync raw show` and `raw stats`: what the upstream answered, from the raw zone
 * (docs/replay.md). Read only.
 */
import type { Kysely } from 'kysely';
import { redactText } from '../../log.ts';
import { storedBodyText, unreadableBodyReason } from '../../raw/body.ts';
import {
  latestReadOf,
  operationsOfBusinessDay,
  readRawZoneNights,
  readRawZoneTotals,
  readRebuildableNights,
  readsOfBusinessDay,
} from '../../raw/inspect.ts';
import type { Database } from '../../warehouse/database.ts';

export interface RawShowOptions {
  businessId: number;
  /** `YYYY-MM-DD` (UTC); the latest night with reads of the business when absent. */
  date?: string;
  operation?: string;
  /** The bodies as kept, byte for byte, instead of pretty JSON with a header per read. */
  raw?: boolean;
}

/**
 * What to print: the reads' text, and a line for each read whose kept body does not read
 * (night, business, account, run, then the body and its request as replay names them);
 * or, when the raw zone holds nothing that matches, the operations it does hold reads of
 * for that business on that night (none: no read at all).
 */
export async function renderRawShow(
  db: Kysely<Database>,
  options: RawShowOptions,
): Promise<{ text: string; unreadable: string[] } | { held: string[] }> {
  let date = options.date;
  if (date === undefined) {
    const latest = await latestReadOf(db, options.businessId);
    if (!latest) return { held: [] };
    date = latest.toISOString().slice(0, 10);
  }
  const from = new Date(`${date}T00:00:00Z`);
  const rows = await readsOfBusinessDay(db, options.businessId, from, options.operation);
  if (rows.length === 0)
    return { held: await operationsOfBusinessDay(db, options.businessId, from) };
  const out: string[] = [];
  const unreadable: string[] = [];
  for (const row of rows) {
    const at = new Date(row.observed_at).toISOString();
    let text: string | undefined;
    try {
      text = storedBodyText(row);
    } catch (error) {
      // Redacted as any error text not our own (src/cli/command/print-error.ts).
      unreadable.push(
        redactText(
          `${at.slice(0, 10)} business ${options.businessId} (account ${row.account_name}, run ${row.run_id}): ` +
            unreadableBodyReason(row.request, row.body_hash, error),
        ),
      );
    }
    if (options.raw) {
      if (text !== undefined) out.push(text);
      continue;
    }
    let pretty = text ?? '(its kept body cannot be read: see standard error)';
    try {
      if (text !== undefined) pretty = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Not JSON (an HTML error page): shown as it came.
    }
    out.push(
      `# ${at} ${row.account_name} ${row.operation} ${row.request} ` +
        `HTTP ${row.status}${row.attempt > 1 ? ` (attempt ${row.attempt})` : ''} run ${row.run_id}\n${pretty}`,
    );
  }
  return { text: out.length ? `${out.join('\n')}\n` : '', unreadable };
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
  /**
   * Bodies kept only as the base of a delta: no read refers to them since retention
   * deleted theirs, but the deltas that are read decode from them (docs/replay.md).
   */
  basesOnly: number;
  basesOnlyBytes: number;
  /**
   * 1 − (bytes of the bodies reads refer to) / referenced: what content addressing saved
   * over one body per read; never below 0, as each body read is among the bytes
   * referenced at least once. The bodies kept only as bases are not among them: they are
   * counted on their own (`basesOnly`), not as bytes the reads took.
   */
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
  const t = await readRawZoneTotals(db);
  const nights = await readRawZoneNights(db);
  const rebuildable = await readRebuildableNights(db);
  const referenced = Number(t?.referenced ?? 0);
  const stored = Number(t?.stored ?? 0);
  const read = stored - Number(t?.unread ?? 0);
  return {
    reads: Number(t?.reads ?? 0),
    bodies: Number(t?.bodies ?? 0),
    storedBytes: stored,
    uncompressedBytes: Number(t?.uncompressed ?? 0),
    tableBytes: Number(t?.table_bytes ?? 0),
    basesOnly: Number(t?.bases_only ?? 0),
    basesOnlyBytes: Number(t?.bases_only_bytes ?? 0),
    savedShare: referenced > 0 ? 1 - read / referenced : 0,
    nights: nights.map((n) => ({
      day: n.day,
      reads: Number(n.reads),
      agedOutReads: Number(n.aged_out),
      newBytes: Number(n.new_bytes),
      referencedBytes: Number(n.referenced),
    })),
    rebuildableFrom: rebuildable.reduce<string | null>(
      (latest, row) => (latest === null || row.night > latest ? row.night : latest),
      null,
    ),
    rebuildableFromByAccount: rebuildable.map((row) => ({
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
    ...(stats.basesOnly > 0
      ? [
          stats.basesOnly === 1
            ? `  kept only as the base of deltas: 1 body, ${bytes(stats.basesOnlyBytes)} (no read refers to it; the deltas read decode from it)`
            : `  kept only as the base of deltas: ${stats.basesOnly} bodies, ${bytes(stats.basesOnlyBytes)} (no read refers to them; the deltas read decode from them)`,
        ]
      : []),
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
