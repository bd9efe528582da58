/**
 * What the serve suites share: a configuration built from test values, a TCP proxy in
 * front of PostgreSQL that a test can cut and restore (the database "goes down" for the
 * server under test, honestly: its connections are refused), waiting for a state, and
 * Prometheus text.
 */
import net from 'node:net';
import { vi } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import { type Logger, silentLogger } from '../../src/log.ts';
import { type RunningServe, startServe } from '../../src/serve/server.ts';
import { createTestWarehouse, type TestBackend, type TestWarehouse } from '../helpers/database.ts';

export function serveConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ WEBHOOK_SECRET: 'test-secret', LOG_LEVEL: 'silent', ...env });
}

/** A serve for the webhook suites: the intake alone (no schedule, no alert loop) on 127.0.0.1. */
export interface Intake {
  warehouse: TestWarehouse;
  serve: RunningServe;
  close(): Promise<void>;
}

export async function startIntake(
  backend: TestBackend,
  env: Record<string, string>,
  logger: Logger = silentLogger(),
): Promise<Intake> {
  const warehouse = await createTestWarehouse(backend);
  const api = createApiClient({ logger: silentLogger() });
  const serve = await startServe({
    config: serveConfig(env),
    warehouse,
    api,
    logger,
    schedule: 'off',
    port: 0,
    host: '127.0.0.1',
    alertIntervalMs: 0,
  });
  return {
    warehouse,
    serve,
    async close() {
      await serve.close();
      await api.close();
      await warehouse.close();
    },
  };
}

/**
 * Resolves with the first truthy answer of `check`, asked again after each answer: a state
 * another part of the process reaches (a row written, every alert delivered). Nothing is
 * asserted about when; the limit only guards a hang, under the test's own (vitest.config.ts)
 * so that a state that never comes is named.
 */
export function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
): Promise<T> {
  return vi.waitUntil(check, {
    timeout: 100_000,
    interval: 25,
    message: `waiting for ${what}`,
  }) as Promise<T>;
}

/** The value of one series in Prometheus text, or 0 when it is absent. */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      found[pair[1]!] = pair[2]!;
    }
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[4]);
  }
  return 0;
}

export interface TcpProxy {
  port: number;
  /** Refuse new connections and cut the open ones: the database is "down". */
  cut(): Promise<void>;
  /** Accept connections again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let listening = true;
  const cut = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closed;
  };
  return {
    port,
    cut,
    async restore() {
      if (listening) return;
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      listening = true;
    },
    close: cut,
  };
}

/** TEST_DATABASE_URL with its host and port replaced, for a connection through a proxy. */
export function viaProxy(databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}
