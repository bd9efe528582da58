/** A mistake in how a command was called: printed as `listings-sync: …`, exit 2. */
export class UsageError extends Error {
  readonly code = 'USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
