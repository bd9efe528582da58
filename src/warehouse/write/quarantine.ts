/**
 * `quarantine`: records that failed their schema, with the reason, so that the rest of a
 * business still loads. Payloads arrive redacted by the API client; `redactSecrets` runs
 * again here as the net, so no directory password or token can land in the table.
 *
 * A record is often here *because* it holds what the database cannot store (a NUL, a
 * lone surrogate), so every string of the row, payload keys included, has those replaced
 * by U+FFFD: the quarantine write itself must never fail its business.
 */
import type { ColumnType, Generated } from 'kysely';
import { redactSecrets, redactText } from '../../log.ts';
import type { Db, Json, TimestampWithDefault } from '../database.ts';
import { insertRows } from './bulk-write.ts';

export interface QuarantineInput {
  accountName: string;
  businessId: number | null;
  stream: string;
  location: string;
  reason: string;
  payload: unknown;
}

/**
 * A record a writer refused inside a business's transaction (a review whose id another
 * business holds, reviews.ts): quarantined under that business, and its stream written
 * short (warehouse/write/applied-answers.ts).
 */
export type QuarantinedRecord = Pick<QuarantineInput, 'stream' | 'location' | 'reason' | 'payload'>;

/** `text` with NUL and lone surrogates replaced by U+FFFD, so text and jsonb accept it. */
export function storableText(text: string): string {
  const wellFormed = text.isWellFormed() ? text : text.toWellFormed();
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\uFFFD') : wellFormed;
}

/** A deep copy of a JSON-like value whose strings and keys all pass `storableText`. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[storableText(key)] = storableJson(inner);
  return out;
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
      location: storableText(row.location),
      reason: storableText(redactText(row.reason)),
      payload: storableJson(redactSecrets(row.payload ?? null)),
      quarantined_at: now,
    })),
  );
}

export interface QuarantineTable {
  quarantine_id: Generated<number>;
  run_id: string;
  account_name: string;
  business_id: number | null;
  stream: string;
  location: string | null;
  reason: string;
  payload: Json | null;
  quarantined_at: TimestampWithDefault;
  /** Set when a replay loaded the record after all (migration 0011). */
  recovered_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

declare module '../database.ts' {
  interface Database {
    quarantine: QuarantineTable;
  }
}
