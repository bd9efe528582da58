/**
 * `quarantine`: records that failed their schema, with the reason, so that the rest of a
 * business still loads. Payloads arrive redacted by the API client; `redactSecrets` runs
 * again here as the net, so no directory password or token can land in the table.
 */
import type { Kysely, Transaction } from 'kysely';
import { redactSecrets, redactText } from '../log.ts';
import { insertRows } from './bulk-write.ts';
import type { Database } from './database.ts';

type Db = Kysely<Database> | Transaction<Database>;

export interface QuarantineInput {
  accountName: string;
  businessId: number | null;
  stream: string;
  location: string;
  reason: string;
  payload: unknown;
}

/** Appends one row per rejected record; returns how many were stored. */
export async function quarantineRecords(
  db: Db,
  runId: string,
  rows: readonly QuarantineInput[],
): Promise<number> {
  const now = new Date();
  return insertRows(
    db,
    'quarantine',
    {
      run_id: 'uuid',
      account_name: 'text',
      business_id: 'bigint',
      stream: 'text',
      location: 'text',
      reason: 'text',
      payload: 'jsonb',
      quarantined_at: 'timestamptz',
    },
    rows.map((row) => ({
      run_id: runId,
      account_name: row.accountName,
      business_id: row.businessId,
      stream: row.stream,
      location: row.location,
      reason: redactText(row.reason),
      payload: redactSecrets(row.payload ?? null),
      quarantined_at: now,
    })),
  );
}
