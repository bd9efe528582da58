/**
 * What each variable means, as the command line shows it: the help text that lists the
 * variables a command reads (docs/operations.md, "Configuration"). The command line reaches
 * it through src/cli/settings-bridge.ts.
 */
import type { ConfigVariable } from './config.ts';

/** One line per variable, for `--help` and `listings-sync config`. */
export const VARIABLE_MEANINGS: Record<ConfigVariable, string> = {
  DATABASE_URL: 'postgres:// URL of the warehouse (unset: the embedded PGlite)',
  PGLITE_DATA_DIR: 'where the embedded database lives (default ./.data/pglite)',
  LISTINGS_CREDENTIALS_FILE: 'JSON file of credentials [{name, baseUrl, authToken, userEmail}]',
  LISTINGS_BASE_URL: 'one credential named "default": everything before /api/v2',
  LISTINGS_AUTH_TOKEN: 'its auth token',
  LISTINGS_USER_EMAIL: 'its user e-mail',
  SYNC_SCHEDULE: 'cron of the nightly sync in `serve`, or "off" (default 0 3 * * *)',
  SYNC_TIMEZONE: 'time zone of SYNC_SCHEDULE (default UTC)',
  SYNC_CONCURRENCY: 'requests in flight overall (default 16)',
  SYNC_ACCOUNT_CONCURRENCY: 'requests in flight per credential (default 8)',
  SYNC_REQUESTS_PER_SECOND: 'cap on requests per second per credential (default 0: none)',
  LISTINGS_MAX_BODY_BYTES: 'largest upstream response body read (default 16 MiB)',
  DATABASE_CONNECT_TIMEOUT_MS: 'time to open a PostgreSQL connection (default 10000)',
  DATABASE_STATEMENT_TIMEOUT_MS: 'longest PostgreSQL statement, 0 for none (default 60000)',
  DATABASE_LOCK_TIMEOUT_MS: 'longest wait for a row or table lock (default 10000)',
  WEBHOOK_SECRET: 'shared secret(s) for X-Service-Signature, comma-separated',
  WEBHOOK_BODY_LIMIT_BYTES: 'largest webhook body taken (default 1 MiB)',
  WEBHOOK_REQUEST_TIMEOUT_MS: 'time to receive a whole webhook request (default 30000)',
  WEBHOOK_MAX_CONNECTIONS: 'connections `serve` holds open at once (default 512)',
  ALERT_WEBHOOK_URL: 'alert sink: a signed JSON webhook',
  ALERT_WEBHOOK_SECRET: "that webhook's signing secret",
  ALERT_SLACK_WEBHOOK_URL: 'alert sink: a Slack incoming webhook',
  ALERT_DISPATCH_INTERVAL_SECONDS: 'how often `serve` sends pending alerts (default 60)',
  ALERT_SINK_TIMEOUT_SECONDS: 'longest wait for one alert sink to answer (default 10)',
  ALERT_SYNC_DELIVERY_SECONDS: "how long `sync` spends delivering its run's alerts (default 30)",
  ALERT_RULES_FILE: 'JSON or YAML file of alert rules (default: built-in rules)',
  PORT: '`serve` HTTP port (default 8080)',
  LOG_LEVEL: 'fatal, error, warn, info, debug, trace or silent (default info)',
};

export const WAREHOUSE_VARIABLES: ConfigVariable[] = ['DATABASE_URL', 'PGLITE_DATA_DIR'];
export const CREDENTIAL_VARIABLES: ConfigVariable[] = [
  'LISTINGS_CREDENTIALS_FILE',
  'LISTINGS_BASE_URL',
  'LISTINGS_AUTH_TOKEN',
  'LISTINGS_USER_EMAIL',
];

/** The "Environment:" block of a command's `--help`. */
export function environmentHelp(names: readonly ConfigVariable[]): string {
  const width = Math.max(...names.map((name) => name.length));
  return `\nEnvironment:\n${names
    .map((name) => `  ${name.padEnd(width)}  ${VARIABLE_MEANINGS[name]}`)
    .join('\n')}\n`;
}
