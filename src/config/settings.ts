/**
 * The table of settings: every environment variable listings-sync reads, once, with its
 * rule and default, its meaning, whether it is a secret, and the commands that read it.
 * The environment schema, the `Config` object, `listings-sync config`, every `--help`
 * "Environment:" block and the table in docs/configuration.md ("Settings") derive
 * from it. A new setting is one entry here.
 */
import { z } from 'zod';
import { isUnreadableUrl, UNREADABLE_DATABASE_URL } from '../log.ts';
import {
  cron,
  integer,
  list,
  listenAddress,
  oneOf,
  optionalText,
  optionalUrl,
  postgresUrl,
  type RuleParts,
  schemaName,
  seconds,
  text,
  timeZone,
} from './rules.ts';

/** The top-level commands a setting may be read by (`config` reads every one). */
export const COMMANDS = [
  'sandbox',
  'migrate',
  'sync',
  'serve',
  'alerts',
  'demo',
  'check',
  'config',
  'runs',
  'report',
  'api',
  'keywords',
  'replay',
  'raw',
  'warehouse',
] as const;
export type CommandName = (typeof COMMANDS)[number];

/**
 * How `listings-sync config` shows a secret: `whole` as `[set, N characters]`,
 * `list` as `[N secret(s) set]`, `url-path` as the origin alone (Slack carries its
 * secret in the path), `url-password` with the userinfo password replaced.
 */
export type Masking = 'whole' | 'list' | 'url-path' | 'url-password';

export interface Setting {
  /** The `Config` field holding the parsed value; null when loadConfig derives it (credentials). */
  field: string | null;
  /** The schema of the variable called `name` (src/config/rules.ts). */
  rule: (name: string) => z.ZodType;
  /** As written in the environment; undefined: unset by default. */
  default: number | string | undefined;
  defaultText?: string;
  /** One line, for `--help`. */
  meaning: string;
  /** The longer text of docs/configuration.md, where the line is not enough. */
  doc?: string;
  secret?: Masking;
  commands: readonly CommandName[];
  show?: (value: never) => string;
  /** A whole number's range (src/config/rules.ts, `integer`). */
  bounds?: { min: number; max: number };
  /**
   * The setting bounds what one answer may bring: this is the bound's name in the client's
   * `bounds` (src/api/bounds.ts, `AnswerBounds`, which derives from these names).
   */
  answerBound?: string;
}

/** Everything that opens the configured warehouse (src/warehouse/driver/open.ts). */
const WAREHOUSE: readonly CommandName[] = [
  'migrate',
  'sync',
  'serve',
  'alerts',
  'check',
  'runs',
  'report',
  'api',
  'keywords',
  'replay',
  'raw',
  'warehouse',
];
/** Everything that calls the upstream with the configured credentials. */
const CREDENTIALS: readonly CommandName[] = ['sync', 'serve', 'check', 'api', 'keywords'];
/** Everything that runs a sync (the demo runs one against its own sandbox). */
const SYNCS: readonly CommandName[] = ['sync', 'serve', 'demo', 'api', 'keywords'];
/** Everything that sends alerts to the sinks. */
const SENDS_ALERTS: readonly CommandName[] = ['sync', 'serve', 'alerts'];
/** What reaches the upstream or an alert sink, through the proxy when one is set. */
const PROXIED: readonly CommandName[] = [...new Set([...SYNCS, ...SENDS_ALERTS, 'check'] as const)];
/** Everything that raises alerts under the rules, and `check`, which validates the file. */
const RAISES_ALERTS: readonly CommandName[] = [
  'sync',
  'serve',
  'alerts',
  'check',
  'api',
  'keywords',
  'replay',
];
const LOGS: readonly CommandName[] = [
  'sandbox',
  'migrate',
  'sync',
  'serve',
  'demo',
  'api',
  'keywords',
  'replay',
  'warehouse',
];

const syncRequestsPerSecond: RuleParts<number | undefined> = (() => {
  const parts = integer({ default: 0, min: 0, max: 100_000, defaultText: '0: none' });
  return {
    ...parts,
    rule: (name: string) => parts.rule(name).transform((value) => value || undefined),
    show: (value: number | undefined) => (value === undefined ? '0 (no cap)' : String(value)),
  };
})();

/**
 * `serve`'s metrics port while METRICS_PORT is unset and PORT is not 0: the port
 * registered for OpenTelemetry's Prometheus exporter (docs/serve.md, "Metrics").
 */
export const DEFAULT_METRICS_PORT = 9464;

/** OPENLINEAGE_PARENT_ID: `namespace/name/run_id`, the name itself may hold slashes. */
const PARENT_ID =
  /^[^/]+\/.+\/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Everything that writes an OpenLineage run event (docs/lineage.md): the runs of a sync. */
const LINEAGE: readonly CommandName[] = ['sync', 'serve', 'demo', 'replay'];

/**
 * Seconds as the OpenLineage clients write a transport's timeout (a decimal number, such as
 * `0.5`), milliseconds in the code.
 */
function decimalSeconds(options: { default: number; min: number; max: number }): RuleParts<number> {
  const { min, max } = options;
  return {
    default: options.default,
    defaultText: String(options.default),
    show: (ms: number) => String(ms / 1000),
    rule: (name) =>
      z
        .string()
        .optional()
        .transform((value, ctx) => {
          if (value === undefined || value.trim() === '') return options.default * 1000;
          const parsed = Number(value.trim());
          if (!/^\d+(\.\d+)?$/.test(value.trim()) || parsed < min || parsed > max) {
            ctx.addIssue({
              code: 'custom',
              message: `${name} must be a number of seconds from ${min} to ${max} (got "${value}")`,
            });
            return z.NEVER;
          }
          return Math.round(parsed * 1000);
        }),
  };
}

export const SETTINGS = {
  DATABASE_URL: {
    ...postgresUrl('unset: the embedded PGlite in PGLITE_DATA_DIR'),
    // A URL pg would split in the wrong place is refused, naming no part of it.
    rule: (name: string) =>
      postgresUrl('')
        .rule(name)
        .refine(
          (value) =>
            value === undefined || !/^postgres(ql)?:\/\//.test(value) || !isUnreadableUrl(value),
          { message: UNREADABLE_DATABASE_URL },
        ),
    field: 'databaseUrl',
    meaning: 'postgres:// URL of the warehouse',
    doc: '`postgres://` URL of the warehouse; its password, and only its password, is never printed (errors name the user, host, port and database). A password with an unencoded `/`, `#` or `?` makes the URL unparseable: every command and `check` refuse it, printing no part of it; percent-encode them (`%2F`, `%23`, `%3F`; `%40` for `@`)',
    secret: 'url-password',
    commands: [...WAREHOUSE, 'demo'],
    show: (value: string | undefined) => value ?? '(unset: embedded PGlite)',
  },
  DATABASE_SCHEMA: {
    ...schemaName('unset: public (or the search_path DATABASE_URL sets)'),
    field: 'databaseSchema',
    meaning: 'the schema of the database that holds the warehouse',
    doc: "the schema of the database that holds the warehouse, for every command (the connection's `search_path`); `migrate` creates it when missing, and every other command refuses one that does not exist, naming the schemas of that database that hold a warehouse. `DATABASE_SCHEMA=listings_demo` reads the PostgreSQL demo, which always loads into `listings_demo` whatever this says (a demo never writes into your warehouse's schema). Not together with a `search_path` in DATABASE_URL's `options`",
    commands: WAREHOUSE,
    show: (value: string | undefined) => value ?? '(unset: public)',
  },
  PGLITE_DATA_DIR: {
    ...text('./.data/pglite'),
    field: 'pgliteDataDir',
    meaning: 'where the embedded database lives',
    doc: 'where the embedded database lives; one process at a time (the pid file `.listings-sync.pid`, created atomically, guards it; one left by a dead process is taken over by exactly one newcomer; run side-by-side commands against PostgreSQL)',
    commands: WAREHOUSE,
  },
  LISTINGS_CREDENTIALS_FILE: {
    ...optionalText(),
    field: null,
    meaning: 'JSON file of credentials [{name, baseUrl, authToken, userEmail}]',
    doc: 'JSON array of `{name, baseUrl, authToken, userEmail}`; `baseUrl` is everything before `/api/v2`, with no query or fragment (refused: the token goes in `authToken`). Two credentials with the same base URL and e-mail (one account under two names) are refused, naming both. A `user:password@` in `baseUrl` is stored and printed without it. A JSON syntax error is reported with its line and column and an excerpt of the line, values masked',
    commands: CREDENTIALS,
  },
  LISTINGS_BASE_URL: {
    ...optionalText(),
    field: null,
    meaning: 'one credential named "default", instead of the file: everything before /api/v2',
    secret: 'url-password',
    commands: CREDENTIALS,
  },
  LISTINGS_AUTH_TOKEN: {
    ...optionalText(),
    field: null,
    meaning: "that credential's auth token",
    secret: 'whole',
    commands: CREDENTIALS,
  },
  LISTINGS_USER_EMAIL: {
    ...optionalText(),
    field: null,
    meaning: "that credential's user e-mail",
    commands: CREDENTIALS,
  },
  HTTPS_PROXY: {
    ...optionalText(),
    field: null,
    meaning: 'HTTP proxy for https:// upstream requests and alert deliveries (https_proxy wins)',
    doc: 'the proxy for `https://` upstream requests and alert deliveries; the lowercase `https_proxy` wins when both are set, as curl reads them; a password in it is never printed (docs/deploy.md, "Behind an HTTP proxy")',
    secret: 'url-password',
    commands: PROXIED,
  },
  HTTP_PROXY: {
    ...optionalText(),
    field: null,
    meaning: 'HTTP proxy for http:// requests, and for https:// ones when HTTPS_PROXY is unset',
    secret: 'url-password',
    commands: PROXIED,
  },
  NO_PROXY: {
    ...optionalText(),
    field: null,
    meaning: 'hosts that go direct, comma-separated (a leading . or * matches subdomains)',
    commands: PROXIED,
  },
  SYNC_SCHEDULE: {
    ...cron('0 3 * * *'),
    field: 'syncSchedule',
    meaning: 'cron of the nightly sync in `serve`, or "off" (webhooks and alerts only)',
    commands: ['serve'],
  },
  SYNC_TIMEZONE: {
    ...timeZone('UTC'),
    field: 'syncTimezone',
    meaning: 'time zone of SYNC_SCHEDULE',
    commands: ['serve'],
  },
  SYNC_CONCURRENCY: {
    ...integer({ default: 16, min: 1, max: 1024 }),
    field: 'syncConcurrency',
    meaning: 'upstream requests in flight overall, and businesses synced at once overall',
    doc: "upstream requests in flight overall; a run (`sync`, or `serve`'s schedule) also caps businesses in flight (each writes in its own transaction) at this number. The PostgreSQL pool holds `SYNC_CONCURRENCY` + 4 connections (the sync lock, reference data, `serve`'s intake and dispatcher)",
    commands: SYNCS,
  },
  SYNC_ACCOUNT_CONCURRENCY: {
    ...integer({ default: 8, min: 1, max: 1024 }),
    field: 'syncAccountConcurrency',
    meaning:
      'upstream requests in flight per credential, and businesses synced at once per credential',
    doc: 'upstream requests in flight per credential; a run also syncs at most this many businesses of one credential at once (one number for both: a business in flight has at least one request in flight)',
    commands: SYNCS,
  },
  SYNC_REQUESTS_PER_SECOND: {
    ...syncRequestsPerSecond,
    field: 'syncRequestsPerSecond',
    meaning: 'cap on requests per second per credential (0: none)',
    commands: SYNCS,
  },
  LISTINGS_MAX_BODY_BYTES: {
    // 16 MiB: the largest real read (a business's reviews or listings) is tens of
    // kilobytes, and a few such bodies in flight still fit the CLI's 256 MB heap (a body
    // is held as text and then parsed, about 3-5x its size in memory).
    ...integer({
      default: 16 * 1024 * 1024,
      min: 1024,
      max: 1024 ** 3,
      defaultText: '16777216 (16 MiB)',
    }),
    field: 'upstreamMaxBodyBytes',
    meaning: 'largest upstream response body read, in bytes; see "Limits"',
    commands: SYNCS,
  },
  LISTINGS_REQUEST_TIMEOUT_SECONDS: {
    // Real reads take well under a second; two minutes means a body that drips, not a
    // slow one (undici's own timeouts measure inactivity, not the whole request).
    ...seconds({ default: 120, min: 1, max: 3_600 }),
    field: 'upstreamRequestTimeoutMs',
    meaning: 'longest time one upstream request may take in all, in seconds; see "Limits"',
    commands: SYNCS,
  },
  // Bounds on what one answer may bring, counted before it is validated: generous for
  // real accounts (tens of keywords, a handful of search sites, hundreds of listings and
  // reviews); an answer over one is refused whole and quarantined (docs/configuration.md, "Limits").
  LISTINGS_MAX_KEYWORDS_PER_BUSINESS: {
    ...integer({ default: 2_000, min: 1, max: 1_000_000 }),
    field: 'upstreamMaxKeywordsPerBusiness',
    answerBound: 'keywordsPerBusiness',
    meaning: 'most keywords one rankings or keywords answer may bring; see "Limits"',
    commands: SYNCS,
  },
  LISTINGS_MAX_SITES_PER_KEYWORD: {
    ...integer({ default: 50, min: 1, max: 10_000 }),
    field: 'upstreamMaxSitesPerKeyword',
    answerBound: 'sitesPerKeyword',
    meaning: 'most search sites one keyword of a rankings answer may bring; see "Limits"',
    commands: SYNCS,
  },
  LISTINGS_MAX_RANK_SERIES_PER_BUSINESS: {
    // Keywords × sites is what a rankings answer expands into (a series, and an
    // observation a night, each): 2,000 keywords × 50 sites, each within its own bound,
    // peaked at 364 MB RSS; 10,000 keeps a sync under its heap (`npm run bench:answer-shape`).
    ...integer({ default: 10_000, min: 1, max: 1_000_000 }),
    field: 'upstreamMaxRankSeriesPerBusiness',
    answerBound: 'rankSeriesPerBusiness',
    meaning: 'most keyword × site pairs one rankings answer may bring; see "Limits"',
    commands: SYNCS,
  },
  LISTINGS_MAX_REVIEWS_PER_ANSWER: {
    ...integer({ default: 20_000, min: 1, max: 1_000_000 }),
    field: 'upstreamMaxReviewsPerAnswer',
    answerBound: 'reviewsPerAnswer',
    meaning: 'most reviews one reviews answer may bring; see "Limits"',
    commands: SYNCS,
  },
  LISTINGS_MAX_LISTINGS_PER_ANSWER: {
    ...integer({ default: 2_000, min: 1, max: 1_000_000 }),
    field: 'upstreamMaxListingsPerAnswer',
    answerBound: 'listingsPerAnswer',
    meaning: 'most listings one listings answer may bring; see "Limits"',
    commands: SYNCS,
  },
  RAW_RETENTION_DAYS: {
    // 0 keeps the raw zone whole: history that is pruned can never be replayed.
    ...integer({ default: 0, min: 0, max: 36_500, defaultText: '0: keep every read' }),
    field: 'rawRetentionDays',
    meaning:
      "days of raw zone runs a full run keeps whole, on each account's own clock; older runs keep each business's latest reads (0: all)",
    doc: "days of raw zone runs kept whole when a full run (`sync` or `serve`'s schedule; not a shard) ends; not when it was stopped with work still in flight after its grace (the next full run prunes). Counted on each account's own clock, back from its newest read tied to no business (its business list, reference data, response polls), which carries the upstream's `Date`: an upstream that lags ours keeps its reads. A run with any read inside the window is kept whole; of an older run, each business's latest reads (no later run read and committed that business) and the business list with them stay, the rest goes, then every body no read refers to. Nights pruned can no longer be replayed or shown whole; `raw stats` names the oldest night replay can rebuild (0: keep everything)",
    commands: ['sync', 'serve'],
  },
  DATABASE_CONNECT_TIMEOUT_MS: {
    ...integer({ default: 10_000, min: 100, max: 600_000 }),
    field: 'databaseConnectTimeoutMs',
    meaning: 'time to open a PostgreSQL connection, in ms; see "Limits"',
    commands: WAREHOUSE,
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    // A business is written by a few bulk statements that take milliseconds; a minute
    // means a database that is stuck, not one that is busy. 0 turns the limit off.
    ...integer({ default: 60_000, min: 0, max: 86_400_000 }),
    field: 'databaseStatementTimeoutMs',
    meaning: 'longest PostgreSQL statement, in ms, 0 for none; see "Limits"',
    commands: WAREHOUSE,
  },
  DATABASE_LOCK_TIMEOUT_MS: {
    ...integer({ default: 10_000, min: 0, max: 86_400_000 }),
    field: 'databaseLockTimeoutMs',
    meaning: 'longest wait for a row or table lock, in ms, 0 for none; see "Limits"',
    commands: WAREHOUSE,
  },
  WEBHOOK_SECRET: {
    ...list(),
    field: 'webhookSecrets',
    meaning: 'shared secret(s) for X-Service-Signature, comma-separated to rotate',
    defaultText: 'required by `serve`',
    secret: 'list',
    commands: ['serve'],
  },
  WEBHOOK_BODY_LIMIT_BYTES: {
    ...integer({ default: 1024 * 1024, min: 1024, max: 64 * 1024 * 1024 }),
    field: 'webhookBodyLimitBytes',
    meaning: 'largest webhook body taken, in bytes',
    commands: ['serve'],
  },
  WEBHOOK_REQUEST_TIMEOUT_MS: {
    // 30 s for headers and body together: a real delivery is a few hundred bytes; a
    // sender dripping its body slowly holds a connection no longer than this.
    ...integer({ default: 30_000, min: 100, max: 600_000 }),
    field: 'webhookRequestTimeoutMs',
    meaning: 'time to receive a whole webhook request, in ms; see "Limits"',
    commands: ['serve'],
  },
  WEBHOOK_MAX_CONNECTIONS: {
    // Well under the usual 1,024 open-file limit, which the database pool and the
    // upstream client share with the server.
    ...integer({ default: 512, min: 1, max: 65_535 }),
    field: 'webhookMaxConnections',
    meaning: 'connections `serve` holds open at once; see "Limits"',
    commands: ['serve'],
  },
  WEBHOOK_MAX_IN_FLIGHT: {
    // A delivery is one insert of milliseconds: 64 at once keeps the database pool busy
    // and answers the rest 503 + Retry-After long before 512 connections are open
    // (docs/benchmarks.md, "Webhooks at load").
    ...integer({ default: 64, min: 1, max: 65_535 }),
    field: 'webhookMaxInFlight',
    meaning: 'webhook deliveries handled at once; more are answered 503; see "Limits"',
    doc: 'webhook deliveries `serve` handles at once; a further one is answered `503` with `Retry-After: 1` before its body is read (counted `overloaded`); keep it under `WEBHOOK_MAX_CONNECTIONS`, past which a connection is closed unanswered. See "Limits"',
    commands: ['serve'],
  },
  ALERT_WEBHOOK_URL: {
    ...optionalUrl('none: alerts stay in the table and the log'),
    field: 'alertWebhookUrl',
    meaning: 'alert sink: a signed JSON webhook',
    secret: 'url-path',
    commands: SENDS_ALERTS,
  },
  ALERT_WEBHOOK_SECRET: {
    ...optionalText('required with ALERT_WEBHOOK_URL'),
    field: 'alertWebhookSecret',
    meaning: "that webhook's signing secret (alerts are signed)",
    secret: 'whole',
    commands: SENDS_ALERTS,
  },
  ALERT_SLACK_WEBHOOK_URL: {
    ...optionalUrl('none: alerts stay in the table and the log'),
    field: 'alertSlackWebhookUrl',
    meaning: 'alert sink: a Slack incoming webhook',
    secret: 'url-path',
    commands: SENDS_ALERTS,
  },
  ALERT_DISPATCH_INTERVAL_SECONDS: {
    // One minute: a sink that was down is retried soon after its backoff ends, and an
    // idle `serve` costs one small query a minute.
    ...seconds({ default: 60, min: 1, max: 86_400 }),
    field: 'alertDispatchIntervalMs',
    meaning: 'how often `serve` sends pending alerts, in seconds',
    doc: 'how often `serve` checks `sync_runs` for the `sync_failed`/`sync_stale` rules and sends alerts due for (re)delivery, in seconds',
    commands: ['serve'],
  },
  ALERT_SINK_TIMEOUT_SECONDS: {
    // Ten seconds: long enough for Slack on a bad day, short enough that a hanging
    // receiver costs little (docs/alerts.md, "Delivery").
    ...seconds({ default: 10, min: 1, max: 300 }),
    field: 'alertSinkTimeoutMs',
    meaning: 'longest wait for one alert sink to answer, in seconds',
    commands: SENDS_ALERTS,
  },
  ALERT_SYNC_DELIVERY_SECONDS: {
    // Thirty seconds: a run's digest goes out at once; a sink slower than that is left
    // to `serve`, and the CronJob's pod ends.
    ...seconds({ default: 30, min: 0, max: 3600 }),
    field: 'alertSyncDeliveryMs',
    meaning:
      "how long `sync` spends delivering its run's alerts before leaving them to `serve`, in seconds",
    commands: ['sync'],
  },
  ALERT_BACKLOG: {
    // Skip by default: a sink configured later would otherwise open with digests of past
    // runs, old news that reads as new; the skipped alerts stay listed by `alerts` and
    // `alerts send-backlog` sends them (docs/alerts.md, "A sink added later").
    ...oneOf(['skip', 'send'], 'skip'),
    field: 'alertBacklog',
    meaning:
      'alerts raised before a sink is first configured: skip (not sent, listed as skipped) or send',
    doc: 'what a sink does, the first time it is configured, with the alerts raised before: `skip` marks them not sent for it (`listings-sync alerts` lists them as skipped; `alerts send-backlog` sends them), `send` delivers them. Decided once per sink name, when a `serve` or `sync` first runs with it',
    commands: SENDS_ALERTS,
  },
  ALERT_RULES_FILE: {
    ...optionalText('unset: the built-in rules'),
    field: 'alertRulesFile',
    meaning: 'JSON or YAML file of alert rules, at most 1 MiB',
    doc: 'alert rules, JSON or YAML ("Alert rules" below), at most 1 MiB; a bad or larger file is exit 1, an empty or `null` one a warning',
    commands: RAISES_ALERTS,
    show: (value: string | undefined) => value ?? '(unset: built-in rules)',
  },
  PORT: {
    ...integer({ default: 8080, min: 0, max: 65535 }),
    field: 'port',
    meaning: '`serve` HTTP port',
    commands: ['serve'],
  },
  LISTEN_ADDRESS: {
    // Every interface: in a container the webhooks come from outside (docs/serve.md).
    ...listenAddress('0.0.0.0'),
    field: 'listenAddress',
    meaning: '`serve` address for PORT (webhooks, probes): an IP address',
    doc: 'the address `serve` binds PORT on (`POST /webhooks`, `/healthz`, `/readyz`): an IPv4 or IPv6 address; `0.0.0.0` every interface, `127.0.0.1` this machine only (behind a proxy on the same host)',
    commands: ['serve'],
  },
  METRICS_LISTEN_ADDRESS: {
    // Every interface: Prometheus and the kubelet reach a pod on its own IP; outside a
    // cluster, 127.0.0.1 keeps /metrics on the machine (docs/serve.md).
    ...listenAddress('0.0.0.0'),
    field: 'metricsListenAddress',
    meaning: '`serve` address for METRICS_PORT (/metrics, probes): an IP address',
    doc: 'the address `serve` binds METRICS_PORT on (`/metrics`, `/healthz`, `/readyz`): an IPv4 or IPv6 address; `0.0.0.0` every interface (a pod, scraped on its IP), `127.0.0.1` this machine only',
    commands: ['serve'],
  },
  METRICS_PORT: {
    // Unset is told apart from DEFAULT_METRICS_PORT so that PORT=0, a free port, gives a
    // free metrics port too: side-by-side servers never contend for one.
    // src/serve/server.ts resolves it (docs/serve.md).
    default: undefined,
    defaultText: `${DEFAULT_METRICS_PORT}; a free port when PORT is 0`,
    rule: (name: string) =>
      integer({ default: -1, min: 0, max: 65535 })
        .rule(name)
        .transform((port) => (port === -1 ? undefined : port)),
    field: 'metricsPort',
    meaning: '`serve` port for /metrics (and /healthz, /readyz), apart from the webhooks',
    doc: '`serve` port for `GET /metrics`, `/healthz` and `/readyz`, a listener apart from the public webhook port: `/metrics` is not served on PORT. Must differ from PORT',
    commands: ['serve'],
    show: (value: number | undefined) =>
      value === undefined ? `${DEFAULT_METRICS_PORT} (unset)` : String(value),
  },
  OPENLINEAGE_URL: {
    ...optionalUrl('unset: no lineage events over HTTP'),
    field: 'openLineageUrl',
    meaning: 'OpenLineage HTTP transport: the receiver, such as Marquez (docs/lineage.md)',
    doc: 'the OpenLineage receiver run events are POSTed to (Marquez: `http://localhost:5000`), as the OpenLineage clients name it; unset (and no file transport), nothing of lineage is loaded (docs/lineage.md)',
    secret: 'url-password',
    commands: LINEAGE,
  },
  OPENLINEAGE_ENDPOINT: {
    ...text('api/v1/lineage'),
    field: 'openLineageEndpoint',
    meaning: "the path under OPENLINEAGE_URL events go to, as the OpenLineage clients' default",
    commands: LINEAGE,
  },
  OPENLINEAGE_API_KEY: {
    ...optionalText('none'),
    field: 'openLineageApiKey',
    meaning: 'sent as `Authorization: Bearer` with each event',
    secret: 'whole',
    commands: LINEAGE,
  },
  OPENLINEAGE_NAMESPACE: {
    ...text('default'),
    field: 'openLineageNamespace',
    meaning: "the namespace of the runs' jobs (the OpenLineage clients' default: default)",
    commands: LINEAGE,
  },
  OPENLINEAGE_DISABLED: {
    ...oneOf(['false', 'true'], 'false'),
    field: 'openLineageDisabled',
    meaning: 'true: no lineage event is sent, whatever else is set',
    commands: LINEAGE,
  },
  OPENLINEAGE__TRANSPORT__TYPE: {
    ...oneOf(['http', 'file'], 'http'),
    field: 'openLineageTransportType',
    meaning: 'file: each event a JSON line in OPENLINEAGE__TRANSPORT__LOG_FILE_PATH',
    doc: "`file` writes each event as one JSON line to OPENLINEAGE__TRANSPORT__LOG_FILE_PATH (appended), for tests and sites with no receiver; `http` (the default) posts to OPENLINEAGE_URL. The Python client's environment form of its transport configuration (docs/lineage.md)",
    commands: LINEAGE,
  },
  OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: {
    ...optionalText('required with OPENLINEAGE__TRANSPORT__TYPE=file'),
    field: 'openLineageLogFilePath',
    meaning: "the file transport's file, one JSON event per line, appended",
    commands: LINEAGE,
  },
  OPENLINEAGE__TRANSPORT__TIMEOUT: {
    // One second, not the Python client's five: lineage never holds a run (docs/lineage.md).
    ...decimalSeconds({ default: 1, min: 0.01, max: 60 }),
    field: 'openLineageTimeoutMs',
    meaning: 'longest wait for one event to be taken, in seconds (decimals allowed)',
    commands: LINEAGE,
  },
  OPENLINEAGE_PARENT_ID: {
    ...optionalText('none'),
    rule: (name: string) =>
      optionalText()
        .rule(name)
        .refine((value) => value === undefined || PARENT_ID.test(value), {
          message: `${name} must be namespace/name/run_id, the run id a UUID`,
        }),
    field: 'openLineageParentId',
    meaning: "the orchestrator's run, `namespace/name/run_id`: the events' parent run facet",
    doc: 'the run that started this one, as `namespace/job name/run id` (a UUID), the form the OpenLineage Airflow and dbt integrations pass: each event then carries a `parent` run facet. Anything else is refused (exit 1)',
    commands: LINEAGE,
  },
  LOG_LEVEL: {
    ...oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    field: 'logLevel',
    meaning: 'fatal, error, warn, info, debug, trace or silent',
    commands: LOGS,
  },
} as const satisfies Record<string, Setting>;

/** Every variable the configuration reads. */
export type ConfigVariable = keyof typeof SETTINGS;
export const CONFIG_VARIABLES = Object.keys(SETTINGS) as ConfigVariable[];

type Settings = typeof SETTINGS;
type FieldOf<K extends ConfigVariable> = Settings[K]['field'];

/** The parsed value of every setting that has a `Config` field, by field. */
export type SettingValues = {
  -readonly [K in ConfigVariable as FieldOf<K> extends string ? FieldOf<K> : never]: z.output<
    ReturnType<Settings[K]['rule']>
  >;
};

type AnswerBoundOf<K extends ConfigVariable> = Settings[K] extends {
  answerBound: infer B extends string;
}
  ? B
  : never;

/**
 * Each bound on one answer, by its name in the client's `bounds`, and the setting that sets
 * it, in table order: the entries with an `answerBound`.
 */
export type AnswerBoundSettings = {
  readonly [K in ConfigVariable as AnswerBoundOf<K>]: K;
};

/** The setting's entry, typed loosely: for code that walks the table. */
export function setting(name: ConfigVariable): Setting {
  return SETTINGS[name];
}

/**
 * Every default, by `Config` field, as the code reads it (milliseconds where the
 * environment says seconds). Modules that have a default of their own import it from
 * here, so it is written once.
 */
export const DEFAULTS: Readonly<SettingValues> = Object.freeze(
  Object.fromEntries(
    CONFIG_VARIABLES.flatMap((name) => {
      const entry = setting(name);
      return entry.field === null ? [] : [[entry.field, entry.rule(name).parse(undefined)]];
    }),
  ),
) as SettingValues;

/** The settings that bound one answer (src/api/bounds.ts), by bound. */
export const ANSWER_BOUND_SETTINGS: AnswerBoundSettings = Object.freeze(
  Object.fromEntries(
    CONFIG_VARIABLES.flatMap((name) => {
      const bound = setting(name).answerBound;
      return bound === undefined ? [] : [[bound, name]];
    }),
  ),
) as AnswerBoundSettings;

/** The variables `command` reads, in table order (`config`: every one). */
export function commandVariables(command: string): ConfigVariable[] {
  if (command === 'config') return [...CONFIG_VARIABLES];
  return CONFIG_VARIABLES.filter((name) =>
    (setting(name).commands as readonly string[]).includes(command),
  );
}
