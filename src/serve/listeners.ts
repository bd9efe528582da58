/**
 * serve's two fastify instances before they listen: the public one for webhooks (the
 * connection limits and the hooks that log refused, idle and cut-off connections) and the
 * operator's one for /metrics; both answer the health probes.
 */
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import { registerHealth } from './health.ts';
import type { ServeMetrics } from './metrics.ts';
import { STORE_TIMEOUT_MS } from './webhook-intake.ts';

/**
 * The HTTP server's time limits, all from WEBHOOK_REQUEST_TIMEOUT_MS: a request's headers
 * and body must arrive within it (a body dripped a byte at a time is cut off), and a
 * connection with no bytes moving for that long plus STORE_TIMEOUT_MS is closed (a
 * request waiting for the database moves no bytes either, and gets its 503 first). Node
 * checks running requests every
 * `connectionsCheckingInterval`, so that interval is a fraction of the timeout, or a
 * 30 s timeout would be enforced up to 30 s late.
 */
function connectionLimits(config: Config) {
  const timeoutMs = config.webhookRequestTimeoutMs;
  return {
    requestTimeout: timeoutMs,
    connectionTimeout: timeoutMs + STORE_TIMEOUT_MS,
    // Node's own default for idle keep-alive sockets, never longer than a request may take.
    keepAliveTimeout: Math.min(5_000, timeoutMs),
    http: {
      requestTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(timeoutMs / 4))),
    },
  };
}

/** The public listener's instance, its connection hooks and health (the intake is added by serve). */
export function createWebhookApp(
  config: Config,
  db: Warehouse['db'],
  log: Logger,
): FastifyInstance {
  const app = Fastify({ logger: false, return503OnClosing: true, ...connectionLimits(config) });
  // Past WEBHOOK_MAX_IN_FLIGHT deliveries the intake answers 503 (webhook-intake.ts); past
  // WEBHOOK_MAX_CONNECTIONS Node refuses the connection, so that a flood of connections
  // cannot take the process's open-file limit.
  app.server.maxConnections = config.webhookMaxConnections;
  let lastDropLogAt = 0;
  app.server.on('drop', () => {
    // At most one line a second: a flood of refused connections must not flood the log.
    if (Date.now() - lastDropLogAt < 1000) return;
    lastDropLogAt = Date.now();
    log.warn(
      { limit: config.webhookMaxConnections },
      'connection refused: WEBHOOK_MAX_CONNECTIONS connections are open',
    );
  });
  app.server.on('timeout', (socket: Socket) => {
    // A listener here means Node leaves the idle socket to us: close it.
    socket.destroy();
    log.warn(
      { timeoutMs: config.webhookRequestTimeoutMs + STORE_TIMEOUT_MS },
      'connection closed: idle for WEBHOOK_REQUEST_TIMEOUT_MS plus the 10 s a delivery may wait for the database',
    );
  });
  app.server.on('clientError', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ERR_HTTP_REQUEST_TIMEOUT') return;
    log.warn(
      { timeoutMs: config.webhookRequestTimeoutMs },
      'request cut off: not received in full within WEBHOOK_REQUEST_TIMEOUT_MS',
    );
  });
  registerHealth(app, db);
  return app;
}

/** The operator's listener's instance: /metrics and health. */
export function createOperatorApp(db: Warehouse['db'], metrics: ServeMetrics): FastifyInstance {
  // The operator's listener: scraping and the kubelet's probes, never the webhook senders.
  // Probes here too, so that a flood of webhook connections (WEBHOOK_MAX_CONNECTIONS
  // reached) cannot fail liveness and have a busy pod restarted.
  const operator = Fastify({ logger: false });
  registerHealth(operator, db);
  operator.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.render();
  });
  return operator;
}
