/**
 * A signal, not a failure: a read answered a body whose rows the caller already holds
 * (`CallOptions.unchanged`, src/warehouse/write/applied-answers.ts), so the body was not
 * parsed. The call rejects with it so that a caller that did not ask cannot mistake it
 * for a value; the one that asked catches it (`error instanceof AnswerUnchanged`) and
 * calls `parse()` only if it needs the value after all.
 */
import { ListingsSyncError } from '../errors.ts';

export class AnswerUnchanged<T = unknown> extends ListingsSyncError {
  override name = 'AnswerUnchanged';
  readonly code = 'ANSWER_UNCHANGED';
  /** Reads the body as the call would have, and throws as it would (an ApiError). */
  readonly parse: () => T;

  constructor(parse: () => T) {
    // Without a stack: an unchanged night raises one per read (3,000 at 500 businesses),
    // capturing a stack each time showed in its CPU profile, and no one reads it.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super('the answer is the one already applied; it was not parsed');
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.parse = parse;
  }
}
