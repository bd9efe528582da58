/**
 * The raw zone's retention statements, on `raw_reads` and `raw_bodies` (docs/replay.md,
 * "Retention: `RAW_RETENTION_DAYS`"; docs/warehouse.md, "Raw zone: raw_bodies,
 * raw_reads"). Which reads a run past retention keeps is src/raw/retention.ts's to say (its
 * header states the rules); these statements carry them out.
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';

/**
 * Deletes the reads past retention on each account's own clock and marks `aged_out` those
 * of such runs that are kept; returns how many of each.
 */
export async function pruneRawReads(
  db: Db,
  days: number,
): Promise<{ deleted: number; agedOut: number }> {
  // A night's pruning reads about the night that ages out, not every read kept: each step
  // is served by an index of migration 0011 (EXPLAIN ANALYZE, 860,000 reads, one night of
  // 27,000 aging out: 1.2 s; docs/replay.md).
  // - clock: raw_reads_business_idx, `business_id is null` (a few reads per run);
  // - old: raw_reads_observed_at_idx, up to the latest account's cutoff;
  // - span: raw_reads_run_idx, each run with old reads read once;
  // - judged: raw_reads_business_idx, (business_id, observed_at ≥ the read's); LATERAL …
  //   LIMIT 1 keeps it one probe per read, where the planner would hash every read kept;
  // - verdict's later account read: raw_reads_business_idx, `business_id is null`;
  // - marked and deleted: the primary key. Each read gets one verdict, so neither joins
  //   the other's rows (an anti-join of two CTEs was planned as a nested loop: minutes).
  // The reads are the `raw_reads` view's; the verdicts are carried out on their sets
  // (migration 0035: `read_id >> 16` is the set). A set's reads share their run, account,
  // business and time, so they share their verdict; a set with a read kept is kept whole.
  // The indexes named above are the sets' since migration 0035, on the same columns.
  const pruned = await sql<{ marked: number; deleted: number }>`
    with clock as (
      select account_name, max(observed_at) - make_interval(days => ${days}::int) as cutoff
        from raw_reads
       where business_id is null
       group by account_name
    ), old as (
      select r.read_id, r.run_id, r.account_name, r.business_id, r.observed_at, r.aged_out,
             c.cutoff
        from raw_reads r
        join clock c on c.account_name = r.account_name and r.observed_at < c.cutoff
       where r.observed_at < (select max(cutoff) from clock)
    ), span as (
      select y.run_id, y.account_name, max(y.observed_at) as newest
        from raw_reads y
       where y.run_id = any (array(select distinct run_id from old))
       group by y.run_id, y.account_name
    ), candidate as (
      select old.*
        from old
        join span s on s.run_id = old.run_id and s.account_name = old.account_name
       where s.newest < old.cutoff
    ), judged as (
      select c.*, later.found is not null as replaced
        from candidate c
        left join lateral (
          select true as found
            from raw_reads n
           where c.business_id is not null
             and n.business_id = c.business_id and n.account_name = c.account_name
             and n.observed_at >= c.observed_at
             and (n.observed_at > c.observed_at or n.read_id > c.read_id)
             and n.run_id <> c.run_id and not n.uncommitted
           limit 1) later on true
    ), keeping as (
      select distinct run_id, account_name
        from judged
       where business_id is not null and not replaced
    ), verdict as (
      select j.read_id, j.aged_out,
             case
               when j.business_id is not null then j.replaced
               else not exists (
                      select 1 from keeping k
                       where k.run_id = j.run_id and k.account_name = j.account_name)
                    and exists (
                      select 1 from raw_reads n
                       where n.business_id is null and n.account_name = j.account_name
                         and n.observed_at >= j.observed_at
                         and (n.observed_at > j.observed_at or n.read_id > j.read_id)
                         and n.run_id <> j.run_id)
             end as doomed
        from judged j
    ), per_set as (
      select v.read_id >> 16 as set_id, bool_and(v.doomed) as doomed,
             bool_and(v.aged_out) as aged_out
        from verdict v
       group by 1
    ), marked as (
      update raw_read_sets s set aged_out = true
        from per_set v
       where s.set_id = v.set_id and not v.doomed and not v.aged_out
      returning octet_length(s.body_hashes) / 32 as reads
    ), deleted as (
      delete from raw_read_sets s using per_set v where s.set_id = v.set_id and v.doomed
      returning octet_length(s.body_hashes) / 32 as reads
    )
    select (select coalesce(sum(reads), 0) from marked)::int as marked,
           (select coalesce(sum(reads), 0) from deleted)::int as deleted`.execute(db);
  const counts = pruned.rows[0];
  return { deleted: counts?.deleted ?? 0, agedOut: counts?.marked ?? 0 };
}

/**
 * The hashes of the bodies no read refers to: the reads' hashes cut out of their sets
 * (migration 0035), taken from the bodies' keys in one sorted EXCEPT (why, below).
 * `raw stats` counts the same bodies (src/raw/inspect.ts).
 */
export const UNREAD_BODY_HASHES = sql`
  select body_hash from raw_bodies
  except
  select substring(s.body_hashes from (i - 1) * 32 + 1 for 32)
    from raw_read_sets s
    cross join lateral generate_series(1, octet_length(s.body_hashes) / 32) as i`;

/**
 * Deletes the bodies no read refers to any more and no delta names as its base; returns how
 * many. A base whose last delta goes in the first pass goes in the second (a base is never
 * a delta itself, migration 0032, so two passes leave nothing unread behind).
 */
export async function deleteUnreadBodies(db: Db): Promise<number> {
  let deleted = 0;
  for (let pass = 0; pass < 2; pass++) {
    // The bodies no read names (no index on the reads' hashes: migration 0011 says why; nor
    // a foreign key to check per body deleted since migration 0017) and no delta names as
    // its base. The hashes are cut out of the sets (migration 0035) and taken from the
    // bodies' keys in one sorted EXCEPT: the planner cannot estimate how many hashes a set
    // holds, and an anti-join against them, spilled to 2,048 hash batches, took 3.9 s where
    // this takes 0.8 s (864,000 reads, 155,000 bodies, PostgreSQL 15); through the
    // `raw_reads` view, each hash converted to hex and back, 21.5 s.
    const bodies = await sql`
      delete from raw_bodies b
       where b.body_hash in (${UNREAD_BODY_HASHES})
         and not exists (select 1 from raw_bodies delta where delta.base_hash = b.body_hash)`.execute(
      db,
    );
    const count = Number(bodies.numAffectedRows ?? 0);
    deleted += count;
    if (count === 0) break;
  }
  return deleted;
}
