/** A command's logger: on the command's standard error, human lines on a terminal, JSON lines otherwise (log collectors). */
import type { Config } from '../../config/index.ts';
import { createLogger, type Logger } from '../../log.ts';
import type { CliIo } from './io.ts';

export interface CommandLoggerOptions {
  /**
   * Commands that answer a person (`api`, `keywords`): a re-sync's info lines would bury
   * the answer, so below `warn` only an explicit debug/trace level is honoured.
   */
  quiet?: boolean;
}

export function createCommandLogger(
  io: CliIo,
  config: Config,
  options: CommandLoggerOptions = {},
): Logger {
  if (io.services?.createLogger) return io.services.createLogger(config);
  const level = options.quiet && config.logLevel === 'info' ? 'warn' : config.logLevel;
  return createLogger({
    level,
    human: io.isTTY.stderr,
    destination: { write: (line: string) => io.stderr(line) },
  });
}
