/**
 * How a command's failure is printed and which exit code it leaves: one sentence on
 * standard error, `listings-sync: …`, with any secret redacted. The exit code is the
 * error's own (docs/running.md, "Error codes"); any other error is fatal.
 */
import { CommanderError } from 'commander';
import { ConfigError } from '../../config/index.ts';
import { ListingsSyncError } from '../../errors.ts';
import { redactText } from '../../log.ts';
import { EXIT } from './exit-codes.ts';
import type { CliIo } from './io.ts';

export function printError(io: Pick<CliIo, 'stderr'>, error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander printed its own message; --help and --version end here with code 0.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  io.stderr(`listings-sync: ${printable(error)}\n`);
  return error instanceof ListingsSyncError ? error.exitCode : EXIT.fatal;
}

/**
 * A usage or configuration message is ours, written about what the operator typed:
 * printed as written. Anything else may carry a driver's or the upstream's text, and is
 * redacted.
 */
function printable(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  if (error instanceof ListingsSyncError && error.exitCode === EXIT.usage) return error.message;
  return redactText(error instanceof Error ? error.message : String(error));
}
