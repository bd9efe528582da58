/**
 * The volume guard on the business list (docs/warehouse.md, "How removals work"): a list
 * that would archive most of an account's live businesses, or answers nothing at all, is
 * held, and archives only when the next run reads the same drop. `accounts.removals_held`
 * records the hold under its list's key (`businesses`, or `businesses:I/N` for a shard,
 * whose runs are separate and must not confirm each other's hold), in the shape
 * `businesses.removals_held` uses for a stream; null when none is held. It lives on the
 * account row because the list is the account's read, as a stream's read is a business's.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('removals_held', 'jsonb').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('removals_held').execute();
}
