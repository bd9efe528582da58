/**
 * Every use the command line makes of the configuration, in one file: loading it for a
 * command (its warnings on the command's standard error), the "Environment:" block of a
 * command's `--help`, and the rows `listings-sync config` prints. The configuration module
 * behind it is being replaced; only this file changes when it is.
 */
import {
  CREDENTIAL_VARIABLES,
  environmentHelp as variablesHelp,
  WAREHOUSE_VARIABLES,
} from '../cli-config.ts';
import { CONFIG_VARIABLES, type Config, type ConfigVariable, loadConfig } from '../config.ts';
import { configVariableRows, credentialRows as credentialRowsOf } from '../config-command.ts';
import type { CliIo } from './io.ts';

const LOGGING: ConfigVariable[] = ['LOG_LEVEL'];
const DATABASE_LIMITS: ConfigVariable[] = [
  'DATABASE_CONNECT_TIMEOUT_MS',
  'DATABASE_STATEMENT_TIMEOUT_MS',
  'DATABASE_LOCK_TIMEOUT_MS',
];
const SYNC_LIMITS: ConfigVariable[] = [
  'SYNC_CONCURRENCY',
  'SYNC_ACCOUNT_CONCURRENCY',
  'SYNC_REQUESTS_PER_SECOND',
  'LISTINGS_MAX_BODY_BYTES',
];
const ALERT_SINKS: ConfigVariable[] = [
  'ALERT_WEBHOOK_URL',
  'ALERT_WEBHOOK_SECRET',
  'ALERT_SLACK_WEBHOOK_URL',
  'ALERT_SINK_TIMEOUT_SECONDS',
  'ALERT_RULES_FILE',
];

/** The variables each command reads, listed under its `--help` (subcommands inherit). */
export const COMMAND_VARIABLES: Record<string, ConfigVariable[]> = {
  sandbox: LOGGING,
  migrate: [...WAREHOUSE_VARIABLES, ...DATABASE_LIMITS, ...LOGGING],
  sync: [
    ...WAREHOUSE_VARIABLES,
    ...DATABASE_LIMITS,
    ...CREDENTIAL_VARIABLES,
    ...SYNC_LIMITS,
    ...ALERT_SINKS,
    'ALERT_SYNC_DELIVERY_SECONDS',
    ...LOGGING,
  ],
  serve: [
    ...WAREHOUSE_VARIABLES,
    ...DATABASE_LIMITS,
    ...CREDENTIAL_VARIABLES,
    'SYNC_SCHEDULE',
    'SYNC_TIMEZONE',
    ...SYNC_LIMITS,
    'WEBHOOK_SECRET',
    'WEBHOOK_BODY_LIMIT_BYTES',
    'WEBHOOK_REQUEST_TIMEOUT_MS',
    'WEBHOOK_MAX_CONNECTIONS',
    ...ALERT_SINKS,
    'ALERT_DISPATCH_INTERVAL_SECONDS',
    'PORT',
    ...LOGGING,
  ],
  alerts: [...WAREHOUSE_VARIABLES, ...DATABASE_LIMITS, ...ALERT_SINKS],
  demo: ['DATABASE_URL', ...SYNC_LIMITS, ...LOGGING],
  // check validates the whole configuration, the rules file included.
  check: [...WAREHOUSE_VARIABLES, ...DATABASE_LIMITS, ...CREDENTIAL_VARIABLES, 'ALERT_RULES_FILE'],
  config: [],
  runs: [...WAREHOUSE_VARIABLES, ...DATABASE_LIMITS],
  report: [...WAREHOUSE_VARIABLES, ...DATABASE_LIMITS],
  // A write re-syncs its business, which raises alerts under the rules file.
  api: [
    ...WAREHOUSE_VARIABLES,
    ...DATABASE_LIMITS,
    ...CREDENTIAL_VARIABLES,
    ...SYNC_LIMITS,
    'ALERT_RULES_FILE',
    ...LOGGING,
  ],
  keywords: [
    ...WAREHOUSE_VARIABLES,
    ...DATABASE_LIMITS,
    ...CREDENTIAL_VARIABLES,
    ...SYNC_LIMITS,
    'ALERT_RULES_FILE',
    ...LOGGING,
  ],
};

export interface LoadOptions {
  /** `config` prints its warnings as part of its output, not on standard error. */
  warnings?: 'stderr' | 'none';
}

/**
 * The configuration `command` runs with, loaded from `io.env`; each warning (a misspelt
 * variable) goes to `io.stderr` before the command does anything a typo would change.
 * Throws a `ConfigError` (exit 1) naming every variable that is wrong.
 */
export function loadCommandConfig(io: CliIo, command: string, options: LoadOptions = {}): Config {
  // Today's loader reads every variable whatever the command; `command` is for the
  // loader that replaces it (docs/operations.md, "Configuration").
  void command;
  const config = loadConfig({ ...io.env });
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
    return `${variablesHelp(CONFIG_VARIABLES)}\n\`listings-sync config\` shows each one's value and where it came from.\n`;
  }
  const variables = COMMAND_VARIABLES[command] ?? [];
  return variables.length
    ? variablesHelp(variables)
    : '\nEnvironment: every variable listings-sync knows (the output lists them).\n';
}

/** `listings-sync config`'s first table: variable, effective value (secrets masked), source. */
export function configRows(config: Config): string[][] {
  return configVariableRows(config);
}

/** Its second table: one row per credential, the token masked. */
export function credentialRows(config: Config): string[][] {
  return credentialRowsOf(config);
}
