/**
 * Which business a stored keyword belongs to (`keywords`: docs/warehouse.md, "keywords — key
 * `keyword_id`"): what `listings-sync api keywords delete` resyncs after the upstream
 * deleted the keyword, since the upstream's answer does not say.
 */
import type { Db } from './database.ts';

/** The business of the keyword, deleted or not; undefined when the warehouse never stored it. */
export async function businessOfStoredKeyword(
  db: Db,
  keywordId: number,
): Promise<number | undefined> {
  const stored = await db
    .selectFrom('keywords')
    .select('business_id')
    .where('keyword_id', '=', keywordId)
    .executeTakeFirst();
  return stored?.business_id;
}
