/**
 * `serve`: the public fastify server on PORT with the webhook intake and health, a second
 * listener on METRICS_PORT with /metrics and health (metrics are not for the public that
 * sends webhooks: docs/serve.md, "Metrics"), the sync schedule, and the alert dispatcher (after each scheduled run and on an interval).
 * On the same interval it checks `sync_runs` for the `sync_failed` and `sync_stale` rules
 * (src/alerts/kinds/sync-health.ts), so a load that failed or never ran raises an alert
 * whoever was meant to run it.
 * `startServe` takes what it runs on (warehouse, API client, logger) so tests start it
 * in-process; `command.ts` wires it to the configuration and the process signals.
 *
 * close(): stop taking webhooks (fastify close: in-flight requests finish), stop the
 * schedule (a running sync stops starting businesses, the ones in flight commit), stop the
 * alert interval and wait for a dispatch in flight.
 */
import type { FastifyInstance } from 'fastify';
import { alertSinksFromConfig } from '../alerts/configured-sinks.ts';
import { type AlertDispatcher, type Backoff, createAlertDispatcher } from '../alerts/dispatcher.ts';
import type { AlertSink } from '../alerts/sinks.ts';
import type { ApiClient, Credential } from '../api/index.ts';
import {
  type Config,
  ConfigError,
  DEFAULT_METRICS_PORT,
  requireCredentials,
  requireWebhookSecrets,
} from '../config/index.ts';
import { ListingsSyncError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import { startAlertPasses } from './background-passes.ts';
import { createOperatorApp, createWebhookApp } from './listeners.ts';
import { createServeMetrics, type ServeMetrics } from './metrics.ts';
import { scheduledRun } from './scheduled-run.ts';
import { type Scheduler, startScheduler } from './scheduler.ts';
import { registerWebhookIntake } from './webhook-intake.ts';

export interface ServeOptions {
  config: Config;
  warehouse: Warehouse;
  /** The client scheduled runs use; its counters feed /metrics. */
  api: ApiClient;
  logger: Logger;
  /** Overrides `config.syncSchedule` (`off`: no schedule). */
  schedule?: string;
  /** Overrides `config.credentials`. */
  credentials?: readonly Credential[];
  /** Overrides `config.port`; 0 picks a free port. */
  port?: number;
  /**
   * Overrides `config.metricsPort`; 0 picks a free port. Unset with neither, 9464, or a
   * free port when the public port is 0.
   */
  metricsPort?: number;
  /** Overrides LISTEN_ADDRESS and, unless `metricsHost` is given, METRICS_LISTEN_ADDRESS. */
  host?: string;
  /** Overrides METRICS_LISTEN_ADDRESS. */
  metricsHost?: string;
  /** Overrides the sinks the configuration names. */
  alertSinks?: readonly AlertSink[];
  alertBackoff?: Backoff;
  /** Overrides `config.alertDispatchIntervalMs`; 0 turns the interval off. */
  alertIntervalMs?: number;
  /** Businesses fetched at once per credential, passed to runSync. */
  businessConcurrency?: number;
}

export interface RunningServe {
  /** The public listener: POST /webhooks, /healthz, /readyz (127.0.0.1 for a wildcard). */
  url: string;
  port: number;
  /** Where the public listener is bound, as the socket reports it: `0.0.0.0:8080`. */
  address: string;
  /** The operator's listener: /metrics, /healthz, /readyz. */
  metricsUrl: string;
  metricsPort: number;
  /** Where the operator's listener is bound: `127.0.0.1:9464`. */
  metricsAddress: string;
  metrics: ServeMetrics;
  /** Null when the schedule is off. */
  scheduler: Scheduler | null;
  dispatcher: AlertDispatcher;
  /** Resolves when the sync health checks and alert passes started so far are done. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Connections the kernel holds for the webhook listener until Node accepts them (the
 * listen backlog; Linux caps it at net.core.somaxconn, 4096 on current kernels). Node's
 * default, 511, overflowed at 500 deliveries a second on a busy machine, and an overflow
 * is a connection reset the sender cannot tell from an outage (docs/benchmarks.md,
 * "Webhooks at load").
 */
const LISTEN_BACKLOG = 4096;

/**
 * The metrics port: the option, METRICS_PORT, or DEFAULT_METRICS_PORT (a free port beside
 * a free PORT).
 */
function metricsPortFor(options: ServeOptions, port: number): number {
  const chosen = options.metricsPort ?? options.config.metricsPort;
  if (chosen === undefined) return port === 0 ? 0 : DEFAULT_METRICS_PORT;
  if (chosen !== 0 && chosen === port) {
    throw new ConfigError(
      `METRICS_PORT and PORT are both ${port}: /metrics has a listener of its own, apart from the public webhooks. Choose another METRICS_PORT (unset: ${DEFAULT_METRICS_PORT}).`,
    );
  }
  return chosen;
}

/** A listener that could not bind: the address, the settings that chose it, and what to change. */
export class ListenError extends ListingsSyncError {
  readonly code = 'LISTEN_FAILED';
}

/** `address:port`, IPv6 in brackets. */
function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * `listen()` of one of serve's two listeners, its failure rewritten to name the settings
 * that chose the address (docs/serve.md, "What it serves"): the public one's PORT and
 * LISTEN_ADDRESS, the operator's METRICS_PORT and METRICS_LISTEN_ADDRESS.
 */
async function listenOn(
  listen: () => Promise<unknown>,
  where: {
    what: string;
    port: number;
    portSetting: string;
    portText: string;
    host: string;
    hostSetting: string;
  },
): Promise<void> {
  try {
    await listen();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const address = hostPort(where.host, where.port);
    const settings = `${where.portText}, ${where.hostSetting}=${where.host}`;
    const why =
      code === 'EADDRINUSE'
        ? `the port is already in use (EADDRINUSE: another serve, or another program). Stop that one, or set ${where.portSetting} to a free port`
        : code === 'EACCES'
          ? `this user may not listen on port ${where.port} (EACCES: ports below 1024 need privileges). Set ${where.portSetting} to 1024 or above`
          : code === 'EADDRNOTAVAIL'
            ? `${where.host} is not an address of this machine (EADDRNOTAVAIL). Set ${where.hostSetting} to one of its addresses, or 0.0.0.0 for every interface`
            : `${code ?? 'error'}: ${error instanceof Error ? error.message : String(error)}`;
    throw new ListenError(
      `serve cannot listen on ${address} ${where.what} (${settings}): ${why}.`,
      {
        cause: error,
      },
    );
  }
}

/** `address:port` of a bound server, IPv6 in brackets: `0.0.0.0:8080`, `[::1]:9464`. */
function boundAddressOf(server: FastifyInstance): { host: string; port: number; text: string } {
  const address = server.server.address();
  if (!address || typeof address !== 'object') throw new Error('the server is not listening');
  const host = address.address;
  return {
    host,
    port: address.port,
    text: `${host.includes(':') ? `[${host}]` : host}:${address.port}`,
  };
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** /metrics' counters and the alert dispatcher, which counts each delivery in them. */
function metricsAndDispatcher(options: ServeOptions): {
  metrics: ServeMetrics;
  dispatcher: AlertDispatcher;
} {
  const { config, warehouse, api, logger } = options;
  const sinks = options.alertSinks ?? alertSinksFromConfig(config);
  const metrics = createServeMetrics({
    db: warehouse.db,
    api,
    sinks: sinks.map((sink) => sink.name),
  });
  const dispatcher = createAlertDispatcher({
    db: warehouse.db,
    sinks,
    logger,
    sinkTimeoutMs: config.alertSinkTimeoutMs,
    ...(options.alertBackoff ? { backoff: options.alertBackoff } : {}),
    onDelivered: (sink, alerts) => metrics.recordAlertDelivered(sink, alerts),
    onFailed: (sink, alerts) => metrics.recordAlertFailed(sink, alerts),
  });
  return { metrics, dispatcher };
}

/**
 * Both listeners bound: the operator's first, then the public one (the operator's is
 * closed again when the public one cannot bind); their URLs and addresses as bound.
 */
async function listenBoth(
  options: ServeOptions,
  app: FastifyInstance,
  operator: FastifyInstance,
): Promise<
  Pick<RunningServe, 'url' | 'port' | 'address' | 'metricsUrl' | 'metricsPort' | 'metricsAddress'>
> {
  const { config } = options;
  const port = options.port ?? config.port;
  // LISTEN_ADDRESS and METRICS_LISTEN_ADDRESS (docs/serve.md, "What it serves").
  const host = options.host ?? config.listenAddress;
  const metricsHost = options.metricsHost ?? options.host ?? config.metricsListenAddress;
  const metricsPort = metricsPortFor(options, port);
  const metricsPortSet = (options.metricsPort ?? config.metricsPort) !== undefined;
  await listenOn(() => operator.listen({ port: metricsPort, host: metricsHost }), {
    what: 'for /metrics',
    port: metricsPort,
    portSetting: 'METRICS_PORT',
    portText: metricsPortSet ? `METRICS_PORT=${metricsPort}` : `METRICS_PORT unset: ${metricsPort}`,
    host: metricsHost,
    hostSetting: 'METRICS_LISTEN_ADDRESS',
  });
  try {
    await listenOn(() => app.listen({ port, host, backlog: LISTEN_BACKLOG }), {
      what: 'for webhooks',
      port,
      portSetting: 'PORT',
      portText: `PORT=${port}`,
      host,
      hostSetting: 'LISTEN_ADDRESS',
    });
  } catch (error) {
    await operator.close();
    throw error;
  }
  // What the sockets are bound to, not what was asked: the line and the URLs say that.
  const bound = boundAddressOf(app);
  const boundMetrics = boundAddressOf(operator);
  return {
    url: `http://${hostForUrl(bound.host)}:${bound.port}`,
    port: bound.port,
    address: bound.text,
    metricsUrl: `http://${hostForUrl(boundMetrics.host)}:${boundMetrics.port}`,
    metricsPort: boundMetrics.port,
    metricsAddress: boundMetrics.text,
  };
}

export async function startServe(options: ServeOptions): Promise<RunningServe> {
  const { config, warehouse, api, logger } = options;
  const log = logger.child({ component: 'serve' });
  const secrets = requireWebhookSecrets(config);
  const schedule = options.schedule ?? config.syncSchedule;
  const scheduleOn = schedule.toLowerCase() !== 'off';
  const credentials = scheduleOn
    ? (options.credentials ?? requireCredentials(config))
    : (options.credentials ?? []);

  const { metrics, dispatcher } = metricsAndDispatcher(options);
  const passes = startAlertPasses({
    config,
    warehouse,
    dispatcher,
    accountNames: (options.credentials ?? config.credentials).map((c) => c.name),
    log,
  });
  const dispatch = passes.dispatch;
  const app = createWebhookApp(config, warehouse.db, log);
  const operator = createOperatorApp(warehouse.db, metrics);
  await registerWebhookIntake(app, {
    db: warehouse.db,
    secrets,
    bodyLimitBytes: config.webhookBodyLimitBytes,
    maxInFlight: config.webhookMaxInFlight,
    logger,
    onOutcome: (outcome) => metrics.recordWebhook(outcome),
    onInFlight: (count) => metrics.setWebhooksInFlight(count),
  });

  const runScheduled = scheduledRun({
    config,
    warehouse,
    api,
    credentials,
    logger,
    log,
    businessConcurrency: options.businessConcurrency,
    metrics,
    dispatch,
  });

  const listening = await listenBoth(options, app, operator);

  const scheduler = scheduleOn
    ? startScheduler({
        schedule,
        timezone: config.syncTimezone,
        logger,
        run: runScheduled,
        onSkippedTick: () => metrics.recordSkippedTick(),
      })
    : null;
  if (!scheduleOn) {
    log.info(
      'SYNC_SCHEDULE is off: this process takes webhooks and sends alerts, and runs no sync',
    );
  }

  const intervalMs = options.alertIntervalMs ?? config.alertDispatchIntervalMs;
  const interval = intervalMs > 0 ? setInterval(() => void dispatch(), intervalMs) : undefined;
  // Alerts left from before a restart go out now, not after the first interval.
  void dispatch();

  log.info(
    {
      address: listening.address,
      metricsAddress: listening.metricsAddress,
      url: listening.url,
      metricsUrl: listening.metricsUrl,
      schedule: scheduleOn ? schedule : 'off',
      sinks: dispatcher.sinks.map((s) => s.name),
    },
    'serve listening',
  );

  let closing: Promise<void> | undefined;
  return {
    ...listening,
    metrics,
    scheduler,
    dispatcher,
    settled: passes.settled,
    close() {
      closing ??= (async () => {
        log.info(
          'serve stopping: no new webhooks; a running sync finishes its businesses in flight',
        );
        await app.close();
        await scheduler?.stop();
        if (interval) clearInterval(interval);
        await passes.settled();
        await dispatcher.idle();
        // Last, so that probes and a final scrape answer while the rest winds down.
        await operator.close();
        log.info('serve stopped');
      })();
      return closing;
    },
  };
}
