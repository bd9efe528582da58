/**
 * A business's transaction that the database aborted to break a deadlock (40P01) or a
 * serialization failure (40001) is run again, whole, a bounded number of times, each
 * retry logged at warn; the last failure is named (docs/running.md, "Error codes",
 * `TRANSACTION_ABORTED`). The transaction rolled back, so running it again writes the
 * business once. Its rows are locked in one order by every writer (the business's lock
 * first, then each table in the writers' order, each table's rows in id order:
 * src/warehouse/write/bulk-write.ts), so two syncs' transactions rarely meet this at all.
 */
import { codeInChain, ListingsSyncError } from '../errors.ts';
import type { Logger } from '../log.ts';

/** Attempts a business's transaction gets in all: the first and two more. */
export const TRANSACTION_ATTEMPTS = 3;

/** What the database said: a deadlock or a serialization failure, by SQLSTATE. */
const ABORTS: Readonly<Record<string, string>> = {
  '40P01': 'a deadlock (40P01)',
  '40001': 'a serialization failure (40001)',
};

/** The retryable abort an error is, if it is one (its SQLSTATE, on the error or its cause). */
export function transactionAbort(error: unknown): string | undefined {
  return codeInChain(error, (code) => code in ABORTS);
}

/** A business's transaction aborted on every attempt: the business fails, the run goes on. */
export class TransactionAbortedError extends ListingsSyncError {
  readonly code = 'TRANSACTION_ABORTED';
  readonly businessId: number;
  constructor(businessId: number, sqlState: string, attempts: number, cause: unknown) {
    super(
      `business ${businessId}: its transaction was aborted by ${ABORTS[sqlState] ?? sqlState} ` +
        `on each of its ${attempts} attempts, so nothing of it was written this run ` +
        '(another writer held its rows: a run beside this one, or serve); the next run writes it',
      { cause },
    );
    this.businessId = businessId;
  }
}

/**
 * Runs `transaction` (a whole business's transaction), again when the database aborts it
 * for a deadlock or a serialization failure, up to `attempts` in all.
 */
export async function retryingAborts<T>(
  transaction: () => Promise<T>,
  where: { businessId: number; credential: string },
  log: Logger,
  attempts = TRANSACTION_ATTEMPTS,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      const sqlState = transactionAbort(error);
      if (sqlState === undefined) throw error;
      if (attempt >= attempts) {
        throw new TransactionAbortedError(where.businessId, sqlState, attempt, error);
      }
      log.warn(
        { ...where, sqlState, attempt, attempts, err: error },
        `business ${where.businessId}: its transaction was aborted by ${ABORTS[sqlState]}; ` +
          `running it again (attempt ${attempt + 1} of ${attempts})`,
      );
    }
  }
}
