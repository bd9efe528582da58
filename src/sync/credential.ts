/**
 * One credential's part of a run: list its businesses, scope them (shard, chosen ids),
 * sync each under the per-credential and run-wide limits, poll its review response
 * requests, and archive what the list no longer shows (unless the list collapsed: then
 * it is held until the next run confirms it, `archiveUnlisted`). An authentication
 * failure stops this credential only.
 */
import pLimit from 'p-limit';
import { raiseVolumeDrop, removalLimitUnder } from '../alerts/kinds/volume-drop.ts';
import { DEFAULT_ALERT_RULES } from '../alerts/rules.ts';
import type { BusinessSummary, Credential, ListResult } from '../api/index.ts';
import { listBusinesses } from '../api/index.ts';
import { readableIdOf } from '../api/schemas.ts';
import { ApiError } from '../api/transport/errors.ts';
import type { Logger } from '../log.ts';
import { inSpan } from '../tracing.ts';
import { timeoutsOf } from '../warehouse/driver/connection.ts';
import { describeDatabaseError } from '../warehouse/driver/database-errors.ts';
import { isWarehouseGone, WarehouseGoneError } from '../warehouse/driver/outage.ts';
import { markAccountSynced, upsertAccount } from '../warehouse/runs/accounts.ts';
import {
  archiveMissingBusinesses,
  liveBusinessIds,
  storedBusinessSummaries,
} from '../warehouse/tables/businesses.ts';
import {
  type BusinessListHeld,
  businessListKey,
  clearBusinessListHold,
  heldBusinessList,
  holdsBusinessList,
  recordBusinessListHold,
} from '../warehouse/write/held-removals.ts';
import { isCredentialStop, syncBusiness } from './business.ts';
import { DEFAULT_BUSINESS_CONCURRENCY, type SyncOptions } from './options.ts';
import { pollResponseRequests } from './response-requests.ts';
import { keepAccountReads, quarantineRejected, type RunContext } from './run-context.ts';
import { formatShard, inShard } from './shard.ts';
import { type CredentialOutcome, errorText, recordFailure } from './stats.ts';
import { WriteOrder } from './write-order.ts';

function isAuthFailure(error: unknown): error is ApiError {
  return error instanceof ApiError && error.code === 'AUTH_FAILURE';
}

/**
 * A refused credential's error: the upstream's refusal, and what to check, the token and
 * e-mail, named by where they came from (the variables, or the file's entry). Never the token.
 */
export function authFailureText(
  options: Pick<SyncOptions, 'credentialOrigin'>,
  credential: Credential,
  error: ApiError,
): string {
  const origin = options.credentialOrigin?.(credential.name) ?? `credential "${credential.name}"`;
  return `${error.message}. Check the auth token and user e-mail of ${origin}.`;
}

export function syncCredential(
  context: RunContext,
  credential: Credential,
): Promise<CredentialOutcome> {
  return inSpan('sync.credential', { 'listings.credential': credential.name }, async (span) => {
    const outcome = await syncCredentialInSpan(context, credential);
    span.setAttribute('listings.credential_status', outcome.status);
    return outcome;
  });
}

async function syncCredentialInSpan(
  context: RunContext,
  credential: Credential,
): Promise<CredentialOutcome> {
  const { options, stats, log } = context;
  const db = options.warehouse.db;
  const accountLog = log.child({ credential: credential.name });
  await upsertAccount(db, {
    name: credential.name,
    userEmail: credential.userEmail,
    baseUrl: credential.baseUrl,
  });

  let listed: ListResult<BusinessSummary>;
  try {
    listed = await context.inFlight.track(listBusinesses(options.api, credential, context.call));
  } catch (error) {
    accountLog.error({ err: error }, 'credential failed: could not list its businesses');
    return {
      name: credential.name,
      status: 'failed',
      businesses: 0,
      error: isAuthFailure(error) ? authFailureText(options, credential, error) : errorText(error),
    };
  }
  // The list is kept as soon as it is read: a run killed later still replays what it committed.
  await keepAccountReads(context, credential);
  await context.writeReferenceOnce(credential);

  const { listedIds, mine, refusedInScope } = await scopeListed(
    context,
    credential,
    listed,
    accountLog,
  );
  const { stopped, failedBusinesses } = await syncListedBusinesses(
    context,
    credential,
    mine,
    accountLog,
  );

  if (stopped?.code === 'AUTH_FAILURE') {
    accountLog.error({ err: stopped }, 'credential failed: authentication failed mid-run');
    return {
      name: credential.name,
      status: 'failed',
      businesses: mine.length,
      error: authFailureText(options, credential, stopped),
    };
  }
  if (stopped) {
    // One line and one failure for the whole credential, however many businesses were in
    // flight or waiting: what committed stays, nothing else of it is read, polled or
    // archived this run (docs/configuration.md, "Limits").
    const error = `credential "${credential.name}" stopped: ${stopped.message}`;
    accountLog.error(
      { err: stopped, synced: context.progress.businessesDone },
      'credential stopped: the upstream asked it to pause longer than a run waits',
    );
    recordFailure(stats, {
      credential: credential.name,
      businessId: null,
      stream: 'credential',
      reason: stopped.message,
    });
    return { name: credential.name, status: 'partial', businesses: mine.length, error };
  }
  if (!context.isStopped() && context.streams.has('reviews')) {
    await pollResponseRequests(context, credential, options.businessIds);
  }
  const complete = !context.isStopped() && failedBusinesses === 0;
  if (!context.isStopped() && !options.businessIds) {
    // Only a complete list read may archive what it no longer shows, and a list that
    // collapses only once the next run confirms it.
    const held = await archiveUnlisted(context, credential, listedIds, {
      answeredNothing: listed.records.length === 0 && listed.rejected.length === 0,
    });
    if (held) {
      // The account is not synced by this run: most of its businesses were not read.
      return {
        name: credential.name,
        status: 'partial',
        businesses: mine.length,
        error:
          `its business list answered ${held.answered} of the ${held.stored} live businesses: ` +
          `a volume drop; none of the ${held.removing} no longer listed was archived, until the ` +
          'next run reads the same list (alert volume_drop; docs/warehouse.md, "How removals work")',
        listHeld: { stored: held.stored, answered: held.answered, removing: held.removing },
      };
    }
    if (complete) await markAccountSynced(db, credential.name, context.now(credential));
  }
  return {
    name: credential.name,
    status: complete && refusedInScope.length === 0 ? 'succeeded' : 'partial',
    businesses: mine.length,
  };
}

/**
 * The credential's businesses of this run from its list: each listed id (and a refused
 * entry's whose id reads), the summaries in scope (shard, chosen ids, filter) in ascending
 * id, and the refused entries that may be one of them, quarantined; counted and reported.
 */
async function scopeListed(
  context: RunContext,
  credential: Credential,
  listed: ListResult<BusinessSummary>,
  accountLog: Logger,
): Promise<{
  listedIds: number[];
  mine: BusinessSummary[];
  refusedInScope: typeof listed.rejected;
}> {
  const { options, stats } = context;
  const db = options.warehouse.db;
  // An entry refused for a value the warehouse cannot store (a NUL in a name) whose id
  // reads is still a listed business: it is synced under the summary last stored, and
  // not archived, so its listings and their alerts go on. One never stored waits.
  const readable = new Set(listed.records.map((business) => business.id));
  const unreadable = [
    ...new Set(
      listed.rejected
        .map((record) => readableIdOf(record.payload))
        .filter((id): id is number => id !== null && !readable.has(id)),
    ),
  ];
  const listedIds = [...readable, ...unreadable];
  context.listedBusinesses ??= new Map();
  context.listedBusinesses.set(credential.name, new Set(listedIds));
  const summaries = [
    ...listed.records,
    ...(await storedBusinessSummaries(db, credential.name, unreadable)),
  ];
  const only = options.businessIds ? new Set(options.businessIds) : undefined;
  const inScope = (id: number) =>
    inShard(options.shard, id) && (!only || only.has(id)) && (options.businessFilter?.(id) ?? true);
  // In ascending id: the one owner rule's order (`order` below).
  const mine = summaries.filter((business) => inScope(business.id)).sort((a, b) => a.id - b.id);
  // A refused entry is quarantined, and makes the run partial, only when it may be one of
  // this run's businesses: a re-sync of one business is not partial for another's entry.
  const refusedInScope = listed.rejected.filter((record) => {
    const id = readableIdOf(record.payload);
    return id === null ? !only : inScope(id);
  });
  await quarantineRejected(context, credential, 'businesses', refusedInScope);
  // Identical copies in the list are one business: synced once, counted here.
  stats.duplicates += listed.duplicates ?? 0;
  stats.businesses.listed += summaries.length;
  stats.businesses.inShard += mine.length;
  context.progress.businessesTotal += mine.length;
  context.report();
  accountLog.info({ listed: listed.records.length, inShard: mine.length }, 'businesses listed');

  return { listedIds, mine, refusedInScope };
}

/**
 * Syncs the credential's businesses under the per-credential and run-wide limits, in the
 * one owner rule's order. Returns the first error that ends the credential's remaining
 * work (`isCredentialStop`), if any, and how many businesses failed.
 */
async function syncListedBusinesses(
  context: RunContext,
  credential: Credential,
  mine: readonly BusinessSummary[],
  accountLog: Logger,
): Promise<{ stopped: ApiError | undefined; failedBusinesses: number }> {
  const { options, stats } = context;
  const db = options.warehouse.db;
  // The first error that ends this credential's remaining work (isCredentialStop).
  let stopped: ApiError | undefined;
  let failedBusinesses = 0;
  const limit = pLimit(options.businessConcurrency ?? DEFAULT_BUSINESS_CONCURRENCY);
  // One owner rule (write-order.ts): an id two businesses' answers carry goes to the lower
  // one, whatever order the reads end in. They start in id order, so a lower business a
  // write waits on always holds a slot, or is done.
  const order = new WriteOrder(mine.map((business) => business.id));
  await Promise.all(
    mine.map((business) =>
      limit(() =>
        context.businessSlot(async () => {
          try {
            if (context.isStopped() || stopped) return;
            const outcome = await syncBusiness(context, credential, business, order);
            if (outcome === 'failed') failedBusinesses += 1;
          } catch (error) {
            if (isCredentialStop(error)) {
              stopped ??= error;
              return;
            }
            if (isWarehouseGone(error)) {
              context.fail(new WarehouseGoneError(error, timeoutsOf(db)));
              return;
            }
            failedBusinesses += 1;
            options.onBusinessError?.(credential, business.id, error);
            recordFailure(stats, {
              credential: credential.name,
              businessId: business.id,
              stream: 'business',
              reason: describeDatabaseError(error, timeoutsOf(db)),
            });
            accountLog.error(
              {
                businessId: business.id,
                err: error,
                reason: describeDatabaseError(error, timeoutsOf(db)),
              },
              'business failed',
            );
          } finally {
            order.finish(business.id);
            context.progress.businessesDone += 1;
            context.report();
          }
        }),
      ),
    ),
  );
  stats.businesses.failed += failedBusinesses;
  return { stopped, failedBusinesses };
}

/** The businesses the other credentials' lists answered this run so far: moved there. */
function listedElsewhere(context: RunContext, name: string): number[] {
  const ids: number[] = [];
  for (const [other, listed] of context.listedBusinesses ?? []) {
    if (other !== name) ids.push(...listed);
  }
  return ids;
}

/**
 * The archive step, under the volume guard on the business list (docs/warehouse.md, "How
 * removals work"): a list that would archive a volume drop of the account's live
 * businesses (of the shard), or any of them when it answered nothing, archives nothing on
 * first sight; it records the hold and raises `volume_drop` in one transaction, and the
 * next run that reads the same drop confirms it and archives. A list that is not a drop
 * archives what it no longer shows at once and clears any hold. A business another
 * credential listed this run moved there, and is not archived. Returns the hold, or null
 * when the archiving applied.
 */
async function archiveUnlisted(
  context: RunContext,
  credential: Credential,
  listedIds: readonly number[],
  list: { answeredNothing: boolean },
): Promise<BusinessListHeld | null> {
  const { options, stats, log } = context;
  const db = options.warehouse.db;
  const rules = options.alertRules ?? DEFAULT_ALERT_RULES;
  const at = context.now(credential);
  const inScope = (id: number) => inShard(options.shard, id);
  const kept = new Set([...listedIds, ...listedElsewhere(context, credential.name)]);
  const live = (await liveBusinessIds(db, credential.name)).filter(inScope);
  const gone = live.filter((id) => !kept.has(id)).length;
  const key = businessListKey(formatShard(options.shard));
  const earlier = await heldBusinessList(db, credential.name, key);
  const counts = { live: live.length, gone, answeredNothing: list.answeredNothing };
  if (!holdsBusinessList(removalLimitUnder(rules), earlier, counts, context.runId)) {
    const archived = await archiveMissingBusinesses(db, credential.name, [...kept], at, inScope);
    stats.businesses.archived += archived;
    if (earlier) {
      // Confirmed (the same drop again), or the list came back: either way the hold is over.
      await clearBusinessListHold(db, credential.name, key);
      log.info(
        { credential: credential.name, list: key, archived, heldBy: earlier.run_id },
        'business list: the hold is over (confirmed, or the list came back)',
      );
    }
    return null;
  }
  const held: BusinessListHeld = {
    accountName: credential.name,
    key,
    stored: live.length,
    answered: listedIds.filter(inScope).length,
    removing: gone,
    runId: context.runId,
    detectedAt: at,
  };
  stats.alerts += await db.transaction().execute(async (trx) => {
    if (!earlier) await recordBusinessListHold(trx, held);
    return raiseVolumeDrop(trx, rules, held);
  });
  stats.removalsHeld = (stats.removalsHeld ?? 0) + 1;
  log.warn(
    { credential: credential.name, list: key, ...counts, answered: held.answered },
    'volume drop: the business list would archive most of the businesses of the account; nothing archived until the next run confirms it',
  );
  return held;
}
