import { ListingsSyncError } from '../errors.ts';

/** A configuration that cannot be used: the message is a full sentence naming the variable. */
export class ConfigError extends ListingsSyncError {
  readonly code = 'CONFIG_INVALID';
}
