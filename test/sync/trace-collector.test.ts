/**
 * A collector never holds a run (docs/running.md, "Traces"): with the endpoint on a closed
 * port, or on a listener that accepts and never answers, `sync` ends as it would untraced,
 * each export cut at OTEL_EXPORTER_OTLP_TRACES_TIMEOUT; the failed export is said once, at
 * warn, naming the endpoint without its user, password or query.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { printableEndpoint, tracingTimeoutMs } from '../../src/tracing.ts';
import { runCli, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';

/** A listener that takes every request and never answers it. */
async function startSilentListener(): Promise<{
  port: number;
  requests: () => number;
  answered: () => number;
  close(): Promise<void>;
}> {
  let requests = 0;
  const server = http.createServer((request) => {
    requests += 1;
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => requests,
    // Nothing here ever writes a response: the count stays at 0 whatever the client does.
    answered: () => 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port that was just listened on and closed: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The endpoint as an operator might paste it: a user, a password and a key in the query. */
function endpointWithCredentials(port: number): string {
  return `http://collector-user:collector-pass@127.0.0.1:${port}/v1/traces?api_key=query-key-123`;
}

function warnLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.includes('trace export failed'));
}

function expectNoCredential(text: string): void {
  expect(text).not.toContain('collector-user');
  expect(text).not.toContain('collector-pass');
  expect(text).not.toContain('query-key-123');
}

describe('tracingTimeoutMs and printableEndpoint', () => {
  it('reads the standard timeout variables, 1,000 ms by default, and names a bad one', () => {
    expect(tracingTimeoutMs({})).toBe(1000);
    expect(tracingTimeoutMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '300' })).toBe(300);
    expect(
      tracingTimeoutMs({
        OTEL_EXPORTER_OTLP_TIMEOUT: '300',
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '250',
      }),
    ).toBe(250);
    expect(() => tracingTimeoutMs({ OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2s' })).toThrow(
      /OTEL_EXPORTER_OTLP_TRACES_TIMEOUT must be a whole number of milliseconds from 1 to 60000/,
    );
  });

  it('prints an endpoint without user, password or query', () => {
    expect(printableEndpoint(endpointWithCredentials(4318))).toBe(
      'http://127.0.0.1:4318/v1/traces',
    );
  });
});

describe.each(testBackends)('a sync with a collector that is down or silent (%s)', (backend) => {
  let fixture: SyncCommandFixture | undefined;
  afterEach(async () => {
    await fixture?.close();
    fixture = undefined;
  });

  async function prepare(): Promise<Record<string, string>> {
    fixture = await startSyncFixture(backend, {
      seed: 7,
      accounts: 1,
      businessesPerAccount: 2,
      startDate: '2026-07-01',
    });
    return fixture.prepare({ migrate: true });
  }

  it('a closed port: the run succeeds and says once that the export failed, without credentials', async () => {
    const env = await prepare();
    const port = await closedPort();
    const result = await runCli(['sync'], {
      ...env,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpointWithCredentials(port),
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '200',
    });
    expect(result.code, result.stderr).toBe(0);
    const warned = warnLines(result.stderr);
    expect(warned).toHaveLength(1);
    const line = JSON.parse(warned[0]!) as Record<string, unknown>;
    expect(line['level']).toBe('warn');
    expect(line['endpoint']).toBe(`http://127.0.0.1:${port}/v1/traces`);
    expect(line['error']).toBe('ECONNREFUSED');
    expectNoCredential(result.stderr);
    expectNoCredential(result.stdout);
  });

  it('a silent listener: the run ends while its request is unanswered, the export cut at the timeout setting', async () => {
    const env = await prepare();
    const listener = await startSilentListener();
    try {
      const result = await runCli(['sync'], {
        ...env,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpointWithCredentials(listener.port),
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '200',
      });
      expect(result.code, result.stderr).toBe(0);
      // The collector took the export and never answered; the run did not wait for it.
      expect(listener.requests()).toBeGreaterThanOrEqual(1);
      expect(listener.answered()).toBe(0);
      const warned = warnLines(result.stderr);
      expect(warned).toHaveLength(1);
      const line = JSON.parse(warned[0]!) as Record<string, unknown>;
      expect(line['endpoint']).toBe(`http://127.0.0.1:${listener.port}/v1/traces`);
      // Cut by the client's timeout: the listener never ends a request.
      expect(line['error']).toBe('timeout');
      expectNoCredential(result.stderr);
    } finally {
      await listener.close();
    }
  });

  it('a bad timeout is refused before the command runs, naming the variable', async () => {
    const env = await prepare();
    const result = await runCli(['sync'], {
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_TIMEOUT: 'soon',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'OTEL_EXPORTER_OTLP_TIMEOUT must be a whole number of milliseconds from 1 to 60000',
    );
  });
});
