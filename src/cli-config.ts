/**
 * The configuration as the command line uses it: loaded once per command, with a warning
 * for every variable that looks like a misspelt setting, and the help text that lists the
 * variables a command reads (docs/operations.md, "Configuration"). A thin layer over
 * src/config/, kept for the callers of its old names.
 */
import {
  CONFIG_VARIABLES,
  type Config,
  type ConfigVariable,
  loadConfig,
  SETTINGS,
  variablesHelp,
} from './config/index.ts';
import { createLogger, type Logger } from './log.ts';

/** One line per variable, for `--help` (the meanings of the table of settings). */
export const VARIABLE_MEANINGS: Readonly<Record<ConfigVariable, string>> = Object.fromEntries(
  CONFIG_VARIABLES.map((name) => [name, SETTINGS[name].meaning]),
) as Record<ConfigVariable, string>;

/** The variables every command that opens the configured warehouse reads. */
export const WAREHOUSE_VARIABLES: ConfigVariable[] = ['DATABASE_URL', 'PGLITE_DATA_DIR'];
/** The variables of the credentials (those that make `config.credentials`, not a field). */
export const CREDENTIAL_VARIABLES: ConfigVariable[] = CONFIG_VARIABLES.filter(
  (name) => SETTINGS[name].field === null,
);

/** The "Environment:" block of a command's `--help`, for these variables. */
export function environmentHelp(names: readonly ConfigVariable[]): string {
  return variablesHelp(names);
}

/**
 * Load the configuration for `command` and print its warnings (misspelt variables, an
 * empty rules file) on standard error, before the command does anything a typo would
 * change. A misspelt variable that would leave `command` on a default is a ConfigError.
 */
export function loadCliConfig(
  write: (text: string) => void = (t) => process.stderr.write(t),
  command?: string,
): Config {
  const config = loadConfig(undefined, command === undefined ? {} : { command });
  for (const warning of config.warnings) write(`listings-sync: warning: ${warning}\n`);
  return config;
}

/** The command's logger: human lines on a terminal, JSON lines otherwise (log collectors). */
export function createCliLogger(config: Config): Logger {
  return createLogger({ level: config.logLevel, human: process.stderr.isTTY === true });
}
