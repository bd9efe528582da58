import { EXIT, ListingsSyncError } from './errors.ts';

/** A mistake in how a command was called: printed as `listings-sync: …`, exit 2. */
export class UsageError extends ListingsSyncError {
  readonly code = 'USAGE';
  override readonly exitCode = EXIT.usage;
}
