/**
 * Keeping what a sync reads (docs/warehouse.md, "Raw zone"). A capture observes the API
 * client's responses for the run's credentials and holds them until the sync writes
 * them: a business's reads in that business's own transaction (so the raw zone and the
 * tables agree), the credential's other reads (its business list, reference data,
 * operation-10 polls, a business that read as missing) when the credential is done.
 */
import type { ColumnType, Kysely, Transaction } from 'kysely';
import { type ApiClient, type ObservedResponse, observeResponses } from '../api/client.ts';
import type { Credential } from '../api/index.ts';
import type { Database } from '../warehouse/database.ts';
import {
  BODY_ENCODING,
  businessIdOfPath,
  compressBody,
  compressDelta,
  DELTA_ENCODING,
  decompressBody,
  keptBody,
  requestKey,
  SECRET_PARAMS,
} from './body.ts';
import {
  type BodyBase,
  insertRawBodies,
  insertRawReads,
  type RawBodyToInsert,
  writeReadsIfBodiesKept,
} from './reads.ts';

/** One read as the raw zone keeps it, before it is written. */
export interface KeptRead {
  accountName: string;
  businessId: number | null;
  operation: string;
  request: string;
  attempt: number;
  status: number;
  /** The body with secrets replaced, and its sha256. */
  text: string;
  hash: string;
  /** When it was read, on the credential's observation clock. */
  observedAt: Date;
  /** A read of a business whose transaction never committed (taken with the account's). */
  uncommitted?: boolean;
}

export interface RawCapture {
  /** The reads of one business so far, taken out of the capture. */
  takeBusiness(accountName: string, businessId: number): KeptRead[];
  /** Every read of the credential still held, taken out. */
  takeAccount(accountName: string): KeptRead[];
  stop(): void;
}

/** What the capture keeps of one response (null for a write: only reads are kept). */
export function keptRead(response: ObservedResponse, observedAt: Date): KeptRead | null {
  if (response.method !== 'GET') return null;
  const { credential } = response;
  const params = Object.fromEntries(
    Object.entries(response.query).filter(([name]) => !SECRET_PARAMS.has(name)),
  );
  const { text, hash } = keptBody(response.text, [credential.authToken, credential.userEmail]);
  return {
    accountName: credential.name,
    businessId: businessIdOfPath(response.path),
    operation: response.operation,
    request: requestKey(response.path, params),
    attempt: response.attempt,
    status: response.status,
    text,
    hash,
    observedAt,
  };
}

/**
 * Starts keeping the reads of these credentials made through `api`, each stamped by
 * `clock` when it is observed (the run's observation clock, docs/running.md, "Which day
 * a sync records").
 */
export function startRawCapture(
  api: ApiClient,
  credentials: readonly Credential[],
  clock: (credential: Credential) => Date,
): RawCapture {
  // Matched by identity as well as name: another command's credential of the same name
  // on a shared client is not this run's.
  const mine = new Set(credentials);
  const held = new Map<string, KeptRead[]>();
  const stop = observeResponses(api, (response) => {
    if (!mine.has(response.credential)) return;
    const read = keptRead(response, clock(response.credential));
    if (!read) return;
    const list = held.get(read.accountName) ?? [];
    list.push(read);
    held.set(read.accountName, list);
  });
  const take = (accountName: string, keep: (read: KeptRead) => boolean): KeptRead[] => {
    const list = held.get(accountName) ?? [];
    const taken = list.filter(keep);
    held.set(
      accountName,
      list.filter((read) => !keep(read)),
    );
    return taken;
  };
  return {
    takeBusiness: (accountName, businessId) =>
      // Operation-10 polls are the credential's, written when it is done.
      take(
        accountName,
        (read) => read.businessId === businessId && read.operation !== 'get_response_status',
      ),
    // A business read still held when the credential is done belongs to a business that
    // never committed (the run stopped, or its transaction failed): marked, not replayed.
    takeAccount: (accountName) =>
      take(accountName, () => true).map((read) =>
        read.businessId !== null && read.operation !== 'get_response_status'
          ? { ...read, uncommitted: true }
          : read,
      ),
    stop,
  };
}

/**
 * Writes reads and any of their bodies not kept yet, on `db` or inside the caller's
 * transaction. Bodies are inserted in hash order, so two businesses' transactions that
 * share a new body cannot deadlock on it. A business's reads are stamped with the time its
 * rows were written at (`header.observedAt`); without it, each read keeps its own.
 */
export async function writeRawReads(
  db: Kysely<Database> | Transaction<Database>,
  header: { runId: string; observedAt?: Date },
  reads: readonly KeptRead[],
): Promise<void> {
  if (reads.length === 0) return;
  const rows = reads.map((read) => ({
    run_id: header.runId,
    account_name: read.accountName,
    business_id: read.businessId,
    operation: read.operation,
    request: read.request,
    attempt: read.attempt,
    status: read.status,
    observed_at: header.observedAt ?? read.observedAt,
    body_hash: read.hash,
    uncommitted: read.uncommitted === true,
  }));
  const firstRead = new Map<string, KeptRead>();
  for (const read of reads) if (!firstRead.has(read.hash)) firstRead.set(read.hash, read);
  const bodies = [...firstRead.keys()].sort().map((hash) => firstRead.get(hash) as KeptRead);
  let since = bodies[0]?.observedAt.getTime() ?? 0;
  for (const read of bodies) since = Math.min(since, read.observedAt.getTime());
  // Which bodies are kept already (primary-key probes), and each new one's base when its
  // business, or its account for a read tied to none, has reads in the window. Every body
  // kept (an unchanged night): the reads go in with that statement, and that is all.
  const kept = await writeReadsIfBodiesKept(db, bodies, new Date(since - BASE_WINDOW_MS), rows);
  if (kept.readsWritten) return;
  // Only the bodies raw_bodies lacks are compressed and inserted, in hash order, then the reads.
  await insertRawBodies(db, bodiesToInsert(bodies, kept.bases));
  await insertRawReads(db, rows);
}

/** How far back a new body looks for the previous body of its request: a few nights. */
const BASE_WINDOW_MS = 8 * 86_400_000;

/**
 * A delta is kept when it is under this share of its base's stored bytes; past it, the
 * body is kept whole and becomes the base of the next ones, so deltas never grow without end.
 * A delta's row costs its base's 32-byte hash more than a whole body's, so a delta of 0.7
 * still saves about a fifth of the row. A night's rankings body against a base a few nights
 * old compresses to 0.55-0.65 of the body kept whole (docs/benchmarks.md, "a year's bytes"):
 * under a share of 0.5 every one was kept whole.
 */
const DELTA_SHARE = 0.7;

/**
 * The new bodies as kept: each as a delta against the base of the previous body of its
 * request (docs/warehouse.md, "Raw zone"), or whole when there is none or the delta would
 * not be small.
 */
function bodiesToInsert(reads: readonly KeptRead[], kept: readonly BodyBase[]): RawBodyToInsert[] {
  const baseTexts = new Map<string, string>();
  const out: RawBodyToInsert[] = [];
  reads.forEach((read, i) => {
    const row = kept[i];
    if (row?.known) return;
    const size = Buffer.byteLength(read.text, 'utf8');
    if (row?.base_hash && row.encoding && row.bytes) {
      let baseText = baseTexts.get(row.base_hash);
      if (baseText === undefined) {
        baseText = decompressBody(row.encoding, row.bytes);
        baseTexts.set(row.base_hash, baseText);
      }
      const delta = compressDelta(read.text, baseText);
      if (delta.byteLength < row.bytes.byteLength * DELTA_SHARE) {
        out.push({
          body_hash: read.hash,
          encoding: DELTA_ENCODING,
          size,
          bytes: delta,
          base_hash: row.base_hash,
        });
        return;
      }
    }
    out.push({
      body_hash: read.hash,
      encoding: BODY_ENCODING,
      size,
      bytes: compressBody(read.text),
      base_hash: null,
    });
  });
  return out;
}

/**
 * One distinct upstream body, compressed (migration 0011; docs/warehouse.md, "Raw zone").
 * Its hashes are the sha256's 32 bytes since migration 0035: the raw zone's statements
 * convert them to and from the program's hex (`encode(…, 'hex')`, `decode(…, 'hex')`).
 */
export interface RawBodiesTable {
  body_hash: Uint8Array;
  encoding: string;
  size: number;
  bytes: Uint8Array;
  first_seen_at: ColumnType<Date, Date | undefined, never>;
  /** Migration 0032: a delta's base (a body kept whole); null for a body kept whole. */
  base_hash: Uint8Array | null;
}

declare module '../warehouse/database.ts' {
  interface Database {
    raw_bodies: RawBodiesTable;
  }
}
