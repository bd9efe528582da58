/**
 * How a command's failure is printed and which exit code it leaves: one sentence on
 * standard error, `listings-sync: …`, with any secret redacted.
 */
import { CommanderError } from 'commander';
import { ConfigError } from '../config/index.ts';
import { redactText } from '../log.ts';
import { EXIT } from './exit-codes.ts';
import type { CliIo } from './io.ts';

export function printError(io: Pick<CliIo, 'stderr'>, error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander printed its own message; --help and --version end here with code 0.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if ((error as { code?: unknown } | null)?.code === 'USAGE') {
    io.stderr(`listings-sync: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  if (error instanceof ConfigError) {
    io.stderr(`listings-sync: ${error.message}\n`);
    return EXIT.fatal;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr(`listings-sync: ${redactText(message)}\n`);
  return EXIT.fatal;
}
