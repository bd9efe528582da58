/**
 * The raw zone's reads at their floor (docs/warehouse.md, "Raw zone"; issue 42): one row
 * per business and night instead of one per read.
 *
 * - `raw_read_sets`: one row per run of reads that share their run, account, business,
 *   observation time and flags (a business's reads of one night, written in its
 *   transaction, are one set; the credential's own reads mostly one each). Its `reads` is
 *   one line per read, in read order: `operation request attempt status`, separated by
 *   spaces (none of them holds a space: a request is a path and its URL-encoded query),
 *   the operation by a one-character code (`OPERATION_CODES`; another name whole), a
 *   request that starts with `/businesses/<the set's business_id>` written `~` and the
 *   rest, and `attempt status` left out when they are `1 200`; `body_hashes` is the reads' sha256, 32 bytes each, concatenated in the same
 *   order. A read row cost about 220 bytes and 101 of index entries; in a set, the row
 *   header, the shared columns and the four indexes' entries are paid once per business
 *   and night, and a read costs its line (about 20 bytes) and its hash.
 * - `raw_reads` becomes a view with the old columns, one row per read, so `raw show`,
 *   `replay`, retention and any reader see what they saw: `body_hash` as lowercase hex
 *   text (as `raw_bodies.body_hash` and `business_answers.body_hash` hold it), the request
 *   whole, `attempt` and `status` as `integer`, and `read_id` as `set_id × 65536 + the read's place in its
 *   set`, which orders the reads as they were read (the writer, src/raw/reads.ts, keeps a
 *   set under 65,536 reads).
 *
 * - `raw_bodies.body_hash` and `base_hash` become the sha256's 32 bytes (`bytea`), not its
 *   64 hex characters: each body row and its primary key's entry are 32 bytes smaller (a
 *   delta's row 64). Readers convert in their statements (`encode(…, 'hex')`, `decode`),
 *   so the program, `business_answers.body_hash` and the view keep the hex text.
 *
 * The bodies move first, `BODY_BATCH` a statement from the old table (renamed
 * `raw_bodies_moving`) into the new one; then the reads, `BATCH` reads a statement, each
 * one statement that deletes them from the old table (renamed `raw_reads_moving`) and
 * inserts their sets, so no statement holds more than a batch. `listings-sync migrate`
 * runs the pending migrations in one transaction (src/warehouse/driver/migrate.ts): the
 * old rows are kept until it commits, and an interrupted upgrade rolls back whole and
 * starts again. `up(db, batches)` also carries on from a partial move (as a run stopped
 * between batches outside that transaction leaves it). `down()` moves them back the same
 * way, `SET_BATCH` sets at a time, into the old table with its indexes, numbering the
 * reads 1, 2, … in the view's order after the last one moved back (a raw zone never pruned
 * gets its old `read_id`s back; a pruned one, the same order without the gaps), then the
 * bodies, hashes as hex. Grants and comments an operator set on `raw_reads` and
 * `raw_bodies` are kept both ways by the migrator (src/warehouse/driver/migrate.ts); views
 * of an operator's own over them are refused before anything moves, with the way round.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

/** Read rows per batch of `up()`: one statement each. */
const BATCH = 5000;

/** Bodies per batch, either way (a body is about 1 KB compressed). */
const BODY_BATCH = 2000;

/** Sets per batch of `down()` (a business's night is about 6 reads: as many rows as up's). */
const SET_BATCH = 1000;

/** The read row's place in its set: the low 16 bits of the view's `read_id`. */
const SET_SHIFT = 16;

/** Moves at most `batches` batches of old read rows into sets (all when not given); resumable. */
export async function up(db: Kysely<unknown>, batches = Number.POSITIVE_INFINITY): Promise<void> {
  await refuseViewsOverMoving(db, 'r', 'text');
  if (!(await moveBodies(db, 'bytea', batches))) return;
  await sql`
    create table if not exists raw_read_sets (
      set_id bigint generated always as identity primary key,
      run_id uuid not null,
      account_name text not null,
      business_id bigint,
      observed_at timestamptz not null,
      uncommitted boolean not null default false,
      aged_out boolean not null default false,
      reads text not null,
      body_hashes bytea not null,
      constraint raw_read_sets_reads_check check (
        octet_length(body_hashes) between 32 and 32 * 65535
        and octet_length(body_hashes)
            = 32 * (1 + length(reads) - length(replace(reads, E'\n', '')))))`.execute(db);
  // The old table's three indexes, on the sets: `raw show` and replay read a business's
  // night (business_id, observed_at), replay and retention a run (run_id), retention the
  // nights that age out (observed_at).
  await sql`create index if not exists raw_read_sets_business_idx
              on raw_read_sets (business_id, observed_at)`.execute(db);
  await sql`create index if not exists raw_read_sets_run_idx on raw_read_sets (run_id)`.execute(db);
  await sql`create index if not exists raw_read_sets_observed_at_idx
              on raw_read_sets (observed_at)`.execute(db);

  if ((await relationKind(db, 'raw_reads')) === 'r') {
    // A line's fields are separated by spaces: no kept operation or request holds one (a
    // request is a path and its URL-encoded query), which this checks rather than assumes.
    const { rows } = await sql<{ request: string }>`
      select request from raw_reads
       where request ~ '[[:space:]]' or operation ~ '[[:space:]]' or request like '~%'
       limit 1`.execute(db);
    if (rows[0]) {
      throw new Error(
        `raw_reads holds a read whose request or operation has a space, or whose request starts with \`~\` (${rows[0].request}): the move into raw_read_sets cannot keep it.`,
      );
    }
    await sql`alter table raw_reads rename to raw_reads_moving`.execute(db);
  }
  if ((await relationKind(db, 'raw_reads_moving')) === 'r') {
    for (let done = 0; done < batches; done++) {
      const moved = await sql`
        with batch as (
          delete from raw_reads_moving
           where read_id in (select read_id from raw_reads_moving order by read_id limit ${BATCH})
          returning *
        ), islands as (
          select b.*,
                 row_number() over (order by read_id)
                 - row_number() over (partition by run_id, account_name, business_id,
                                        observed_at, uncommitted, aged_out
                                      order by read_id) as island
            from batch b
        )
        insert into raw_read_sets (run_id, account_name, business_id, observed_at, uncommitted,
          aged_out, reads, body_hashes)
        select run_id, account_name, business_id, observed_at, uncommitted, aged_out,
               string_agg(${OPERATION_KEPT} || ' ' || ${REQUEST_KEPT}
                            || case when attempt = 1 and status = 200 then ''
                                    else ' ' || attempt || ' ' || status end,
                          E'\n' order by read_id),
               string_agg(decode(body_hash, 'hex'), ''::bytea order by read_id)
          from islands
         group by run_id, account_name, business_id, observed_at, uncommitted, aged_out, island
         order by min(read_id)`.execute(db);
      if (Number(moved.numAffectedRows ?? 0) === 0) break;
    }
    if (!(await isEmpty(db, 'raw_reads_moving'))) return;
  }
  await sql`create or replace view raw_reads as
    select (s.set_id << ${sql.lit(SET_SHIFT)}) + r.i as read_id, s.run_id, s.account_name,
           s.business_id, ${READ_FIELDS}, s.observed_at, ${BODY_HASH} as body_hash,
           s.uncommitted, s.aged_out
      from raw_read_sets s
      cross join lateral string_to_table(s.reads, E'\n') with ordinality as r(line, i)`.execute(db);
  if ((await relationKind(db, 'raw_reads_moving')) === 'r') {
    await sql`drop table raw_reads_moving`.execute(db);
  }
}

/** Refuses views over `raw_reads` when it is of `readsKind`, over `raw_bodies` when its hashes are `hashes`: the relations about to move. */
async function refuseViewsOverMoving(
  db: Kysely<unknown>,
  readsKind: 'r' | 'v',
  hashes: 'text' | 'bytea',
): Promise<void> {
  if ((await relationKind(db, 'raw_reads')) === readsKind) await refuseViewsOver(db, 'raw_reads');
  if ((await columnType(db, 'raw_bodies', 'body_hash')) === hashes) {
    await refuseViewsOver(db, 'raw_bodies');
  }
}

/**
 * Refuses, before anything moves, a relation with views of an operator's own over it: the
 * move replaces the relation, which a view over it would hold in place. Its columns stay,
 * so the views can be made again after the migration.
 */
async function refuseViewsOver(db: Kysely<unknown>, relation: string): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select distinct v.relname as name
      from pg_depend d
      join pg_rewrite r on r.oid = d.objid
      join pg_class v on v.oid = r.ev_class
     where d.refobjid = ${relation}::regclass and v.oid <> ${relation}::regclass
     order by 1`.execute(db);
  if (rows.length === 0) return;
  const names = rows.map((row) => row.name).join(', ');
  throw new Error(
    `${relation} has views of your own over it (${names}): migration 0035 replaces ${relation} ` +
      '(the raw zone packed, docs/warehouse.md, "Raw zone") and cannot carry them. Keep their ' +
      "definitions (`select pg_get_viewdef('<view>'::regclass)`), drop them, run " +
      `\`listings-sync migrate\` again, then create them again: ${relation} keeps its columns.`,
  );
}

/**
 * The reads' operations a line names by one character (the read operations of
 * src/operations.ts when this migration was written; src/raw/reads.ts writes the same
 * codes). Any other name is written whole: no operation's name is one character.
 */
const OPERATION_CODES = [
  ['0', 'list_businesses'],
  ['1', 'get_business'],
  ['2', 'get_business_full'],
  ['3', 'list_listings'],
  ['4', 'list_reviews'],
  ['5', 'get_response_status'],
  ['6', 'get_rankings'],
  ['7', 'list_keywords'],
  ['8', 'list_states'],
  ['9', 'list_countries'],
  ['a', 'list_sub_categories'],
] as const;

/** A read's operation as a set keeps it: its code, or its name. */
const OPERATION_KEPT = sql`case operation ${sql.join(
  OPERATION_CODES.map(([code, name]) => sql`when ${sql.lit(name)} then ${sql.lit(code)}`),
  sql` `,
)} else operation end`;

/** A read's request as a set keeps it: its business's path `/businesses/<id>` as `~`. */
const REQUEST_KEPT = sql`case when business_id is not null
    and starts_with(request, '/businesses/' || business_id) then
      '~' || substr(request, length('/businesses/' || business_id) + 1)
    else request end`;

/** The read's columns from its line `r.line` of set `s`, as the old table typed them. */
const READ_FIELDS = sql`case split_part(r.line, ' ', 1) ${sql.join(
  OPERATION_CODES.map(([code, name]) => sql`when ${sql.lit(code)} then ${sql.lit(name)}`),
  sql` `,
)} else split_part(r.line, ' ', 1) end as operation,
    case when starts_with(split_part(r.line, ' ', 2), '~')
      then '/businesses/' || s.business_id || substr(split_part(r.line, ' ', 2), 2)
      else split_part(r.line, ' ', 2) end as request,
    coalesce(nullif(split_part(r.line, ' ', 3), ''), '1')::integer as attempt,
    coalesce(nullif(split_part(r.line, ' ', 4), ''), '200')::integer as status`;

/** The hash of read `r.i` of set `s`, as hex text. */
const BODY_HASH = sql`encode(substring(s.body_hashes from (r.i::integer - 1) * 32 + 1 for 32), 'hex')`;

/** Moves at most `batches` batches of sets back into read rows (all when not given); resumable. */
export async function down(db: Kysely<unknown>, batches = Number.POSITIVE_INFINITY): Promise<void> {
  await refuseViewsOverMoving(db, 'v', 'bytea');
  if ((await relationKind(db, 'raw_reads')) === 'v') {
    await sql`drop view raw_reads`.execute(db);
  }
  if ((await relationKind(db, 'raw_reads')) === undefined) {
    // As migrations 0011, 0015, 0017 and 0032 left it.
    await sql`
      create table raw_reads (
        read_id bigint generated always as identity primary key,
        run_id uuid not null,
        account_name text not null,
        business_id bigint,
        operation text not null,
        request text not null,
        attempt integer not null,
        status integer not null,
        observed_at timestamptz not null,
        body_hash text not null,
        uncommitted boolean not null default false,
        aged_out boolean not null default false)`.execute(db);
    await sql`create index raw_reads_observed_at_idx on raw_reads (observed_at)`.execute(db);
    await sql`create index raw_reads_business_idx on raw_reads (business_id, observed_at)`.execute(
      db,
    );
    await sql`create index raw_reads_run_idx on raw_reads (run_id)`.execute(db);
  }
  if ((await relationKind(db, 'raw_read_sets')) === 'r' && !(await moveSetsBack(db, batches))) {
    return;
  }
  await moveBodies(db, 'text', batches);
}

/** Moves at most `batches` batches of sets back into read rows; true when all are moved. */
async function moveSetsBack(db: Kysely<unknown>, batches: number): Promise<boolean> {
  for (let done = 0; done < batches; done++) {
    const moved = await sql`
      with batch as (
        delete from raw_read_sets
         where set_id in (select set_id from raw_read_sets order by set_id limit ${SET_BATCH})
        returning *
      )
      insert into raw_reads
        (read_id, run_id, account_name, business_id, operation, request, attempt, status,
         observed_at, body_hash, uncommitted, aged_out)
      overriding system value
      select (select coalesce(max(read_id), 0) from raw_reads)
               + row_number() over (order by s.set_id, r.i),
             s.run_id, s.account_name, s.business_id, ${READ_FIELDS}, s.observed_at,
             ${BODY_HASH}, s.uncommitted, s.aged_out
        from batch s
        cross join lateral string_to_table(s.reads, E'\n') with ordinality as r(line, i)
       order by 1`.execute(db);
    if (Number(moved.numAffectedRows ?? 0) === 0) break;
  }
  if (!(await isEmpty(db, 'raw_read_sets'))) return false;
  await sql`drop table raw_read_sets`.execute(db);
  // The next read the sync writes comes after every moved one.
  await sql`select setval(pg_get_serial_sequence('raw_reads', 'read_id'),
                          coalesce((select max(read_id) from raw_reads), 0) + 1, false)`.execute(
    db,
  );
  return true;
}

/**
 * Moves `raw_bodies` into a table of the same columns whose two hashes are `to` (`bytea`:
 * 32 bytes; `text`: lowercase hex, as before 0035), `BODY_BATCH` bodies a statement, at
 * most `batches` statements; true when every body is moved. Run again, it carries on.
 */
async function moveBodies(
  db: Kysely<unknown>,
  to: 'bytea' | 'text',
  batches: number,
): Promise<boolean> {
  const from = to === 'bytea' ? 'text' : 'bytea';
  if ((await columnType(db, 'raw_bodies', 'body_hash')) === from) {
    await sql`alter table raw_bodies rename to raw_bodies_moving`.execute(db);
    await sql`alter table raw_bodies_moving
                rename constraint raw_bodies_pkey to raw_bodies_moving_pkey`.execute(db);
  }
  // As migrations 0011 and 0032 left it, but for the hashes' type.
  await sql`
    create table if not exists raw_bodies (
      body_hash ${sql.raw(to)} primary key,
      encoding text not null,
      size integer not null,
      bytes bytea not null,
      first_seen_at timestamptz not null default now(),
      base_hash ${sql.raw(to)})`.execute(db);
  if ((await relationKind(db, 'raw_bodies_moving')) !== 'r') return true;
  const hash = (column: string) =>
    to === 'bytea'
      ? sql`decode(${sql.ref(column)}, 'hex')`
      : sql`encode(${sql.ref(column)}, 'hex')`;
  for (let done = 0; done < batches; done++) {
    const moved = await sql`
      with batch as (
        delete from raw_bodies_moving
         where body_hash in (select body_hash from raw_bodies_moving order by body_hash
                              limit ${BODY_BATCH})
        returning *
      )
      insert into raw_bodies (body_hash, encoding, size, bytes, first_seen_at, base_hash)
      select ${hash('body_hash')}, encoding, size, bytes, first_seen_at, ${hash('base_hash')}
        from batch`.execute(db);
    if (Number(moved.numAffectedRows ?? 0) === 0) break;
  }
  if (!(await isEmpty(db, 'raw_bodies_moving'))) return false;
  await sql`drop table raw_bodies_moving`.execute(db);
  return true;
}

/** A column's type name in the current schema (`text`, `bytea`); undefined when none. */
async function columnType(
  db: Kysely<unknown>,
  table: string,
  column: string,
): Promise<string | undefined> {
  const { rows } = await sql<{ type: string }>`
    select data_type as type from information_schema.columns
     where table_schema = current_schema() and table_name = ${table}
       and column_name = ${column}`.execute(db);
  return rows[0]?.type;
}

/** The relation's kind in the current schema (`r` a table, `v` a view); undefined when none. */
async function relationKind(db: Kysely<unknown>, name: string): Promise<string | undefined> {
  const { rows } = await sql<{ kind: string }>`
    select c.relkind::text as kind from pg_class c
     where c.relname = ${name} and c.relnamespace = current_schema()::regnamespace`.execute(db);
  return rows[0]?.kind;
}

async function isEmpty(db: Kysely<unknown>, table: string): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    select exists (select 1 from ${sql.table(table)}) as found`.execute(db);
  return rows[0]?.found !== true;
}
