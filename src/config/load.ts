/**
 * Configuration: parsed once from the environment and the credentials file, frozen, and
 * read nowhere else. Every error is a full sentence naming the variable and the fix, and
 * never repeats a secret's value. The variables and their rules are the table in
 * ./settings.ts.
 */

import { z } from 'zod';
import {
  type AlertRules,
  AlertRulesError,
  DEFAULT_ALERT_RULES,
  readAlertRulesFile,
} from './alert-rules.ts';
import {
  type Credential,
  type CredentialVariables,
  describeIssues,
  readCredentials,
} from './credentials.ts';
import { ConfigError } from './errors.ts';
import { type Misspelling, misspeltVariables } from './misspellings.ts';
import { type ProxySettings, proxyFromEnvironment } from './proxy.ts';
import {
  CONFIG_VARIABLES,
  type ConfigVariable,
  SETTINGS,
  type SettingValues,
  setting,
} from './settings.ts';

/** The configuration a command runs with: every setting by its field, and what derives from them. */
export interface Config extends SettingValues {
  credentials: readonly Credential[];
  /** Where the credentials came from, for messages: a file path, `environment`, or `none`. */
  credentialsSource: string;
  /** HTTPS_PROXY / HTTP_PROXY / NO_PROXY (lowercase first); undefined: requests go direct. */
  proxy: ProxySettings | undefined;
  /** False when SYNC_SCHEDULE is `off` (the nightly load is a k8s CronJob; `serve` takes webhooks). */
  syncScheduleEnabled: boolean;
  /** The alert rules: `ALERT_RULES_FILE`, or the built-in defaults. */
  alertRules: AlertRules;
  /** Where each known variable's value came from: the environment, or the default. */
  sources: Readonly<Record<ConfigVariable, 'env' | 'default'>>;
  /**
   * What every command prints before it starts: variables that look like a misspelt
   * setting (`DATABSE_URL`), an empty rules file.
   */
  warnings: readonly string[];
  /** The variables that look like a misspelt setting; `check` fails on any. */
  misspellings: readonly Misspelling[];
}

export interface LoadOptions {
  /**
   * The top-level command about to run. A misspelt variable whose setting that command
   * reads, and which is not itself set, is then a ConfigError: the command would
   * otherwise run on the default. `config` only warns (it shows the configuration).
   */
  command?: string;
}

/**
 * The demo's own embedded warehouse (`npm start`): sandbox data never lands in the one a
 * real account syncs into. Read-only commands fall back to it (src/warehouse/driver/open.ts).
 */
export const DEMO_PGLITE_DATA_DIR = './.data/demo';

const envSchema = z.object(
  Object.fromEntries(CONFIG_VARIABLES.map((name) => [name, setting(name).rule(name)])),
);

/**
 * Parse the configuration from `env` (`processEnvironment()` in a process). Throws a
 * `ConfigError` naming every variable that is wrong, and, for `options.command`, every
 * misspelt variable that would leave that command on a default.
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  options: LoadOptions = {},
): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`The configuration is not valid:\n${describeIssues(parsed.error)}`);
  }
  const values = parsed.data as Record<ConfigVariable, unknown>;
  const sources = Object.fromEntries(
    CONFIG_VARIABLES.map((name) => [name, env[name]?.trim() ? 'env' : 'default']),
  ) as Record<ConfigVariable, 'env' | 'default'>;
  const misspellings = misspeltVariables(env);
  refuseMisspellings(misspellings, sources, options.command);
  const { credentials, source } = readCredentials(values as unknown as CredentialVariables);
  const fields = Object.fromEntries(
    CONFIG_VARIABLES.flatMap((name) => {
      const field = setting(name).field;
      return field === null ? [] : [[field, values[name]]];
    }),
  ) as SettingValues;
  const rules = readAlertRules(fields.alertRulesFile);
  const warnings = [
    ...misspellings.map(
      ({ name, meant }) =>
        `${name} is set, but listings-sync reads no such variable: did you mean ${meant}?` +
        (sources[meant] === 'env' ? '' : ` (${meant} is not set, so its default applies)`),
    ),
    ...rules.warnings,
  ];
  return Object.freeze({
    ...fields,
    sources: Object.freeze(sources),
    warnings: Object.freeze(warnings),
    misspellings: Object.freeze(misspellings.map((m) => Object.freeze(m))),
    credentials: Object.freeze(credentials.map((c) => Object.freeze(c))),
    credentialsSource: source,
    proxy: proxyFromEnvironment(env),
    syncScheduleEnabled: fields.syncSchedule !== 'off',
    alertRules: rules.rules,
  });
}

/** A ConfigError for the misspellings that would leave `command` on a default. */
function refuseMisspellings(
  misspellings: readonly Misspelling[],
  sources: Record<ConfigVariable, 'env' | 'default'>,
  command: string | undefined,
): void {
  if (command === undefined || command === 'config') return;
  const fatal = misspellings.filter(
    ({ meant }) =>
      sources[meant] === 'default' &&
      (SETTINGS[meant].commands as readonly string[]).includes(command),
  );
  if (fatal.length === 0) return;
  const lines = fatal.map(({ name, meant }) => {
    const fallback = setting(meant).defaultText;
    return (
      `${name} is set, but listings-sync reads no such variable: did you mean ${meant}? ` +
      `\`${command}\` reads ${meant}, which is not set, so it would run on its default` +
      `${fallback ? ` (${fallback})` : ''}. Rename ${name} to ${meant}, or unset ${name}.`
    );
  });
  throw new ConfigError(
    fatal.length === 1
      ? (lines[0] as string)
      : `Variables look like misspelt settings:\n${lines.map((line) => `  - ${line}`).join('\n')}`,
  );
}

/** The rules file's rules, or the defaults; a bad file is a ConfigError naming rule and field. */
function readAlertRules(file: string | undefined): { rules: AlertRules; warnings: string[] } {
  if (!file) return { rules: DEFAULT_ALERT_RULES, warnings: [] };
  try {
    return readAlertRulesFile(file);
  } catch (error) {
    if (error instanceof AlertRulesError) throw new ConfigError(error.message, { cause: error });
    throw error;
  }
}

/** The credentials, or a ConfigError telling the user how to provide some. */
export function requireCredentials(config: Config): readonly Credential[] {
  if (config.credentials.length === 0) {
    throw new ConfigError(
      'No API credentials are configured. Set LISTINGS_CREDENTIALS_FILE to a JSON file holding ' +
        '[{"name", "baseUrl", "authToken", "userEmail"}], or set LISTINGS_BASE_URL, ' +
        'LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL for a single credential. ' +
        '`listings-sync sandbox --credentials-out credentials.json` writes a file for the sandbox.',
    );
  }
  return config.credentials;
}

/** The webhook secrets, or a ConfigError: `serve` refuses to take unsigned deliveries. */
export function requireWebhookSecrets(config: Config): readonly string[] {
  if (config.webhookSecrets.length === 0) {
    throw new ConfigError(
      'WEBHOOK_SECRET is not set. `serve` verifies every webhook delivery, so it needs the shared ' +
        'secret (several may be given, comma-separated, to rotate without downtime).',
    );
  }
  return config.webhookSecrets;
}

/**
 * Where credential `name` came from, for an error telling the user what to check:
 * `LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL`, or the credentials file's entry by index
 * (0-based, as the file's validation errors count) and name. Never a value.
 */
export function credentialOrigin(
  config: Pick<Config, 'credentials' | 'credentialsSource'>,
  name: string,
): string {
  if (config.credentialsSource === 'environment') {
    return 'LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL';
  }
  const index = config.credentials.findIndex((c) => c.name === name);
  if (config.credentialsSource === 'none' || index < 0) return `credential "${name}"`;
  return `entry ${index} ("${name}") of ${config.credentialsSource}`;
}
