/**
 * After a successful write, the affected business is synced again at once (every stream
 * but reference data, that business only), so the warehouse shows the write without
 * waiting for the nightly run. The write itself is already done upstream: a re-sync that
 * cannot run (another sync holds the lock, the database is gone) is reported as a
 * warning and makes the command's outcome partial (exit 3), never undoes the write.
 *
 * The re-sync holds no volume drop (docs/warehouse.md, "How removals work"): the rows it
 * finds gone are the ones the command just deleted upstream (`keywords apply` deleting most
 * of a business's keywords), not an answer to doubt.
 */
import { BUSINESS_STREAMS } from '../../streams/index.ts';
import { syncOptionsFromConfig } from '../../sync/options.ts';
import { runSync, SyncLockedError } from '../../sync/run.ts';
import { describeWarehouse } from '../../warehouse/driver/open.ts';
import { markBusinessMissing, recordBusinessCategory } from '../../warehouse/tables/businesses.ts';
import type { Session, WorkflowIo } from './command-context.ts';

/** Every stream read per business (src/streams/index.ts): reference data is not the business's. */
const RESYNC_STREAMS = BUSINESS_STREAMS;

/** Re-syncs `businessIds` of the session's credential; false when the warehouse could not follow. */
/** The session's alert rules with `volume_drop` off: removals apply at once. */
function rulesWithoutHold(session: Session) {
  const rules = session.config.alertRules;
  return { ...rules, volumeDrop: { ...rules.volumeDrop, enabled: false } };
}

export async function resyncBusinesses(
  io: WorkflowIo,
  session: Session,
  businessIds: readonly number[],
): Promise<boolean> {
  if (businessIds.length === 0) return true;
  const label = `business${businessIds.length === 1 ? '' : 'es'} ${businessIds.join(', ')}`;
  try {
    const warehouse = await session.warehouse();
    const result = await runSync({
      warehouse,
      api: session.api,
      credentials: [session.credential],
      logger: session.logger,
      streams: RESYNC_STREAMS,
      businessIds,
      trigger: 'api',
      ...syncOptionsFromConfig(session.config),
      alertRules: rulesWithoutHold(session),
      // Every answer written: the command may have written the business row itself.
      reapply: true,
      ...(io.now ? { now: io.now } : {}),
    });
    if (result.status === 'succeeded') {
      io.stderr(
        `warehouse: ${label} synced again into ${describeWarehouse(session.config)} (run ${result.runId}).\n`,
      );
      return true;
    }
    io.stderr(
      `listings-sync: warning: the write is done, but the re-sync of ${label} ended ${result.status}` +
        `${result.error ? ` (${result.error})` : ''}; the next sync will bring the warehouse up to date.\n`,
    );
    return false;
  } catch (error) {
    const reason =
      error instanceof SyncLockedError
        ? 'another sync holds the warehouse'
        : error instanceof Error
          ? error.message
          : String(error);
    io.stderr(
      `listings-sync: warning: the write is done, but ${label} could not be synced again (${reason}); the next sync will bring the warehouse up to date.\n`,
    );
    return false;
  }
}

/**
 * After a create or an update that set `sub_category_id`: the business's category in
 * `businesses.sub_category_name`, which no sync can bring (the reads never serve it).
 * Runs after the re-sync, which stores the row; false when the row is not there.
 */
export async function storeCategory(
  io: WorkflowIo,
  session: Session,
  businessId: number,
  category: { name: string | null } | { subCategoryId: number },
): Promise<boolean> {
  try {
    const warehouse = await session.warehouse();
    const stored = await recordBusinessCategory(warehouse.db, businessId, category);
    if (stored) return true;
    io.stderr(
      `listings-sync: warning: business ${businessId} is not in the warehouse yet, so its category was not stored; the upstream names it only in the answer to create.\n`,
    );
    return false;
  } catch (error) {
    io.stderr(
      `listings-sync: warning: the category of business ${businessId} could not be stored (${(error as Error).message}).\n`,
    );
    return false;
  }
}

/** After an archive: the business is marked archived in the warehouse (it no longer lists). */
export async function markArchived(
  io: WorkflowIo,
  session: Session,
  businessId: number,
): Promise<boolean> {
  try {
    const warehouse = await session.warehouse();
    const at = io.now ? io.now() : new Date();
    const marked = await markBusinessMissing(warehouse.db, session.credential.name, businessId, at);
    io.stderr(
      marked
        ? `warehouse: business ${businessId} marked archived.\n`
        : `warehouse: business ${businessId} was not stored as live for account ${session.credential.name}; nothing to mark.\n`,
    );
    return true;
  } catch (error) {
    io.stderr(
      `listings-sync: warning: the business is archived upstream, but the warehouse could not be updated (${(error as Error).message}); the next sync will archive it.\n`,
    );
    return false;
  }
}
