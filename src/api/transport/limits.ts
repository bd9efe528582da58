/**
 * The limits a request waits on (docs/configuration.md, "Limits"): requests in flight
 * overall (SYNC_CONCURRENCY) and per credential (SYNC_ACCOUNT_CONCURRENCY), an optional
 * requests-per-second cap per credential (SYNC_REQUESTS_PER_SECOND), and what a 429 does
 * (the `Retry-After` pause in the same table; docs/upstream.md, "What the sandbox
 * assumes"): a credential-wide pause, and a spacing learned from 429s that the
 * credential's next requests keep.
 */
import pLimit from 'p-limit';
import type { Credential } from '../../config/index.ts';
import { ApiError } from './errors.ts';
import { backoffDelayMs } from './retry.ts';
import type { AccountState, AttemptFailure, ClientState, UpstreamCall } from './state.ts';

// A 429 starts the learned spacing at 50 ms (20 requests/s) and doubles it up to 2 s;
// each success takes 10 % off, and under 5 ms it is dropped.
const SPACING_START_MS = 50;
const SPACING_MAX_MS = 2_000;
const SPACING_DECAY = 0.9;
const SPACING_FLOOR_MS = 5;

export function accountFor(state: ClientState, credential: Credential): AccountState {
  const key = `${credential.name}\u0000${credential.baseUrl}`;
  let account = state.accounts.get(key);
  if (!account) {
    account = {
      limit: pLimit(state.accountConcurrency),
      blockedUntil: 0,
      nextSlotAt: 0,
      learnedSpacingMs: 0,
      lastRateLimitAt: 0,
    };
    state.accounts.set(key, account);
  }
  return account;
}

/**
 * Runs `work` within the credential's limiter, after its pause and spacing, then within
 * the global limiter: a credential waiting out a 429 holds no global slot.
 */
export function withinLimits<T>(
  state: ClientState,
  account: AccountState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  signal: AbortSignal | undefined,
  work: () => Promise<T>,
): Promise<T> {
  return account.limit(async () => {
    await waitForTurn(state, account, credential, call, signal);
    return state.global(work);
  });
}

/** A success: the learned spacing shrinks. */
export function relaxSpacing(account: AccountState): void {
  if (account.learnedSpacingMs === 0) return;
  account.learnedSpacingMs *= SPACING_DECAY;
  if (account.learnedSpacingMs < SPACING_FLOOR_MS) account.learnedSpacingMs = 0;
}

/**
 * A 429 of a request started at `startedAt`: pause the whole credential, since its other
 * calls would only collect more 429s, and learn a wider spacing.
 */
export function noteRateLimit(
  state: ClientState,
  account: AccountState,
  failure: AttemptFailure,
  attempt: number,
  startedAt: number,
): void {
  const pause = failure.retryAfterMs ?? backoffDelayMs(state.policy, attempt);
  account.blockedUntil = Math.max(account.blockedUntil, state.clock.now() + pause);
  // Requests already in flight when the last 429 came tell nothing new about the rate.
  if (startedAt >= account.lastRateLimitAt) {
    account.lastRateLimitAt = state.clock.now();
    account.learnedSpacingMs = Math.min(
      SPACING_MAX_MS,
      Math.max(SPACING_START_MS, account.learnedSpacingMs * 2),
    );
  }
}

/**
 * PAUSE_TOO_LONG when a retryable failure asks for a pause (Retry-After) longer than a run
 * waits: the call fails now, on any attempt, with a code the sync can end the credential's
 * remaining work on (its later calls fail in `waitForTurn`). Undefined otherwise.
 */
export function pauseTooLong(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  failure: AttemptFailure,
): ApiError | undefined {
  const { retryAfterMs, error } = failure;
  if (!failure.retryable || retryAfterMs === undefined) return undefined;
  if (retryAfterMs <= state.policy.maxRetryAfterMs) return undefined;
  const asked = Math.ceil(retryAfterMs / 1000);
  const allowed = Math.ceil(state.policy.maxRetryAfterMs / 1000);
  return new ApiError({
    code: 'PAUSE_TOO_LONG',
    operation: call.operation,
    credentialName: credential.name,
    subject: call.subject,
    detail: `${failure.detail}; the upstream asked this credential to pause for ${asked} s (Retry-After), longer than the ${allowed} s a run waits, so the call gives up`,
    ...(error.status !== undefined && { status: error.status }),
    ...(error.upstreamMessage !== undefined && { upstreamMessage: error.upstreamMessage }),
  });
}

/** Wait out a credential-wide 429 pause and the requests-per-second cap. */
async function waitForTurn(
  state: ClientState,
  account: AccountState,
  credential: Credential,
  call: UpstreamCall<unknown>,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    const blockedFor = account.blockedUntil - state.clock.now();
    if (blockedFor > state.policy.maxRetryAfterMs) {
      throw new ApiError({
        code: 'PAUSE_TOO_LONG',
        operation: call.operation,
        credentialName: credential.name,
        subject: call.subject,
        detail: `the upstream paused this credential (Retry-After) for another ${Math.ceil(blockedFor / 1000)} s, longer than the ${Math.ceil(state.policy.maxRetryAfterMs / 1000)} s a run waits, so the call was not sent`,
      });
    }
    if (blockedFor > 0) {
      await state.clock.sleep(blockedFor, signal);
      continue;
    }
    const spacing = Math.max(
      state.requestsPerSecond === undefined ? 0 : 1000 / state.requestsPerSecond,
      account.learnedSpacingMs,
    );
    if (spacing === 0) return;
    const now = state.clock.now();
    const slot = Math.max(now, account.nextSlotAt);
    account.nextSlotAt = slot + spacing;
    await state.clock.sleep(slot - now, signal);
    // A 429 may have landed while we waited for the slot.
    if (account.blockedUntil <= state.clock.now()) return;
  }
}
