/**
 * The numbers the demo prints (docs/running.md, "The demo"), counted from the tables of
 * live businesses (`accounts`, `businesses`, `listings`, `reviews`, `keywords`,
 * `rank_observations`, `alerts`: docs/warehouse.md, "Tables") and the latest alerts from
 * `v_newly_inaccurate` (docs/warehouse.md, "v_newly_inaccurate").
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/database.ts';

export interface DemoCounts {
  accounts: number;
  businesses: number;
  archivedBusinesses: number;
  reviews: number;
  socialItems: number;
  keywordsTracked: number;
  rankObservations: number;
  /** Alerts of the kind counted (`listing_inaccurate` for the demo). */
  alerts: number;
  /**
   * Of those, what the report's "turned Inaccurate" figure counts (src/warehouse/
   * report/queries/listings.ts): the listings of live businesses (each once), their turns, and the
   * alerts of archived businesses, which the report leaves out.
   */
  turnedListings: number;
  turns: number;
  archivedAlerts: number;
  firstDay: string | null;
  lastDay: string | null;
}

/** The counts, in one statement; `alertKind` is the kind of alert counted. */
export async function readDemoCounts(db: Db, alertKind: string): Promise<DemoCounts | undefined> {
  const { rows } = await sql<DemoCounts>`
      select
        (select count(*)::int from accounts) as accounts,
        (select count(*)::int from businesses where archived_at is null) as businesses,
        (select count(*)::int from businesses where archived_at is not null) as "archivedBusinesses",
        (select count(*)::int from reviews r join businesses b using (business_id)
           where r.removed_at is null and b.archived_at is null and r.category = 'review') as reviews,
        (select count(*)::int from reviews r join businesses b using (business_id)
           where r.removed_at is null and b.archived_at is null and r.category = 'social') as "socialItems",
        (select count(distinct (k.business_id, k.keyword))::int from keywords k
           join businesses b using (business_id)
           where k.deleted_at is null and b.archived_at is null) as "keywordsTracked",
        (select count(*)::int from rank_observations) as "rankObservations",
        (select count(*)::int from alerts where kind = ${alertKind}) as alerts,
        (select count(distinct (n.business_id, n.listing_id))::int from v_newly_inaccurate n
           join businesses b on b.business_id = n.business_id and b.archived_at is null) as "turnedListings",
        (select count(*)::int from v_newly_inaccurate n
           join businesses b on b.business_id = n.business_id and b.archived_at is null) as turns,
        (select count(*)::int from alerts a join businesses b on b.business_id = a.business_id
           where a.kind = ${alertKind} and b.archived_at is not null) as "archivedAlerts",
        (select to_char(min(observed_on), 'YYYY-MM-DD') from rank_observations) as "firstDay",
        (select to_char(max(observed_on), 'YYYY-MM-DD') from rank_observations) as "lastDay"`.execute(
    db,
  );
  return rows[0];
}

/** Live listings of live businesses per status, in status order. */
export async function readListingStatusCounts(db: Db): Promise<{ status: string; n: number }[]> {
  const { rows } = await sql<{ status: string; n: number }>`
      select l.status, count(*)::int as n from listings l join businesses b using (business_id)
      where l.removed_at is null and b.archived_at is null
      group by l.status order by l.status`.execute(db);
  return rows;
}

export interface AlertExample {
  detectedOn: string;
  businessName: string;
  businessId: number;
  siteName: string;
  previousStatus: string | null;
  wrongFields: string | null;
}

/** The two latest alerts of `v_newly_inaccurate` (a listing turned Inaccurate), latest first. */
export async function readLatestInaccurateExamples(db: Db): Promise<AlertExample[]> {
  const { rows } = await sql<AlertExample>`
      select to_char(detected_at at time zone 'UTC', 'YYYY-MM-DD') as "detectedOn",
        business_name as "businessName", business_id as "businessId", site_name as "siteName",
        previous_status as "previousStatus", wrong_fields as "wrongFields"
      from v_newly_inaccurate order by detected_at desc, alert_id desc limit 2`.execute(db);
  return rows;
}
