/**
 * The configuration, the base of the program: it imports nothing of ours but src/log.ts.
 * One table of settings (./settings.ts) from which the schema, `Config`, `--help`,
 * `listings-sync config` and docs/configuration.md ("Settings") derive.
 */
export {
  ALERT_RULES_FILE_MAX_BYTES,
  type AlertRules,
  AlertRulesError,
  DEFAULT_ALERT_RULES,
  readAlertRulesFile,
} from './alert-rules.ts';
export type { Credential } from './credentials.ts';
export { ConfigError } from './errors.ts';
export {
  type Config,
  credentialOrigin,
  DEMO_PGLITE_DATA_DIR,
  type LoadOptions,
  loadConfig,
  requireCredentials,
  requireWebhookSecrets,
} from './load.ts';
export { type Misspelling, misspeltVariables } from './misspellings.ts';
export { type ProxySettings, proxyFromEnvironment } from './proxy.ts';
export {
  configRows,
  credentialRows,
  environmentHelp,
  settingsMarkdown,
  variablesHelp,
} from './render.ts';
export {
  ANSWER_BOUND_SETTINGS,
  type AnswerBoundSettings,
  COMMANDS,
  CONFIG_VARIABLES,
  type CommandName,
  type ConfigVariable,
  commandVariables,
  DEFAULT_METRICS_PORT,
  DEFAULTS,
  SETTINGS,
  type Setting,
  type SettingValues,
} from './settings.ts';
