/**
 * One credential's part of a run: list its businesses, scope them (shard, chosen ids),
 * sync each under the per-credential and run-wide limits, poll its review response
 * requests, and archive what the list no longer shows. An authentication failure stops
 * this credential only.
 */
import pLimit from 'p-limit';
import { ApiError } from '../api/errors.ts';
import { listBusinesses } from '../api/index.ts';
import { readableIdOf } from '../api/schemas.ts';
import type { BusinessSummary, Credential, ListResult } from '../api/types.ts';
import { markAccountSynced, upsertAccount } from '../warehouse/accounts.ts';
import { archiveMissingBusinesses, storedBusinessSummaries } from '../warehouse/businesses.ts';
import { describeDatabaseError, timeoutsOf } from '../warehouse/connection.ts';
import { isWarehouseGone, WarehouseGoneError } from '../warehouse/outage.ts';
import { isCredentialStop, syncBusiness } from './business.ts';
import { DEFAULT_BUSINESS_CONCURRENCY, type SyncOptions } from './options.ts';
import { pollResponseRequests } from './response-requests.ts';
import { quarantineRejected, type RunContext } from './run-context.ts';
import { inShard } from './shard.ts';
import { type CredentialOutcome, errorText, recordFailure } from './stats.ts';

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

export async function syncCredential(
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
  await context.writeReferenceOnce(credential);

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
  const summaries = [
    ...listed.records,
    ...(await storedBusinessSummaries(db, credential.name, unreadable)),
  ];
  const only = options.businessIds ? new Set(options.businessIds) : undefined;
  const inScope = (id: number) => inShard(options.shard, id) && (!only || only.has(id));
  const mine = summaries.filter((business) => inScope(business.id));
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

  // The first error that ends this credential's remaining work (isCredentialStop).
  let stopped: ApiError | undefined;
  let failedBusinesses = 0;
  const limit = pLimit(options.businessConcurrency ?? DEFAULT_BUSINESS_CONCURRENCY);
  await Promise.all(
    mine.map((business) =>
      limit(() =>
        context.businessSlot(async () => {
          if (context.isStopped() || stopped) return;
          try {
            const outcome = await syncBusiness(context, credential, business);
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
            context.progress.businessesDone += 1;
            context.report();
          }
        }),
      ),
    ),
  );
  stats.businesses.failed += failedBusinesses;

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
    // archived this run (docs/operations.md, "Limits").
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
    // Only a complete list read may archive what it no longer shows; a shard archives
    // only its own businesses.
    const archived = await archiveMissingBusinesses(
      db,
      credential.name,
      [...readable, ...unreadable],
      context.now(credential),
      (id) => inShard(options.shard, id),
    );
    stats.businesses.archived += archived;
    if (complete) await markAccountSynced(db, credential.name, context.now(credential));
  }
  return {
    name: credential.name,
    status: complete && refusedInScope.length === 0 ? 'succeeded' : 'partial',
    businesses: mine.length,
  };
}
