/**
 * `listing_fixes`, the read model behind `v_listing_fixes` (docs/warehouse.md): one row per
 * Inaccurate episode of a listing, from the sync that read it `Inaccurate` (after a status
 * that was not, or at its first observation) to the sync that read it otherwise (its fix;
 * null while open), with the listing's previous fix. Written by the listings writer in the
 * business's transaction, only when a listing's status turns into or out of `Inaccurate`,
 * so a view over a window of days reads that window's episodes, never the status history.
 */
import { sql } from 'kysely';
import type { Db } from '../database.ts';

/** A listing that turned `Inaccurate` in this write: an episode opens. */
export interface EpisodeOpened {
  listingId: number;
  siteName: string;
  /** Its first observation (no stored row before): the episode starts when we first saw it. */
  firstSeen: boolean;
}

/**
 * Opens and closes the business's episodes for this write, in one statement: `closed`
 * listings (read as not `Inaccurate` after a stored `Inaccurate`) get their open episode's
 * fix; `opened` ones start an episode that names the listing's latest fix before it.
 * Returns, for each opened listing, that previous fix (null when it never had one).
 */
export async function writeListingFixes(
  db: Db,
  businessId: number,
  at: Date,
  opened: readonly EpisodeOpened[],
  closed: readonly number[],
): Promise<Map<number, Date | null>> {
  const previousFix = new Map<number, Date | null>();
  if (opened.length === 0 && closed.length === 0) return previousFix;
  // A listing is in one list or the other, never both (both parts read the statement's
  // snapshot, so the insert's lookup of earlier fixes never sees this write's). A part with
  // no listings is left out of the statement: a business's first write closes nothing, and an
  // empty update was still planned and scanned the business's open episodes, for no row.
  // The arrays are read through scalar subqueries, as in src/raw/reads.ts (the probe):
  // with their lengths in view, every business's write was planned afresh (a first sync of
  // 500: 105 ms of planning for 47 ms of running; now 20 ms).
  const close = sql`
      update listing_fixes f set fixed_at = ${at}::timestamptz,
        fixed_on = (${at}::timestamptz at time zone 'UTC')::date
      from unnest((select ${[...closed]}::bigint[])) as c(listing_id)
      where f.business_id = ${businessId} and f.listing_id = c.listing_id and f.fixed_at is null`;
  if (opened.length === 0) {
    await close.execute(db);
    return previousFix;
  }
  const open = sql`
      insert into listing_fixes (business_id, listing_id, site_name, turned_inaccurate_at,
        turned_inaccurate_on, first_seen, previous_fixed_at)
      select ${businessId}::bigint, o.listing_id, o.site_name, ${at}::timestamptz,
        (${at}::timestamptz at time zone 'UTC')::date, o.first_seen, p.fixed_at
      from unnest((select ${opened.map((o) => o.listingId)}::bigint[]),
        (select ${opened.map((o) => o.siteName)}::text[]),
        (select ${opened.map((o) => o.firstSeen)}::boolean[]))
        as o(listing_id, site_name, first_seen)
      left join lateral (
        select max(f.fixed_at) as fixed_at from listing_fixes f
        where f.business_id = ${businessId} and f.listing_id = o.listing_id
      ) p on true
      on conflict (business_id, listing_id, turned_inaccurate_at) do nothing
      returning listing_id, previous_fixed_at`;
  // The update runs whether or not the final select reads it.
  const { rows } = await (closed.length === 0
    ? sql<{ listing_id: number | string; previous_fixed_at: Date | null }>`${open}`
    : sql<{ listing_id: number | string; previous_fixed_at: Date | null }>`
    with closed as (${close}
      returning f.listing_id
    ),
    opened as (${open}
    )
    select listing_id, previous_fixed_at from opened`
  ).execute(db);
  for (const row of rows) {
    const fixedAt = row.previous_fixed_at;
    previousFix.set(
      Number(row.listing_id),
      fixedAt === null ? null : fixedAt instanceof Date ? fixedAt : new Date(fixedAt),
    );
  }
  return previousFix;
}
