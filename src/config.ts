/**
 * Configuration: parsed once from the environment and the credentials file, frozen, and
 * read nowhere else. Every error is a full sentence naming the variable and the fix, and
 * never repeats a secret's value.
 */
import { readFileSync } from 'node:fs';
import { validate as isValidCron } from 'node-cron';
import { z } from 'zod';
import {
  type AlertRules,
  AlertRulesError,
  DEFAULT_ALERT_RULES,
  loadAlertRulesFile,
} from './alerts/rules.ts';
import { withoutUserinfo } from './log.ts';

/** One API credential: `baseUrl` is everything before `/api/v2`. */
export interface Credential {
  name: string;
  baseUrl: string;
  authToken: string;
  userEmail: string;
}

export interface Config {
  /** postgres:// URL of the warehouse; undefined means the embedded PGlite. */
  databaseUrl: string | undefined;
  pgliteDataDir: string;
  credentials: readonly Credential[];
  /** Where the credentials came from, for messages: a file path, `environment`, or `none`. */
  credentialsSource: string;
  /** A cron expression (5 or 6 fields), or `off`: `serve` then runs no sync of its own. */
  syncSchedule: string;
  /** False when SYNC_SCHEDULE is `off` (the nightly load is a k8s CronJob; `serve` takes webhooks). */
  syncScheduleEnabled: boolean;
  syncTimezone: string;
  /** Requests in flight overall. */
  syncConcurrency: number;
  /** Requests in flight per credential. */
  syncAccountConcurrency: number;
  /** Optional cap on requests per second per credential; undefined means no cap. */
  syncRequestsPerSecond: number | undefined;
  /** The largest upstream response body, in bytes; a larger one fails its stream. */
  upstreamMaxBodyBytes: number;
  /** Raw zone reads older than this many days are pruned after a sync; undefined keeps all. */
  rawRetentionDays: number | undefined;
  /** PostgreSQL: time to open a connection, in milliseconds. */
  databaseConnectTimeoutMs: number;
  /** PostgreSQL: longest statement, in milliseconds; 0 means no limit. */
  databaseStatementTimeoutMs: number;
  /** PostgreSQL: longest wait for a row or table lock, in milliseconds; 0 means no limit. */
  databaseLockTimeoutMs: number;
  /** Shared secrets for `X-Service-Signature`; several allow rotation. Empty when unset. */
  webhookSecrets: readonly string[];
  webhookBodyLimitBytes: number;
  /** Time for a whole webhook request (headers and body) to arrive, in milliseconds. */
  webhookRequestTimeoutMs: number;
  /** Connections `serve` holds open at once; more are refused. */
  webhookMaxConnections: number;
  alertWebhookUrl: string | undefined;
  alertWebhookSecret: string | undefined;
  alertSlackWebhookUrl: string | undefined;
  /** How often `serve` sends pending alerts (besides after every sync), in milliseconds. */
  alertDispatchIntervalMs: number;
  /** The longest one alert sink request may take, in milliseconds. */
  alertSinkTimeoutMs: number;
  /** How long `sync` spends delivering its own run's alerts before leaving them to `serve`. */
  alertSyncDeliveryMs: number;
  /** The alert rules: `ALERT_RULES_FILE`, or the built-in defaults. */
  alertRules: AlertRules;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Where each known variable's value came from: the environment, or the default. */
  sources: Readonly<Record<ConfigVariable, 'env' | 'default'>>;
  /**
   * Environment variables that look like a misspelt setting (`DATABSE_URL`): a typo there
   * silently falls back to a default, so every command prints these before it starts.
   */
  warnings: readonly string[];
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

/**
 * The demo's own embedded warehouse (`npm start`): sandbox data never lands in the one a
 * real account syncs into. Read-only commands fall back to it (src/warehouse/open.ts).
 */
export const DEMO_PGLITE_DATA_DIR = './.data/demo';

const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

function httpUrl(what: string) {
  return z.string().superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `${what} must be an http:// or https:// URL` });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.addIssue({ code: 'custom', message: `${what} must be an http:// or https:// URL` });
    }
  });
}

const credentialSchema = z
  .object({
    name: z
      .string({ error: 'name is required (a short label such as "agency-east")' })
      .regex(CREDENTIAL_NAME, 'name must be 1-63 letters, digits, ".", "_" or "-"'),
    baseUrl: httpUrl('baseUrl')
      .transform((value) => value.replace(/\/+$/, ''))
      .refine((value) => !/\/api\/v2(\.json)?$/.test(value), {
        message: 'baseUrl must be everything before /api/v2 (remove the trailing /api/v2)',
      })
      // The path is appended to it, and it is stored in accounts.base_url: a query would
      // break every request's path and could carry a token into a table.
      .refine(
        (value) => {
          const url = URL.parse(value);
          return !url || (url.search === '' && url.hash === '' && !/[?#]/.test(value));
        },
        {
          message:
            'baseUrl must be everything before /api/v2, with no query (?…) or fragment (#…): the token goes in authToken',
        },
      ),
    authToken: z.string({ error: 'authToken is required' }).min(1, 'authToken must not be empty'),
    userEmail: z
      .string({ error: 'userEmail is required' })
      .regex(/^[^@\s]+@[^@\s]+$/, 'userEmail must be an e-mail address'),
  })
  .strict();

/**
 * The upstream account a credential reaches: its base URL (host case, userinfo and a
 * trailing slash aside) and its e-mail (case aside). Two credentials of one account
 * would write every business twice (two `business_versions` rows per change).
 */
function accountIdentity(credential: { baseUrl: string; userEmail: string }): string {
  const url = new URL(withoutUserinfo(credential.baseUrl));
  const base = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  return `${base} ${credential.userEmail.trim().toLowerCase()}`;
}

const credentialsFileSchema = z
  .array(credentialSchema, { error: 'the file must hold a JSON array of credentials' })
  .min(1, 'the file must list at least one credential')
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    const accounts = new Map<string, string>();
    list.forEach((credential, index) => {
      if (seen.has(credential.name)) {
        ctx.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `name "${credential.name}" is used twice; each credential needs its own name`,
        });
      }
      seen.add(credential.name);
      const identity = accountIdentity(credential);
      const first = accounts.get(identity);
      if (first !== undefined && first !== credential.name) {
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message:
            `credentials "${first}" and "${credential.name}" are the same account ` +
            `(baseUrl ${withoutUserinfo(credential.baseUrl)}, userEmail ${credential.userEmail}); ` +
            'keep one of them, or every business of that account is synced and versioned twice',
        });
      } else if (first === undefined) accounts.set(identity, credential.name);
    });
  });

function integer(variable: string, fallback: number, min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({
          code: 'custom',
          message: `${variable} must be a whole number from ${min} to ${max} (got "${value}")`,
        });
        return z.NEVER;
      }
      return parsed;
    });
}

function optionalUrl(variable: string) {
  return z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim() : undefined))
    .pipe(httpUrl(variable).optional());
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim() : undefined))
    .refine((value) => value === undefined || /^postgres(ql)?:\/\//.test(value), {
      message: 'DATABASE_URL must start with postgres:// or postgresql://',
    }),
  PGLITE_DATA_DIR: z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim() : './.data/pglite')),
  SYNC_SCHEDULE: z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim() : '0 3 * * *'))
    .transform((value) => (value.toLowerCase() === 'off' ? 'off' : value))
    .refine(
      (value) => value === 'off' || (/^(\S+\s+){4,5}\S+$/.test(value) && isValidCron(value)),
      {
        message:
          'SYNC_SCHEDULE must be a cron expression of 5 or 6 fields, such as "0 3 * * *", or "off"',
      },
    ),
  SYNC_TIMEZONE: z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim() : 'UTC'))
    .refine(
      (value) => {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: value });
          return true;
        } catch {
          return false;
        }
      },
      { message: 'SYNC_TIMEZONE must be an IANA time zone such as "UTC" or "Europe/Berlin"' },
    ),
  SYNC_CONCURRENCY: integer('SYNC_CONCURRENCY', 16, 1, 1024),
  SYNC_ACCOUNT_CONCURRENCY: integer('SYNC_ACCOUNT_CONCURRENCY', 8, 1, 1024),
  SYNC_REQUESTS_PER_SECOND: integer('SYNC_REQUESTS_PER_SECOND', 0, 0, 100_000),
  // 16 MiB: real reads are tens of kilobytes (see DEFAULT_MAX_BODY_BYTES in the client).
  LISTINGS_MAX_BODY_BYTES: integer('LISTINGS_MAX_BODY_BYTES', 16 * 1024 * 1024, 1024, 1024 ** 3),
  // 0 keeps the raw zone whole: history that is pruned can never be replayed.
  RAW_RETENTION_DAYS: integer('RAW_RETENTION_DAYS', 0, 0, 36_500),
  DATABASE_CONNECT_TIMEOUT_MS: integer('DATABASE_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
  // A business is written by a few bulk statements that take milliseconds; a minute means a
  // database that is stuck, not one that is busy. 0 turns the limit off (a long migration).
  DATABASE_STATEMENT_TIMEOUT_MS: integer('DATABASE_STATEMENT_TIMEOUT_MS', 60_000, 0, 86_400_000),
  DATABASE_LOCK_TIMEOUT_MS: integer('DATABASE_LOCK_TIMEOUT_MS', 10_000, 0, 86_400_000),
  WEBHOOK_SECRET: z.string().optional(),
  WEBHOOK_BODY_LIMIT_BYTES: integer(
    'WEBHOOK_BODY_LIMIT_BYTES',
    1024 * 1024,
    1024,
    64 * 1024 * 1024,
  ),
  // 30 s for headers and body together: a real delivery is a few hundred bytes; a sender
  // dripping its body slowly holds a connection no longer than this.
  WEBHOOK_REQUEST_TIMEOUT_MS: integer('WEBHOOK_REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
  // Well under the usual 1,024 open-file limit, which the database pool and the upstream
  // client share with the server.
  WEBHOOK_MAX_CONNECTIONS: integer('WEBHOOK_MAX_CONNECTIONS', 512, 1, 65_535),
  ALERT_WEBHOOK_URL: optionalUrl('ALERT_WEBHOOK_URL'),
  ALERT_WEBHOOK_SECRET: z.string().optional(),
  ALERT_SLACK_WEBHOOK_URL: optionalUrl('ALERT_SLACK_WEBHOOK_URL'),
  // One minute: a sink that was down is retried soon after its backoff ends, and an idle
  // `serve` costs one small query a minute.
  ALERT_DISPATCH_INTERVAL_SECONDS: integer('ALERT_DISPATCH_INTERVAL_SECONDS', 60, 1, 86_400),
  // Ten seconds: long enough for Slack on a bad day, short enough that a hanging receiver
  // costs little (docs/operations.md, "Alert delivery").
  ALERT_SINK_TIMEOUT_SECONDS: integer('ALERT_SINK_TIMEOUT_SECONDS', 10, 1, 300),
  // Thirty seconds: a run's digest goes out at once; a sink slower than that is left to
  // `serve`, and the CronJob's pod ends.
  ALERT_SYNC_DELIVERY_SECONDS: integer('ALERT_SYNC_DELIVERY_SECONDS', 30, 0, 3600),
  ALERT_RULES_FILE: z.string().optional(),
  PORT: integer('PORT', 8080, 0, 65535),
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((value) => (value?.trim() ? value.trim().toLowerCase() : 'info'))
    .pipe(z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` })),
  LISTINGS_CREDENTIALS_FILE: z.string().optional(),
  LISTINGS_BASE_URL: z.string().optional(),
  LISTINGS_AUTH_TOKEN: z.string().optional(),
  LISTINGS_USER_EMAIL: z.string().optional(),
});

/** Every variable the configuration reads. */
export type ConfigVariable = keyof typeof envSchema.shape;
export const CONFIG_VARIABLES = Object.keys(envSchema.shape) as ConfigVariable[];

/**
 * Edit distance with adjacent transpositions counted as one edit (`PROT` → `PORT`), the
 * commonest typo; small strings only (variable names).
 */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, at(i - 2, j - 2) + 1);
      }
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * Names in `env` that are not settings but are within two edits of one (one edit for
 * short names, so `PORTS` is caught and `HOME` is not mistaken for anything).
 */
export function misspeltVariables(
  env: Record<string, string | undefined>,
): { name: string; meant: ConfigVariable }[] {
  const known = new Set<string>(CONFIG_VARIABLES);
  const found: { name: string; meant: ConfigVariable }[] = [];
  for (const name of Object.keys(env)) {
    if (known.has(name) || env[name] === undefined) continue;
    const upper = name.toUpperCase();
    let best: { meant: ConfigVariable; distance: number } | undefined;
    for (const candidate of CONFIG_VARIABLES) {
      const distance = upper === candidate ? 0.5 : editDistance(upper, candidate);
      if (!best || distance < best.distance) best = { meant: candidate, distance };
    }
    const allowed = (best?.meant.length ?? 0) <= 6 ? 1 : 2;
    if (best && best.distance <= allowed) found.push({ name, meant: best.meant });
  }
  return found;
}

function describeIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length ? `${prefix}${issue.path.join('.')}: ` : prefix;
      return `  - ${where}${issue.message}`;
    })
    .join('\n');
}

function readCredentials(env: z.output<typeof envSchema>): {
  credentials: Credential[];
  source: string;
} {
  const file = env.LISTINGS_CREDENTIALS_FILE?.trim();
  const inline = [env.LISTINGS_BASE_URL, env.LISTINGS_AUTH_TOKEN, env.LISTINGS_USER_EMAIL];
  const inlineGiven = inline.some((value) => value?.trim());
  if (file && inlineGiven) {
    throw new ConfigError(
      'Both LISTINGS_CREDENTIALS_FILE and LISTINGS_BASE_URL/LISTINGS_AUTH_TOKEN/LISTINGS_USER_EMAIL are set. ' +
        'Use one: the file for several credentials, the three variables for one.',
    );
  }
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (cause) {
      throw new ConfigError(
        `LISTINGS_CREDENTIALS_FILE names "${file}", which cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}). ` +
          'Point it at a JSON file holding an array of {name, baseUrl, authToken, userEmail}.',
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ConfigError(
        `LISTINGS_CREDENTIALS_FILE "${file}" is not valid JSON. It must hold an array of {name, baseUrl, authToken, userEmail}.`,
      );
    }
    const parsed = credentialsFileSchema.safeParse(json);
    if (!parsed.success) {
      throw new ConfigError(
        `LISTINGS_CREDENTIALS_FILE "${file}" is not a valid credentials file:\n${describeIssues(parsed.error, 'entry ')}`,
      );
    }
    return { credentials: parsed.data, source: file };
  }
  if (inlineGiven) {
    const missing = (
      [
        ['LISTINGS_BASE_URL', env.LISTINGS_BASE_URL],
        ['LISTINGS_AUTH_TOKEN', env.LISTINGS_AUTH_TOKEN],
        ['LISTINGS_USER_EMAIL', env.LISTINGS_USER_EMAIL],
      ] as const
    )
      .filter(([, value]) => !value?.trim())
      .map(([name]) => name);
    if (missing.length) {
      throw new ConfigError(
        `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not set. ` +
          'LISTINGS_BASE_URL, LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL go together.',
      );
    }
    const parsed = credentialSchema.safeParse({
      name: 'default',
      baseUrl: env.LISTINGS_BASE_URL?.trim(),
      authToken: env.LISTINGS_AUTH_TOKEN?.trim(),
      userEmail: env.LISTINGS_USER_EMAIL?.trim(),
    });
    if (!parsed.success) {
      const text = describeIssues(parsed.error)
        .replace('baseUrl', 'LISTINGS_BASE_URL')
        .replace('userEmail', 'LISTINGS_USER_EMAIL')
        .replace('authToken', 'LISTINGS_AUTH_TOKEN');
      throw new ConfigError(`The credential from the environment is not valid:\n${text}`);
    }
    return { credentials: [parsed.data], source: 'environment' };
  }
  return { credentials: [], source: 'none' };
}

/**
 * Parse the configuration from `env` (the process environment by default). Throws a
 * `ConfigError` naming every variable that is wrong.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`The configuration is not valid:\n${describeIssues(parsed.error)}`);
  }
  const e = parsed.data;
  const { credentials, source } = readCredentials(e);
  const webhookSecrets = (e.WEBHOOK_SECRET ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter(Boolean);
  const sources = Object.fromEntries(
    CONFIG_VARIABLES.map((name) => [name, env[name]?.trim() ? 'env' : 'default']),
  ) as Record<ConfigVariable, 'env' | 'default'>;
  const warnings = misspeltVariables(env).map(
    ({ name, meant }) =>
      `${name} is set, but listings-sync reads no such variable: did you mean ${meant}?` +
      (sources[meant] === 'env' ? '' : ` (${meant} is not set, so its default applies)`),
  );
  return Object.freeze({
    sources: Object.freeze(sources),
    warnings: Object.freeze(warnings),
    databaseUrl: e.DATABASE_URL,
    pgliteDataDir: e.PGLITE_DATA_DIR,
    credentials: Object.freeze(credentials.map((c) => Object.freeze(c))),
    credentialsSource: source,
    syncSchedule: e.SYNC_SCHEDULE,
    syncScheduleEnabled: e.SYNC_SCHEDULE !== 'off',
    syncTimezone: e.SYNC_TIMEZONE,
    syncConcurrency: e.SYNC_CONCURRENCY,
    syncAccountConcurrency: e.SYNC_ACCOUNT_CONCURRENCY,
    syncRequestsPerSecond: e.SYNC_REQUESTS_PER_SECOND || undefined,
    upstreamMaxBodyBytes: e.LISTINGS_MAX_BODY_BYTES,
    rawRetentionDays: e.RAW_RETENTION_DAYS || undefined,
    databaseConnectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    databaseStatementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    databaseLockTimeoutMs: e.DATABASE_LOCK_TIMEOUT_MS,
    webhookSecrets: Object.freeze(webhookSecrets),
    webhookBodyLimitBytes: e.WEBHOOK_BODY_LIMIT_BYTES,
    webhookRequestTimeoutMs: e.WEBHOOK_REQUEST_TIMEOUT_MS,
    webhookMaxConnections: e.WEBHOOK_MAX_CONNECTIONS,
    alertWebhookUrl: e.ALERT_WEBHOOK_URL,
    alertWebhookSecret: e.ALERT_WEBHOOK_SECRET?.trim() || undefined,
    alertSlackWebhookUrl: e.ALERT_SLACK_WEBHOOK_URL,
    alertDispatchIntervalMs: e.ALERT_DISPATCH_INTERVAL_SECONDS * 1000,
    alertSinkTimeoutMs: e.ALERT_SINK_TIMEOUT_SECONDS * 1000,
    alertSyncDeliveryMs: e.ALERT_SYNC_DELIVERY_SECONDS * 1000,
    alertRules: readAlertRules(e.ALERT_RULES_FILE),
    port: e.PORT,
    logLevel: e.LOG_LEVEL,
  });
}

/** The rules file's rules, or the defaults; a bad file is a ConfigError naming rule and field. */
function readAlertRules(file: string | undefined): AlertRules {
  if (!file?.trim()) return DEFAULT_ALERT_RULES;
  try {
    return loadAlertRulesFile(file.trim());
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
