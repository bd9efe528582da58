/**
 * `keywords`: the business's tracked keywords. A keyword a successful read no longer
 * lists gets `deleted_at`; one that comes back has it cleared.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Keyword } from '../api/types.ts';
import { upsertRows } from './bulk-write.ts';
import { contentHash } from './content-hash.ts';
import type { Database } from './database.ts';
import type { BusinessWriteContext } from './write-context.ts';
import { addCounts, type WriteStats } from './write-stats.ts';

type Db = Kysely<Database> | Transaction<Database>;

export function keywordToRow(keyword: Keyword) {
  return {
    keyword_id: keyword.id,
    keyword: keyword.keyword,
    city: keyword.city,
    state: keyword.state,
    is_primary: keyword.primary,
    archived: keyword.archived,
  };
}

export async function writeKeywords(
  db: Db,
  ctx: BusinessWriteContext,
  keywords: readonly Keyword[],
): Promise<WriteStats> {
  const { businessId, observedAt } = ctx;
  const rows = keywords.map((keyword) => {
    const content = keywordToRow(keyword);
    return {
      ...content,
      business_id: businessId,
      content_hash: contentHash(content),
      first_seen_at: observedAt,
      last_seen_at: observedAt,
      deleted_at: null,
    };
  });
  const result = await upsertRows(
    db,
    {
      table: 'keywords',
      key: ['keyword_id'],
      columns: [
        'keyword_id',
        'business_id',
        'keyword',
        'city',
        'state',
        'is_primary',
        'archived',
        'content_hash',
        'first_seen_at',
        'last_seen_at',
        'deleted_at',
      ],
      insertOnly: ['first_seen_at'],
      compare: ['content_hash', 'business_id', 'deleted_at'],
    },
    rows,
  );
  const deleted = await sql`
    update keywords set deleted_at = ${observedAt}
    where business_id = ${businessId} and deleted_at is null
      and keyword_id <> all(${keywords.map((k) => k.id)}::bigint[])`.execute(db);
  return addCounts({}, 'keywords', {
    inserted: result.inserted,
    updated: result.updated,
    unchanged: result.unchanged,
    deleted: Number(deleted.numAffectedRows ?? 0),
  });
}
