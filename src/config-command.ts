/**
 * `listings-sync config`: the effective configuration, and where each value came from
 * (the environment, the credentials file, or the default). Secrets are masked: a set
 * secret shows as `[set, N characters]`, a URL with its password replaced. The command
 * itself is src/cli/commands/config.ts.
 */
import { CONFIG_VARIABLES, type Config, type ConfigVariable } from './config.ts';
import { redactText } from './log.ts';

function effectiveValue(config: Config, name: ConfigVariable): string {
  switch (name) {
    case 'DATABASE_URL':
      return config.databaseUrl ?? '(unset: embedded PGlite)';
    case 'PGLITE_DATA_DIR':
      return config.pgliteDataDir;
    case 'LISTINGS_CREDENTIALS_FILE':
      return config.credentialsSource === 'environment' || config.credentialsSource === 'none'
        ? '(unset)'
        : config.credentialsSource;
    case 'LISTINGS_BASE_URL':
    case 'LISTINGS_USER_EMAIL':
    case 'LISTINGS_AUTH_TOKEN': {
      if (config.credentialsSource !== 'environment') return '(unset)';
      const c = config.credentials[0];
      if (!c) return '(unset)';
      if (name === 'LISTINGS_BASE_URL') return c.baseUrl;
      if (name === 'LISTINGS_USER_EMAIL') return c.userEmail;
      return masked(c.authToken);
    }
    case 'SYNC_SCHEDULE':
      return config.syncSchedule;
    case 'SYNC_TIMEZONE':
      return config.syncTimezone;
    case 'SYNC_CONCURRENCY':
      return String(config.syncConcurrency);
    case 'SYNC_ACCOUNT_CONCURRENCY':
      return String(config.syncAccountConcurrency);
    case 'SYNC_REQUESTS_PER_SECOND':
      return config.syncRequestsPerSecond === undefined
        ? '0 (no cap)'
        : String(config.syncRequestsPerSecond);
    case 'WEBHOOK_SECRET':
      return config.webhookSecrets.length
        ? `[${config.webhookSecrets.length} secret(s) set]`
        : '(unset)';
    case 'WEBHOOK_BODY_LIMIT_BYTES':
      return String(config.webhookBodyLimitBytes);
    case 'WEBHOOK_REQUEST_TIMEOUT_MS':
      return String(config.webhookRequestTimeoutMs);
    case 'WEBHOOK_MAX_CONNECTIONS':
      return String(config.webhookMaxConnections);
    case 'LISTINGS_MAX_BODY_BYTES':
      return String(config.upstreamMaxBodyBytes);
    case 'DATABASE_CONNECT_TIMEOUT_MS':
      return String(config.databaseConnectTimeoutMs);
    case 'DATABASE_STATEMENT_TIMEOUT_MS':
      return String(config.databaseStatementTimeoutMs);
    case 'DATABASE_LOCK_TIMEOUT_MS':
      return String(config.databaseLockTimeoutMs);
    case 'ALERT_SINK_TIMEOUT_SECONDS':
      return String(config.alertSinkTimeoutMs / 1000);
    case 'ALERT_SYNC_DELIVERY_SECONDS':
      return String(config.alertSyncDeliveryMs / 1000);
    case 'ALERT_RULES_FILE':
      return config.sources.ALERT_RULES_FILE === 'default' ? '(unset: built-in rules)' : '(set)';
    case 'ALERT_WEBHOOK_URL':
      return config.alertWebhookUrl ? maskedUrl(config.alertWebhookUrl) : '(unset)';
    case 'ALERT_WEBHOOK_SECRET':
      return config.alertWebhookSecret ? masked(config.alertWebhookSecret) : '(unset)';
    case 'ALERT_SLACK_WEBHOOK_URL':
      return config.alertSlackWebhookUrl ? maskedUrl(config.alertSlackWebhookUrl) : '(unset)';
    case 'ALERT_DISPATCH_INTERVAL_SECONDS':
      return String(config.alertDispatchIntervalMs / 1000);
    case 'PORT':
      return String(config.port);
    case 'LOG_LEVEL':
      return config.logLevel;
  }
}

function masked(secret: string): string {
  return `[set, ${secret.length} characters]`;
}

/** Webhook URLs carry their secret in the path (Slack): show the origin only. */
function maskedUrl(url: string): string {
  try {
    return `${new URL(url).origin}/[REDACTED]`;
  } catch {
    return '[set]';
  }
}

/** Variable, effective value (secrets masked), source: one row per variable. */
export function configVariableRows(config: Config): string[][] {
  return CONFIG_VARIABLES.map((name) => {
    const value = effectiveValue(config, name);
    // The URL's password, whatever the case above printed.
    return [name, name === 'DATABASE_URL' ? redactText(value) : value, config.sources[name]];
  });
}

/** Name, base URL, e-mail, masked token and source: one row per credential. */
export function credentialRows(config: Config): string[][] {
  const from =
    config.credentialsSource === 'environment' ? 'env' : `file ${config.credentialsSource}`;
  return config.credentials.map((c) => [
    c.name,
    redactText(c.baseUrl),
    c.userEmail,
    masked(c.authToken),
    from,
  ]);
}
