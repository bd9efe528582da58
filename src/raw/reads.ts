/**
 * The raw zone's writes, `raw_reads` and `raw_bodies` (docs/warehouse.md, "Raw zone:
 * raw_bodies, raw_reads"; docs/replay.md, "The raw zone"): rows in, as src/raw/capture.ts
 * builds them (what a read keeps, its body compressed). Every business runs these, so each
 * statement's text is built once (src/warehouse/write/bulk-write.ts).
 */
import { type ColumnType, CompiledQuery, type Generated, type Selectable } from 'kysely';
import type { Db } from '../warehouse/database.ts';
import { arrayLiteral } from '../warehouse/write/bulk-write.ts';

/** One distinct body to keep, compressed. */
export interface RawBodyToInsert {
  body_hash: string;
  encoding: string;
  /** The body's length in UTF-8 bytes, before compression. */
  size: number;
  bytes: Uint8Array;
  /** A delta's base (a body kept whole, migration 0032); null for a body kept whole. */
  base_hash: string | null;
}

/** One read to keep, in `raw_reads`' column names: its row but for the generated id. */
export type RawReadToInsert = Omit<Selectable<RawReadsTable>, 'read_id'>;

/** A body of the batch: its hash and the read it came with (business, account, operation, request). */
export interface BodyOfRead {
  hash: string;
  businessId: number | null;
  accountName: string;
  operation: string;
  request: string;
}

/** What `raw_bodies` holds for a body of the batch: whether it is kept, else its candidate base. */
export interface BodyBase {
  known: boolean;
  /** The base, as stored (null: kept already, or no previous body). */
  base_hash: string | null;
  encoding: string | null;
  bytes: Uint8Array | null;
}

/** What `writeReadsIfBodiesKept` found, and whether the reads it was given are written already. */
export interface BodiesKept {
  /** For each body, in the batch's order. */
  bases: BodyBase[];
  /** The reads went in with the probe: every body was kept already. */
  readsWritten: boolean;
}

/**
 * For each body, in the batch's order: whether `raw_bodies` holds it already and, when it
 * does not, the base of the latest body kept since `since` of a read of the same business
 * (or, for a read tied to no business, the same account's) and operation, the same request
 * first: that body itself when it is kept whole, else its own base. A base is always a body
 * kept whole, so a delta decodes from two rows at most.
 *
 * One statement asks which bodies are kept and whether the batch's businesses (or its
 * account, for reads tied to none) have reads since `since` at all; only new bodies with
 * such reads go on to the base look-up. That one reads `raw_reads`, a view, and PostgreSQL
 * plans it afresh on every execution (about 0.5 ms: on an unchanged night of 500
 * businesses, 261 ms of planning against 57 ms of execution), which an unchanged night,
 * every body kept, and a business's first night, no earlier reads, no longer pay.
 *
 * The same statement appends `reads` (the reads of these bodies, each body among them)
 * when every body is kept already (`readsWritten`): an unchanged night writes a business's
 * raw zone in one statement rather than two. Otherwise it writes nothing, and the caller
 * keeps the new bodies, then the reads.
 */
export async function writeReadsIfBodiesKept(
  db: Db,
  bodies: readonly BodyOfRead[],
  since: Date,
  reads: readonly RawReadToInsert[],
): Promise<BodiesKept> {
  // "Every body kept" stands for "every read's body kept" only when they are the same hashes.
  const hashes = new Set(bodies.map((b) => b.hash));
  const stray = reads.find((read) => !hashes.has(read.body_hash));
  if (stray) throw new Error(`A raw read's body ${stray.body_hash} is not among the bodies asked.`);
  const businessIds = [
    ...new Set(bodies.flatMap((b) => (b.businessId === null ? [] : [b.businessId]))),
  ];
  const probe = [
    arrayLiteral(bodies.map((b) => b.hash)),
    arrayLiteral(businessIds),
    arrayLiteral([...new Set(bodies.map((b) => b.accountName))]),
    since.toISOString(),
    bodies.some((b) => b.businessId === null),
  ];
  const { rows } = await db.executeQuery<{
    known: (string | number)[];
    earlier: boolean;
    written?: boolean;
  }>(CompiledQuery.raw(READS_IF_BODIES_KNOWN, [...probe, ...readSetParams(reads)]));
  if (rows[0]?.written === true) {
    return { bases: bodies.map(() => KEPT), readsWritten: true };
  }
  const known = new Set((rows[0]?.known ?? []).map((i) => Number(i) - 1));
  const fresh = bodies.flatMap((body, index) => (known.has(index) ? [] : [{ body, index }]));
  const bases = new Map<number, BodyBase>();
  if (fresh.length > 0 && rows[0]?.earlier) {
    const { rows: found } = await db.executeQuery<BodyBase & { i: string | number }>(
      CompiledQuery.raw(BODY_BASES, [
        arrayLiteral(fresh.map(({ body }) => body.hash)),
        arrayLiteral(fresh.map(({ body }) => body.businessId)),
        arrayLiteral(fresh.map(({ body }) => body.accountName)),
        arrayLiteral(fresh.map(({ body }) => body.operation)),
        arrayLiteral(fresh.map(({ body }) => body.request)),
        since.toISOString(),
      ]),
    );
    // `i` is the 1-based place among the fresh bodies; the batch's place is theirs.
    for (const { i, ...row } of found) {
      bases.set((fresh[Number(i) - 1] as { index: number }).index, { ...row, known: false });
    }
  }
  return {
    bases: bodies.map(
      (_, index) =>
        bases.get(index) ?? {
          known: known.has(index),
          base_hash: null,
          encoding: null,
          bytes: null,
        },
    ),
    readsWritten: false,
  };
}

const KEPT: BodyBase = { known: true, base_hash: null, encoding: null, bytes: null };

/**
 * Inserts bodies, skipping any another transaction kept meanwhile. The caller gives them
 * in hash order, so two businesses' transactions that share a new body cannot deadlock on it.
 */
export async function insertRawBodies(db: Db, bodies: readonly RawBodyToInsert[]): Promise<void> {
  if (bodies.length === 0) return;
  await db
    .insertInto('raw_bodies')
    .values(
      bodies.map((body) => ({
        ...body,
        body_hash: hashBytes(body.body_hash),
        base_hash: body.base_hash === null ? null : hashBytes(body.base_hash),
      })),
    )
    .onConflict((oc) => oc.column('body_hash').doNothing())
    .execute();
}

/**
 * Appends reads, in one statement: each run of consecutive reads that share their run,
 * account, business, observation time and `uncommitted` becomes one `raw_read_sets` row
 * (migration 0035: a business's reads of a night are one row), a line per read in read
 * order and the reads' hashes as 32 bytes each. The `raw_reads` view reads them back one
 * row per read.
 */
export async function insertRawReads(db: Db, reads: readonly RawReadToInsert[]): Promise<void> {
  if (reads.length === 0) return;
  await db.executeQuery(CompiledQuery.raw(INSERT_SETS, readSetParams(reads)));
}

/** INSERT_SETS' seven parameters: the reads' `raw_read_sets` rows, in read order. */
function readSetParams(reads: readonly RawReadToInsert[]): unknown[] {
  const sets: { first: RawReadToInsert; lines: string[]; hashes: string[] }[] = [];
  for (const read of reads) {
    let set = sets[sets.length - 1];
    if (!set || set.lines.length >= MAX_READS_PER_SET || !sameSet(set.first, read)) {
      set = { first: read, lines: [], hashes: [] };
      sets.push(set);
    }
    set.lines.push(readLine(read));
    if (!HASH.test(read.body_hash)) {
      throw new Error(
        `A raw read's body hash must be a sha256 in lowercase hex (got ${read.body_hash}).`,
      );
    }
    set.hashes.push(read.body_hash);
  }
  return [
    arrayLiteral(sets.map((s) => s.first.run_id)),
    arrayLiteral(sets.map((s) => s.first.account_name)),
    arrayLiteral(sets.map((s) => s.first.business_id)),
    arrayLiteral(sets.map((s) => s.first.observed_at)),
    arrayLiteral(sets.map((s) => s.first.uncommitted === true)),
    arrayLiteral(sets.map((s) => s.lines.join('\n'))),
    arrayLiteral(sets.map((s) => s.hashes.join(''))),
  ];
}

/** A sha256 in lowercase hex as the 32 bytes `raw_bodies` keeps (migration 0035). */
function hashBytes(hex: string): Buffer {
  if (!HASH.test(hex)) {
    throw new Error(`A raw body's hash must be a sha256 in lowercase hex (got ${hex}).`);
  }
  return Buffer.from(hex, 'hex');
}

/** The view's `read_id` keeps a read's place in its set in 16 bits (migration 0035). */
const MAX_READS_PER_SET = 65_535;

const HASH = /^[0-9a-f]{64}$/;

/** What a line's fields may hold: no space or line break separates them otherwise. */
const FIELD = /^\S+$/;

/**
 * A read's line in its set (migration 0035): `operation request attempt status`, the
 * operation by its code, a request under its business's path `/businesses/<id>` written `~`
 * and the rest, `attempt status` left out when `1 200`.
 */
function readLine(read: RawReadToInsert): string {
  if (
    !FIELD.test(read.operation) ||
    read.operation.length < 2 ||
    !FIELD.test(read.request) ||
    read.request.startsWith('~')
  ) {
    throw new Error(
      `A raw read's operation and request are kept without spaces, the request as a path (got ${read.operation} ${read.request}).`,
    );
  }
  const path = read.business_id === null ? undefined : `/businesses/${read.business_id}`;
  const request =
    path !== undefined && read.request.startsWith(path)
      ? `~${read.request.slice(path.length)}`
      : read.request;
  const operation = OPERATION_CODES.get(read.operation) ?? read.operation;
  return read.attempt === 1 && read.status === 200
    ? `${operation} ${request}`
    : `${operation} ${request} ${read.attempt} ${read.status}`;
}

/**
 * The operations a line names by one character, as migration 0035's view decodes them
 * (its `OPERATION_CODES`; a name not here is written whole, and no name is one character).
 */
const OPERATION_CODES: ReadonlyMap<string, string> = new Map([
  ['list_businesses', '0'],
  ['get_business', '1'],
  ['get_business_full', '2'],
  ['list_listings', '3'],
  ['list_reviews', '4'],
  ['get_response_status', '5'],
  ['get_rankings', '6'],
  ['list_keywords', '7'],
  ['list_states', '8'],
  ['list_countries', '9'],
  ['list_sub_categories', 'a'],
]);

function sameSet(a: RawReadToInsert, b: RawReadToInsert): boolean {
  return (
    a.run_id === b.run_id &&
    a.account_name === b.account_name &&
    a.business_id === b.business_id &&
    a.observed_at.getTime() === b.observed_at.getTime() &&
    (a.uncommitted === true) === (b.uncommitted === true)
  );
}

/**
 * The insert of read sets whose seven arrays (INSERT_SETS' parameters) are `$first` on, in
 * read order, so their `set_id`s, and the view's `read_id`s, follow the reads'. `where`
 * filters the rows (READS_IF_BODIES_KNOWN's "every body kept").
 */
const insertSets = (first: number, where = '') => {
  const [run, account, business, observed, uncommitted, reads, hashes] = Array.from(
    { length: 7 },
    (_, i) => `$${first + i}`,
  );
  return `
  insert into raw_read_sets (run_id, account_name, business_id, observed_at, uncommitted,
    reads, body_hashes)
  select run_id, account_name, business_id, observed_at, uncommitted, reads,
         decode(hashes, 'hex')
    from unnest((select ${run}::uuid[]), (select ${account}::text[]),
                (select ${business}::bigint[]), (select ${observed}::timestamptz[]),
                (select ${uncommitted}::boolean[]), (select ${reads}::text[]),
                (select ${hashes}::text[]))
           with ordinality as s(run_id, account_name, business_id, observed_at, uncommitted,
                                reads, hashes, n)
   ${where}
   order by n`;
};

const INSERT_SETS = insertSets(1);

// Every parameter of the statements below is read through a scalar subquery, which the
// planner cannot see into, so a custom plan costs what the generic plan does and PostgreSQL
// keeps the generic one after five runs on a connection. With the values in view the probe
// alone was planned afresh at every business (the arrays' lengths made each custom plan
// look cheaper): on an unchanged night of 500, 106 ms of planning for 50 ms of running,
// then 8 and 36 (pg_stat_statements). Beside the insert it stays generic either way; the
// subqueries keep it so whatever the insert's costs.

// The bodies of `$1` kept already, by primary-key probes: their 1-based positions.
const KNOWN = `array(select n.i
                 from unnest((select $1::text[])) with ordinality as n(hash, i)
                 join raw_bodies k on k.body_hash = decode(n.hash, 'hex'))`;

// Whether any read set of the batch's businesses (`$2`), or of its account's (`$3`) reads
// tied to no business (when `$5`), was observed since `$4`: each by
// raw_read_sets_business_idx (business_id, observed_at).
const EARLIER = `exists(select 1 from raw_read_sets s
                 where s.business_id = any((select $2::bigint[])::bigint[])
                   and s.observed_at >= (select $4::timestamptz)
                   and s.account_name = any((select $3::text[])::text[]))
         or ((select $5::boolean) and exists(select 1 from raw_read_sets s
                 where s.business_id is null and s.observed_at >= (select $4::timestamptz)
                   and s.account_name = any((select $3::text[])::text[])))`;

// KNOWN, and the reads (`$6` on) appended when every body is kept already; nothing written
// otherwise, and then EARLIER.
const READS_IF_BODIES_KNOWN = `
  with probe as (select ${KNOWN} as known),
  written as (${insertSets(6, 'where (select cardinality(known) from probe) = cardinality((select $1::text[]))')}
    returning 1)
  select known, exists(select 1 from written) as written,
         not exists(select 1 from written) and (${EARLIER}) as earlier
    from probe`;

// For new bodies: each one's lateral probes raw_read_sets_business_idx (business_id,
// observed_at) for the window since `$6` (a few nights of one business's reads; for the
// account's own reads, its reads tied to no business), preferring the same request, then
// the latest.
const BODY_BASES = `
  select n.i, encode(base.body_hash, 'hex') as base_hash, base.encoding, base.bytes
    from unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])
           with ordinality as n(hash, business_id, account_name, operation, request, i)
    left join lateral (
      select r.body_hash
        from raw_reads r
       where r.observed_at >= $6::timestamptz
         and r.operation = n.operation and r.account_name = n.account_name
         and (case when n.business_id is null then r.business_id is null
                   else r.business_id = n.business_id end)
       order by r.request = n.request desc, r.observed_at desc, r.read_id desc
       limit 1) prev on true
    left join raw_bodies p on p.body_hash = decode(prev.body_hash, 'hex')
    left join raw_bodies base on base.body_hash = coalesce(p.base_hash, p.body_hash)`;

/**
 * One upstream read of a sync: what was asked, when, the status, and its body's hash. A
 * view since migration 0035 (one row per read of `raw_read_sets`): read it, write sets.
 */
export interface RawReadsTable {
  read_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  operation: string;
  request: string;
  attempt: number;
  status: number;
  observed_at: Date;
  body_hash: string;
  /** Migration 0015: a read of a business whose transaction never committed: not replayed. */
  uncommitted: ColumnType<boolean, boolean | undefined, boolean>;
}

/**
 * The reads of one business and night (or of the credential, at one time), as stored
 * (migration 0035; docs/warehouse.md, "Raw zone"). Written by src/raw/reads.ts alone;
 * everything else reads the `raw_reads` view.
 */
export interface RawReadSetsTable {
  set_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  observed_at: Date;
  uncommitted: ColumnType<boolean, boolean | undefined, boolean>;
  aged_out: ColumnType<boolean, boolean | undefined, boolean>;
  /**
   * A line per read, in read order: `operation request attempt status`, a request under
   * `/businesses/<business_id>` written `~` and the rest.
   */
  reads: string;
  /** The reads' sha256, 32 bytes each, concatenated in read order. */
  body_hashes: Uint8Array;
}

declare module '../warehouse/database.ts' {
  interface Database {
    raw_reads: RawReadsTable;
    raw_read_sets: RawReadSetsTable;
  }
}
