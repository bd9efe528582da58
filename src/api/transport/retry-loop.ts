/**
 * The attempts of one call: each within the limits (`limits.ts`), sent (`transport.ts`)
 * and read (`error-mapping.ts`); a read that fails transiently is tried again after the
 * policy's backoff or the upstream's Retry-After (`retry.ts`). Writes are tried once.
 */

import type { Credential } from '../../config/index.ts';
import { AnswerUnchanged } from '../answer-unchanged.ts';
import { interpret } from './error-mapping.ts';
import { accountFor, noteRateLimit, pauseTooLong, relaxSpacing, withinLimits } from './limits.ts';
import { backoffDelayMs } from './retry.ts';
import type { CallOptions, ClientState, UpstreamCall } from './state.ts';
import { sendAttempt } from './transport.ts';

/**
 * The call's value, or its last attempt's ApiError; an AnswerUnchanged when
 * `options.unchanged` says the body is one the caller holds; the signal's reason when the
 * caller aborts.
 */
export async function runWithRetries<T>(
  state: ClientState,
  credential: Credential,
  call: UpstreamCall<T>,
  options: CallOptions,
): Promise<T> {
  const { signal, unchanged } = options;
  if (state.closed) {
    throw new Error(`The API client is closed; ${call.operation} was not sent.`);
  }
  const account = accountFor(state, credential);
  // Writes are never retried: the upstream has no idempotency keys, a repeat could
  // create a second business or submit a second review response.
  const maxAttempts = call.method === 'GET' ? state.policy.maxAttempts : 1;
  // The backoff waited before this attempt, for its span.
  let waitedMs = 0;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    const exchange = await withinLimits(state, account, credential, call, signal, () =>
      sendAttempt(state, credential, call, attempt, waitedMs, signal),
    );
    if (
      unchanged &&
      call.method === 'GET' &&
      exchange.kind === 'response' &&
      exchange.status >= 200 &&
      exchange.status < 300 &&
      (await unchanged(exchange.text))
    ) {
      relaxSpacing(account);
      throw new AnswerUnchanged(() => {
        const late = interpret(state, credential, call, exchange, signal);
        if (late.kind === 'value') return late.value;
        throw late.failure.error;
      });
    }
    const result = interpret(state, credential, call, exchange, signal);
    if (result.kind === 'value') {
      relaxSpacing(account);
      return result.value;
    }
    const failure = result.failure;
    if (failure.error.code === 'RATE_LIMITED') {
      noteRateLimit(state, account, failure, attempt, exchange.startedAt);
    }
    const tooLong = pauseTooLong(state, credential, call, failure);
    if (tooLong) throw tooLong;
    if (!failure.retryable || attempt >= maxAttempts) throw failure.error;
    const delay = failure.retryAfterMs ?? backoffDelayMs(state.policy, attempt);
    state.stats.retries += 1;
    state.logger.warn(
      {
        operation: call.operation,
        credential: credential.name,
        attempt,
        delayMs: delay,
        code: failure.error.code,
        status: failure.error.status,
      },
      'retrying upstream read',
    );
    await state.clock.sleep(delay, signal);
    waitedMs = delay;
  }
}
