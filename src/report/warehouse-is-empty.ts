/** Whether there is anything to report: `listings-sync report` refuses an empty warehouse. */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../warehouse/database.ts';

/** No business and no rank day: a sync never ran (or loaded nothing), so there is nothing to chart. */
export async function warehouseIsEmpty(db: Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ any: boolean }>`
    select exists (select 1 from businesses) or exists (select 1 from rank_observations) as any`.execute(
    db,
  );
  return !rows[0]?.any;
}
