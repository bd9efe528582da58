/** The message-to-code table and the retry policy's pure functions. */
import { describe, expect, it } from 'vitest';
import {
  ApiError,
  codeForMessage,
  isTransientCode,
  splitValidationMessages,
} from '../../src/api/transport/errors.ts';
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  resolveRetryPolicy,
} from '../../src/api/transport/retry.ts';
import { sleep } from '../../src/sleep.ts';

describe('codeForMessage', () => {
  it.each([
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
    ["The business was not created. State can't be blank.", 'STATE_BLANK'],
    ["The business was not created. Sub Category can't be blank.", 'SUB_CATEGORY_BLANK'],
    [
      'The business was not created. Operating hours should include all days of the week.',
      'HOURS_INCOMPLETE',
    ],
    [
      'The business was not created. Please specify valid operating hours for each day of the week.',
      'HOURS_BLANK',
    ],
    [
      "The business was not created. Operating hours should be in 12 hours format and no trailing spaces. eg '9:00 am'.",
      'HOURS_FORMAT',
    ],
    ['The business was not created. Phone is invalid.', 'VALIDATION_FAILED'],
    [
      "The business was not created. State can't be blank. Sub Category can't be blank.",
      'VALIDATION_FAILED',
    ],
    ["The business was not created. State can't be blank. State can't be blank.", 'STATE_BLANK'],
  ])('%s → %s', (message, code) => {
    expect(codeForMessage(message)?.code).toBe(code);
  });

  it('leaves unknown texts unclassified', () => {
    expect(codeForMessage('Something odd happened')).toBeUndefined();
  });

  it('splits validation messages, keeping the hours-format sentence whole', () => {
    expect(
      splitValidationMessages(
        'The business was not created. Name is too short (minimum is 2 characters), Phone is invalid',
      ),
    ).toEqual(['Name is too short (minimum is 2 characters)', 'Phone is invalid']);
    expect(
      splitValidationMessages(
        "The business was not created. Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.",
      ),
    ).toEqual([
      "Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.",
    ]);
    expect(
      splitValidationMessages(
        "The business was not created. State can't be blank. Sub Category can't be blank.",
      ),
    ).toEqual(["State can't be blank.", "Sub Category can't be blank."]);
  });
});

describe('ApiError', () => {
  it('names the operation, subject and credential in a full sentence', () => {
    const error = new ApiError({
      code: 'BUSINESS_NOT_FOUND',
      operation: 'list_listings',
      credentialName: 'acme',
      subject: 'for business 42',
      detail: "This business doesn't exist",
      status: 200,
    });
    expect(error.message).toBe(
      `list_listings for business 42 on credential "acme" failed: This business doesn't exist`,
    );
    expect(error.retryable).toBe(false);
    expect(error).toBeInstanceOf(Error);
    expect(isTransientCode('TIMEOUT')).toBe(true);
  });
});

describe('retry policy', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_RETRY_POLICY).toMatchObject({
      statuses: [429, 500, 502, 503, 504],
      maxAttempts: 5,
      baseDelayMs: 100,
      maxDelayMs: 5000,
      maxRetryAfterMs: 60_000,
    });
    expect(resolveRetryPolicy({ maxAttempts: 2 }).maxAttempts).toBe(2);
    expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow(RangeError);
  });

  it('backs off exponentially with full jitter under a cap', () => {
    expect(backoffDelayMs(DEFAULT_RETRY_POLICY, 1, () => 0.999)).toBe(99);
    expect(backoffDelayMs(DEFAULT_RETRY_POLICY, 3, () => 0.5)).toBe(200);
    expect(backoffDelayMs(DEFAULT_RETRY_POLICY, 20, () => 0.999)).toBe(4995);
    expect(backoffDelayMs(DEFAULT_RETRY_POLICY, 4, () => 0)).toBe(0);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Mon, 01 Jan 2024 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Sun, 31 Dec 2023 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });

  it('sleeps abort on the signal', async () => {
    const controller = new AbortController();
    const pending = sleep(10_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });
});
