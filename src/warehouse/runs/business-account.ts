/**
 * Which account the warehouse stores a business under: what `listings-sync api` tells a
 * user whose `--account` the upstream answered "This business doesn't exist" for, when
 * the business is another account's (docs/troubleshooting.md).
 */
import type { Db } from '../database.ts';

export interface StoredBusinessAccount {
  accountName: string;
  /** When the sync last found it gone from that account's list; null while it is listed. */
  archivedAt: Date | null;
}

/** The account the business was last synced under, or undefined when it was never stored. */
export async function storedBusinessAccount(
  db: Db,
  businessId: number,
): Promise<StoredBusinessAccount | undefined> {
  const row = await db
    .selectFrom('businesses')
    .select(['account_name', 'archived_at'])
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    accountName: row.account_name,
    archivedAt: row.archived_at === null ? null : new Date(row.archived_at),
  };
}
