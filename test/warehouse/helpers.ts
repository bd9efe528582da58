/** Small helpers shared by the warehouse suites. */
import { sql } from 'kysely';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { upsertAccount } from '../../src/warehouse/runs/accounts.ts';
import {
  type BusinessSnapshot,
  type WriteContext,
  writeBusinessSnapshot,
} from '../../src/warehouse/write/snapshot.ts';
import { CONTRACT_TABLES } from '../helpers/contract-tables.ts';
import { scannableText } from '../helpers/secret-scan.ts';
import { ACCOUNT } from './fixtures.ts';

export async function addAccount(warehouse: Warehouse, name = ACCOUNT): Promise<void> {
  await upsertAccount(warehouse.db, {
    name,
    userEmail: `${name}@example.com`,
    baseUrl: 'https://upstream.example',
  });
}

/** One business written the way the sync writes it: in its own transaction. */
export function write(warehouse: Warehouse, snapshot: BusinessSnapshot, context: WriteContext) {
  return warehouse.db.transaction().execute((trx) => writeBusinessSnapshot(trx, snapshot, context));
}

/** Row count of every contract table. */
export async function countRows(warehouse: Warehouse): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of CONTRACT_TABLES) {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from ${sql.table(table)}`.execute(warehouse.db);
    counts[table] = rows[0]?.n ?? 0;
  }
  return counts;
}

/**
 * Every row of every contract table, as JSON text (for secret scans), followed by the same
 * with its JSON escapes decoded, so that a secret stored escaped is found too
 * (test/helpers/secret-scan.ts).
 */
export async function dumpAll(warehouse: Warehouse): Promise<string> {
  const parts: string[] = [];
  for (const table of CONTRACT_TABLES) {
    const { rows } = await sql`select * from ${sql.table(table)}`.execute(warehouse.db);
    parts.push(JSON.stringify({ table, rows }));
  }
  return scannableText(parts.join('\n'));
}
