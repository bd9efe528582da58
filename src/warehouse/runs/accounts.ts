/**
 * `accounts`: one row per configured credential. The token is never stored, nor a
 * password inside the base URL (`http://user:pw@host`): `base_url` is kept without its
 * userinfo.
 */
import type { ColumnType } from 'kysely';
import { withoutUserinfo } from '../../log.ts';
import type { Db, JsonValue, Timestamp, TimestampWithDefault } from '../database.ts';

export interface AccountInput {
  name: string;
  userEmail: string;
  baseUrl: string;
}

/** Creates or refreshes the account row; rewrites it only when the e-mail or URL changed. */
export async function upsertAccount(db: Db, account: AccountInput): Promise<void> {
  await db
    .insertInto('accounts')
    .values({
      name: account.name,
      user_email: account.userEmail,
      base_url: withoutUserinfo(account.baseUrl),
    })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet((eb) => ({
          user_email: eb.ref('excluded.user_email'),
          base_url: eb.ref('excluded.base_url'),
          updated_at: new Date(),
        }))
        .where((eb) =>
          eb.or([
            eb('accounts.user_email', 'is distinct from', eb.ref('excluded.user_email')),
            eb('accounts.base_url', 'is distinct from', eb.ref('excluded.base_url')),
          ]),
        ),
    )
    .execute();
}

/** Records the end of a completed sync of the account. */
export async function markAccountSynced(db: Db, name: string, at: Date): Promise<void> {
  await db.updateTable('accounts').set({ last_synced_at: at }).where('name', '=', name).execute();
}

/**
 * Every account the warehouse holds, by name: what the `sync_stale` rule checks besides
 * `sync_runs` (docs/alerts.md, "Each kind's exact trigger"), so an account the warehouse
 * knows is checked even when no credential names it any more.
 */
export async function knownAccountNames(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('accounts').select('name').execute();
  return rows.map((row) => row.name);
}

export interface AccountsTable {
  name: string;
  user_email: string;
  base_url: string;
  last_synced_at: Timestamp | null;
  created_at: TimestampWithDefault;
  updated_at: TimestampWithDefault;
  /**
   * Added (0016): the business lists held on a volume drop, by list key (`HeldRemovals`'s
   * entry shape, `businessListKey` in held-removals.ts); null when none is held.
   */
  removals_held: ColumnType<JsonValue | null, string | null | undefined, string | null>;
}

declare module '../database.ts' {
  interface Database {
    accounts: AccountsTable;
  }
}
