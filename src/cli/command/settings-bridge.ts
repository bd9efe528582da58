/**
 * Every use the command line makes of the configuration, in one file: loading it for a
 * command (its warnings on the command's standard error), the "Environment:" block of a
 * command's `--help`, and the rows `listings-sync config` prints. All of it derives from
 * the table of settings (src/config/settings.ts; docs/configuration.md, "Settings").
 */
import {
  type Config,
  configRows,
  credentialRows,
  loadConfig,
  environmentHelp as variablesOf,
} from '../../config/index.ts';
import type { CliIo } from './io.ts';

export { configRows, credentialRows };

export interface LoadOptions {
  /** `config` prints its warnings as part of its output, not on standard error. */
  warnings?: 'stderr' | 'none';
}

/**
 * The configuration `command` runs with, loaded from `io.env`; each warning (a misspelt
 * variable) goes to `io.stderr` before the command does anything a typo would change.
 * Throws a `ConfigError` (exit 1) naming every variable that is wrong, and naming both
 * variables when a misspelling would make this command fall back to a default.
 */
export function loadCommandConfig(io: CliIo, command: string, options: LoadOptions = {}): Config {
  const config = loadConfig({ ...io.env }, { command });
  if (options.warnings !== 'none') {
    for (const warning of config.warnings) io.stderr(`listings-sync: warning: ${warning}\n`);
  }
  return config;
}

/**
 * The "Environment:" block under `--help`: the variables `command` reads, or with no
 * command (the program's own help) every variable.
 */
export function environmentHelp(command?: string): string {
  if (command === undefined) {
    return `${variablesOf()}\n\`listings-sync config\` shows each one's value and where it came from.\n`;
  }
  return variablesOf(command);
}
