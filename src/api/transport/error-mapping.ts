/**
 * What one exchange means: the operation's value, or an ApiError and whether another
 * attempt may help. The upstream names its errors by message text (docs/upstream.md,
 * "Errors": "The message text is the contract"), so a known text wins over the HTTP
 * status; statuses and transport errors map by the retry policy (`retry.ts`). Every text
 * put into an error is scrubbed (`redaction.ts`).
 */
import { ZodError } from 'zod';
import type { Credential } from '../../config/index.ts';
import { AnswerOverBound } from '../bounds.ts';
import { describeIssues, readEnvelope } from '../schemas.ts';
import type { RejectedRecord } from '../types.ts';
import { ApiError, type ApiErrorCode, codeForMessage, isPermanentMessageCode } from './errors.ts';
import { scrub, scrubbedCause, snippet } from './redaction.ts';
import {
  isRetryableErrorCode,
  isRetryableStatus,
  parseRetryAfter,
  TIMEOUT_ERROR_CODES,
} from './retry.ts';
import type { AttemptFailure, ClientState, UpstreamCall } from './state.ts';

import { BODY_TOO_LARGE, type Exchange, errorCodeOf, TOTAL_TIMEOUT } from './transport.ts';

export type Interpretation<T> =
  | { kind: 'value'; value: T }
  | { kind: 'failure'; failure: AttemptFailure };

interface FailureExtras {
  status?: number;
  upstreamMessage?: string;
  messages?: string[];
  cause?: unknown;
  retryAfterMs?: number;
  rejected?: RejectedRecord[];
}

type MappingState = Pick<
  ClientState,
  'maxBodyBytes' | 'requestTimeoutMs' | 'timeouts' | 'policy' | 'clock' | 'bounds'
>;

/** A failure of the call, its detail scrubbed of the credential's secrets. */
type Fail = (
  code: ApiErrorCode,
  rawDetail: string,
  retryable: boolean,
  extras?: FailureExtras,
) => Interpretation<never>;

function failureOf(call: UpstreamCall<unknown>, credential: Credential): Fail {
  return (code, rawDetail, retryable, { retryAfterMs, ...extras } = {}) => {
    const detail = scrub(rawDetail, credential);
    const error = new ApiError({
      code,
      operation: call.operation,
      credentialName: credential.name,
      subject: call.subject,
      detail,
      ...extras,
    });
    return {
      kind: 'failure',
      failure: { error, detail, retryable, ...(retryAfterMs !== undefined && { retryAfterMs }) },
    };
  };
}

/**
 * The exchange as a value or a failure. Throws only the signal's reason, when the caller
 * aborted the request.
 */
export function interpret<T>(
  state: MappingState,
  credential: Credential,
  call: UpstreamCall<T>,
  exchange: Exchange,
  signal: AbortSignal | undefined,
): Interpretation<T> {
  const fail = failureOf(call, credential);
  if (exchange.kind === 'transport') {
    if (signal?.aborted) throw signal.reason;
    return transportFailure(state, exchange.error, credential, fail);
  }
  return answerOf(state, credential, call, exchange, fail);
}

/** A request that got no answer: too large, too slow, or not through. */
function transportFailure(
  state: MappingState,
  exchangeError: unknown,
  credential: Credential,
  fail: Fail,
): Interpretation<never> {
  const errorCode = errorCodeOf(exchangeError);
  const cause = scrubbedCause(exchangeError, credential);
  if (errorCode === BODY_TOO_LARGE) {
    // Permanent: the same read would bring the same body again.
    return fail(
      'RESPONSE_TOO_LARGE',
      `the response body is larger than ${state.maxBodyBytes} bytes, the limit set by ` +
        'LISTINGS_MAX_BODY_BYTES; raise it if such a body is expected',
      false,
      { cause },
    );
  }
  if (errorCode === TOTAL_TIMEOUT) {
    // Not retried: an answer that drips past the limit would drip again, and each
    // attempt would hold the run that much longer.
    return fail(
      'TIMEOUT',
      `the request took longer than ${state.requestTimeoutMs / 1000} s in all (headers and ` +
        'body), the limit set by LISTINGS_REQUEST_TIMEOUT_SECONDS; it was not retried',
      false,
      { cause },
    );
  }
  const timeout = errorCode !== undefined && TIMEOUT_ERROR_CODES.has(errorCode);
  return fail(
    timeout ? 'TIMEOUT' : 'UPSTREAM_UNAVAILABLE',
    transportDescription(exchangeError, errorCode, state.timeouts),
    isRetryableErrorCode(state.policy, errorCode),
    { cause },
  );
}

/** An answer: its status, its envelope and its records, as a value or a failure. */
function answerOf<T>(
  state: MappingState,
  credential: Credential,
  call: UpstreamCall<T>,
  exchange: Extract<Exchange, { kind: 'response' }>,
  fail: Fail,
): Interpretation<T> {
  const { status, text } = exchange;
  const retryAfterMs = parseRetryAfter(exchange.retryAfter, state.clock.now());
  const statusRetryable = isRetryableStatus(state.policy, status);
  const byStatus = (detail: string, upstreamMessage?: string) =>
    fail(codeForStatus(status), detail, statusRetryable, {
      status,
      ...(upstreamMessage !== undefined && { upstreamMessage }),
      ...(retryAfterMs !== undefined && { retryAfterMs }),
    });

  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    const quoted = `HTTP ${status} with a body that is not JSON: "${snippet(text, credential)}"`;
    if (status >= 400 || statusRetryable) return byStatus(quoted);
    return fail('BAD_PAYLOAD', quoted, false, { status, cause: error });
  }

  const envelope = readEnvelope(body, call.envelope);
  if (envelope.kind === 'failure') {
    // The text is the contract: a known message wins over the HTTP status, and
    // `success: false` is a failure even with HTTP 200.
    const upstreamMessage = scrub(envelope.message, credential);
    const known = codeForMessage(envelope.message);
    if (known && isPermanentMessageCode(known.code)) {
      return fail(known.code, upstreamMessage, false, {
        status,
        upstreamMessage,
        ...(known.messages && { messages: known.messages.map((m) => scrub(m, credential)) }),
      });
    }
    if (status >= 400) return byStatus(upstreamMessage, upstreamMessage);
    return fail('UPSTREAM_ERROR', upstreamMessage, false, { status, upstreamMessage });
  }
  if (status < 200 || status >= 300) {
    return byStatus(`HTTP ${status}: "${snippet(text, credential)}"`);
  }
  if (envelope.kind === 'malformed') {
    return fail(
      'BAD_PAYLOAD',
      `the response was not the expected envelope (${envelope.reason}): "${snippet(text, credential)}"`,
      false,
      { status },
    );
  }
  try {
    return { kind: 'value', value: call.parse(envelope.result, envelope.body, state.bounds) };
  } catch (error) {
    if (error instanceof AnswerOverBound) {
      return fail('TOO_MANY_RECORDS', error.message, false, {
        status,
        rejected: [error.summary],
      });
    }
    if (error instanceof ApiError) {
      return { kind: 'failure', failure: { error, detail: error.message, retryable: false } };
    }
    const reason = error instanceof ZodError ? describeIssues(error) : String(error);
    return fail(
      'BAD_PAYLOAD',
      `the response did not match the expected shape (${reason}): "${snippet(text, credential)}"`,
      false,
      { status, cause: error },
    );
  }
}

/** The code for a failing status when the body names no known error. */
function codeForStatus(status: number): ApiErrorCode {
  if (status === 429) return 'RATE_LIMITED';
  if (status >= 500) return 'UPSTREAM_UNAVAILABLE';
  if (status === 401 || status === 403) return 'AUTH_FAILURE';
  return 'UPSTREAM_ERROR';
}

function transportDescription(
  error: unknown,
  errorCode: string | undefined,
  timeouts: ClientState['timeouts'],
): string {
  switch (errorCode) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `no connection within ${timeouts.connectMs} ms (${errorCode})`;
    case 'UND_ERR_HEADERS_TIMEOUT':
      return `no response headers within ${timeouts.headersMs} ms (${errorCode})`;
    case 'UND_ERR_BODY_TIMEOUT':
      return `the response body stalled for ${timeouts.bodyMs} ms (${errorCode})`;
    default: {
      const message = error instanceof Error ? error.message : String(error);
      return `${message}${errorCode ? ` (${errorCode})` : ''}`;
    }
  }
}
