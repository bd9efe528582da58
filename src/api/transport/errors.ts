/**
 * Errors of the upstream client. Every failure of an operation is an `ApiError` with a
 * stable `code`; the upstream distinguishes its errors only by message text (docs/upstream.md, "Errors":
 * "The message text is the contract"), so the table below is built from those texts.
 * Messages name the operation and the credential and never carry a secret or a full URL.
 */
import { ListingsSyncError } from '../../errors.ts';
import { OPERATIONS, type OperationName } from '../../operations.ts';
import type { RejectedRecord } from '../types.ts';

/** Every code an `ApiError` can carry. */
export const API_ERROR_CODES = [
  'AUTH_FAILURE',
  'BUSINESS_NOT_FOUND',
  'INVALID_LOCATION_ID',
  'INVALID_KEYWORD_ID',
  'VALIDATION_FAILED',
  'STATE_BLANK',
  'SUB_CATEGORY_BLANK',
  'HOURS_INCOMPLETE',
  'HOURS_BLANK',
  'HOURS_FORMAT',
  'REVIEW_ID_INVALID',
  'REVIEW_CONTENT_EMPTY',
  'REVIEW_NOT_YOURS',
  'SITE_CREDENTIALS_NOT_SET',
  'RESPOND_NOT_SUPPORTED',
  'RESPONSE_ALREADY_EXISTS',
  'RESPONSE_IN_PROGRESS',
  'RESPONSE_ALREADY_SUBMITTED',
  'RESPONSE_PREVIOUSLY_FAILED',
  'INVALID_REQUEST_ID',
  'TIMEOUT',
  'RATE_LIMITED',
  'UPSTREAM_UNAVAILABLE',
  'BAD_PAYLOAD',
  /** A response body over the configured limit (LISTINGS_MAX_BODY_BYTES). */
  'RESPONSE_TOO_LARGE',
  /**
   * An answer with more records than a bound allows (src/api/bounds.ts, a setting of its
   * own each); refused whole before it is validated. `rejected` holds a summary for
   * quarantine.
   */
  'TOO_MANY_RECORDS',
  /**
   * The upstream asked this credential to pause (Retry-After) for longer than a run waits:
   * the call fails at once, and so does every later call of the credential in the pause.
   */
  'PAUSE_TOO_LONG',
  'UPSTREAM_ERROR',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

// The operations' names (src/operations.ts): counters, logs and error messages use them.
export { OPERATIONS, type OperationName };

/** Codes of transient failures: worth trying again later (the client already did, for reads). */
const TRANSIENT_CODES: ReadonlySet<ApiErrorCode> = new Set([
  'TIMEOUT',
  'RATE_LIMITED',
  'UPSTREAM_UNAVAILABLE',
]);

export function isTransientCode(code: ApiErrorCode): boolean {
  return TRANSIENT_CODES.has(code);
}

export interface ApiErrorInit {
  code: ApiErrorCode;
  operation: OperationName;
  credentialName: string;
  /** What the call was about, e.g. `for business 42`; empty for account-wide calls. */
  subject?: string;
  /** The reason, a sentence fragment: the upstream's message or a transport description. */
  detail: string;
  status?: number;
  upstreamMessage?: string;
  messages?: string[];
  cause?: unknown;
  rejected?: RejectedRecord[];
}

/**
 * A failed upstream operation. `code` is stable; `message` is for people. A command that
 * fails with it exits 1 (the base's `exitCode`).
 */
export class ApiError extends ListingsSyncError {
  override name = 'ApiError';
  readonly code: ApiErrorCode;
  readonly operation: OperationName;
  /** HTTP status of the last response, when there was one. */
  readonly status?: number;
  /** The upstream's `message`, verbatim, when it sent one. */
  readonly upstreamMessage?: string;
  /** The individual validation messages of a `VALIDATION_FAILED`. */
  readonly messages?: string[];
  /** True for transient failures (timeouts, rate limits, 5xx, resets). */
  readonly retryable: boolean;
  readonly credentialName: string;
  /** What of the answer goes to quarantine although the call failed (TOO_MANY_RECORDS). */
  readonly rejected?: RejectedRecord[];

  constructor(init: ApiErrorInit) {
    const subject = init.subject ? ` ${init.subject}` : '';
    super(
      `${init.operation}${subject} on credential "${init.credentialName}" failed: ${init.detail}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.code = init.code;
    this.operation = init.operation;
    this.credentialName = init.credentialName;
    this.retryable = isTransientCode(init.code);
    if (init.status !== undefined) this.status = init.status;
    if (init.upstreamMessage !== undefined) this.upstreamMessage = init.upstreamMessage;
    if (init.messages !== undefined) this.messages = init.messages;
    if (init.rejected !== undefined) this.rejected = init.rejected;
  }
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}

/** The upstream's error texts (docs/upstream.md, "Errors"), exactly, and their codes. */
const MESSAGE_CODES: ReadonlyArray<readonly [string, ApiErrorCode]> = [
  ['Authentication Failure', 'AUTH_FAILURE'],
  ["This business doesn't exist", 'BUSINESS_NOT_FOUND'],
  ['Invalid location id', 'INVALID_LOCATION_ID'],
  ['Invalid keyword id', 'INVALID_KEYWORD_ID'],
  ['Review ID is invalid.', 'REVIEW_ID_INVALID'],
  ['Review content is empty.', 'REVIEW_CONTENT_EMPTY'],
  ["Review must pertain to a business you've added.", 'REVIEW_NOT_YOURS'],
  ['Site credentials have not been set.', 'SITE_CREDENTIALS_NOT_SET'],
  ['This operation is currently not supported for this site.', 'RESPOND_NOT_SUPPORTED'],
  ['A response already exists for this review.', 'RESPONSE_ALREADY_EXISTS'],
  ['There is already a response submission in progress.', 'RESPONSE_IN_PROGRESS'],
  ['A response has already been submitted successfully.', 'RESPONSE_ALREADY_SUBMITTED'],
  ['A response has been submitted previously, which failed.', 'RESPONSE_PREVIOUSLY_FAILED'],
  ['Invalid Request ID', 'INVALID_REQUEST_ID'],
];

export const VALIDATION_PREFIX = 'The business was not created.';

/**
 * Compare texts the way the upstream's clients would: exact words, but tolerant of case,
 * surrounding space, a trailing full stop and typographic apostrophes.
 */
function normaliseMessage(text: string): string {
  return text
    .trim()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/\.$/, '')
    .toLowerCase();
}

const CODE_BY_MESSAGE = new Map(
  MESSAGE_CODES.map(([text, code]) => [normaliseMessage(text), code]),
);

/**
 * The validation sentences after `The business was not created.`. docs/upstream.md ("Errors") shows one
 * sentence per message ("State can't be blank.") and lists of attribute messages; split
 * on sentence ends and on `, ` before a capital, but not inside the hours-format message
 * (`… no trailing spaces. eg '09:00am'.` continues in lower case).
 */
export function splitValidationMessages(message: string): string[] {
  const rest = message.trim().slice(VALIDATION_PREFIX.length).trim();
  if (rest === '') return [];
  return rest
    .split(/(?<=\.)\s+(?=[A-Z])|,\s+(?=[A-Z])|;\s*|\n+/)
    .map((part) => part.trim())
    .filter(Boolean);
}

/**
 * The five validation errors of operations 4 and 5 that the upstream names by their own
 * text (docs/upstream.md, "Errors"), each with its own code; any other sentence after
 * `The business was not created.` (attribute validations) is `VALIDATION_FAILED`.
 */
const VALIDATION_SENTENCE_CODES: ReadonlyArray<readonly [string, ApiErrorCode]> = [
  ["State can't be blank", 'STATE_BLANK'],
  ["Sub Category can't be blank", 'SUB_CATEGORY_BLANK'],
  ['Operating hours should include all days of the week', 'HOURS_INCOMPLETE'],
  ['Please specify valid operating hours for each day of the week', 'HOURS_BLANK'],
  // The upstream appends an example time after this sentence: matched as a prefix.
  ['Operating hours should be in 12 hours format and no trailing spaces', 'HOURS_FORMAT'],
];

/** Every code a rejected create or update (operations 4 and 5) can carry. */
export const VALIDATION_CODES: ReadonlySet<ApiErrorCode> = new Set([
  'VALIDATION_FAILED',
  ...VALIDATION_SENTENCE_CODES.map(([, code]) => code),
]);

export function isValidationCode(code: ApiErrorCode): boolean {
  return VALIDATION_CODES.has(code);
}

function validationSentenceCode(sentence: string): ApiErrorCode {
  const text = normaliseMessage(sentence);
  for (const [known, code] of VALIDATION_SENTENCE_CODES) {
    if (text.startsWith(normaliseMessage(known))) return code;
  }
  return 'VALIDATION_FAILED';
}

/**
 * One code for a validation message: the specific code when every sentence carries the
 * same one, `VALIDATION_FAILED` when there are none, several kinds, or attribute messages
 * (the individual sentences are in `messages` either way).
 */
function validationCode(messages: readonly string[]): ApiErrorCode {
  const codes = new Set(messages.map(validationSentenceCode));
  const [only] = codes;
  return codes.size === 1 && only ? only : 'VALIDATION_FAILED';
}

export interface MessageClassification {
  code: ApiErrorCode;
  messages?: string[];
}

/** The code for an upstream `message`, or undefined when the text is not one docs/upstream.md lists. */
export function codeForMessage(message: string): MessageClassification | undefined {
  const known = CODE_BY_MESSAGE.get(normaliseMessage(message));
  if (known) return { code: known };
  if (normaliseMessage(message).startsWith(normaliseMessage(VALIDATION_PREFIX))) {
    const messages = splitValidationMessages(message);
    return { code: validationCode(messages), messages };
  }
  return undefined;
}

/** Codes that describe the request or the account, never the moment: never retried. */
export function isPermanentMessageCode(code: ApiErrorCode): boolean {
  return !isTransientCode(code) && code !== 'UPSTREAM_ERROR' && code !== 'BAD_PAYLOAD';
}
