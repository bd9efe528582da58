/**
 * OpenTelemetry traces (docs/running.md, "Traces"): with an OTLP endpoint set, one sync is
 * one trace, sync.run → sync.credential → sync.business → upstream.request and
 * warehouse.transaction, exported over OTLP/HTTP to a receiver here in the test; no
 * attribute carries a token, an e-mail or a query; the run's log lines carry its trace
 * id. Unset, nothing is exported and the spans cost nothing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/run.ts';
import { startTracing, type Tracing, tracingEndpoint } from '../../src/tracing.ts';
import { testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { worldPerTest } from './harness.ts';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, string | number | boolean>;
}

/** An OTLP/HTTP (JSON) trace receiver: what the exporter posts to /v1/traces. */
async function startReceiver(): Promise<{
  url: string;
  spans: ReceivedSpan[];
  headers: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      headers.push(request.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          scopeSpans: {
            spans: {
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              attributes?: { key: string; value: Record<string, unknown> }[];
            }[];
          }[];
        }[];
      };
      for (const resource of body.resourceSpans) {
        for (const scope of resource.scopeSpans) {
          for (const span of scope.spans) {
            const attributes: ReceivedSpan['attributes'] = {};
            for (const { key, value } of span.attributes ?? []) {
              const v = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
              attributes[key] =
                typeof v === 'string' && 'intValue' in value ? Number(v) : (v as never);
            }
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
              name: span.name,
              attributes,
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('tracingEndpoint', () => {
  it('is off without the standard variables, and appends /v1/traces to the base endpoint', () => {
    expect(tracingEndpoint({})).toBeUndefined();
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toBe(
      'http://c:4318/v1/traces',
    );
    expect(
      tracingEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:4318/custom',
      }),
    ).toBe('http://t:4318/custom');
  });
});

describe.each(testBackends)('traces of a sync (%s)', (backend) => {
  const world = worldPerTest(backend, {
    seed: 5,
    accounts: 2,
    businessesPerAccount: 2,
    startDate: '2026-07-01',
  });
  let tracing: Tracing | undefined;
  afterEach(async () => {
    await tracing?.shutdown();
    tracing = undefined;
  });

  it('exports one trace: run → credential → business → request and transaction, without secrets', async () => {
    const receiver = await startReceiver();
    try {
      tracing = await startTracing(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=collector%20key',
        },
        '0.0.0-test',
      );
      expect(tracing).toBeDefined();
      const { logger, lines } = memoryLogger();
      const result = await runSync({
        warehouse: world.warehouse,
        api: world.api,
        credentials: world.sandbox.credentials,
        logger,
        trigger: 'test',
      });
      expect(result.status).toBe('succeeded');
      await tracing!.shutdown();
      tracing = undefined;

      const spans = receiver.spans;
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      const parentName = (s: ReceivedSpan) =>
        s.parentSpanId ? byId.get(s.parentSpanId)?.name : undefined;
      const runs = spans.filter((s) => s.name === 'sync.run');
      expect(runs).toHaveLength(1);
      const run = runs[0]!;
      expect(run.parentSpanId).toBeUndefined();
      expect(run.attributes['listings.run_id']).toBe(result.runId);
      expect(run.attributes['listings.run_status']).toBe('succeeded');
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([run.traceId]));

      const credentials = spans.filter((s) => s.name === 'sync.credential');
      expect(credentials.map((s) => s.attributes['listings.credential']).sort()).toEqual(
        world.sandbox.credentials.map((c) => c.name).sort(),
      );
      expect(credentials.every((s) => s.parentSpanId === run.spanId)).toBe(true);

      const businesses = spans.filter((s) => s.name === 'sync.business');
      expect(businesses).toHaveLength(4);
      expect(businesses.every((s) => parentName(s) === 'sync.credential')).toBe(true);

      const transactions = spans.filter((s) => s.name === 'warehouse.transaction');
      expect(transactions.length).toBe(4);
      expect(transactions.every((s) => parentName(s) === 'sync.business')).toBe(true);

      const requests = spans.filter((s) => s.name === 'upstream.request');
      expect(requests.length).toBe(result.stats.requests);
      const lists = requests.filter(
        (s) => s.attributes['listings.operation'] === 'list_businesses',
      );
      expect(lists.every((s) => parentName(s) === 'sync.credential')).toBe(true);
      const listings = requests.filter(
        (s) => s.attributes['listings.operation'] === 'list_listings',
      );
      expect(listings.every((s) => parentName(s) === 'sync.business')).toBe(true);
      expect(listings[0]!.attributes['url.template']).toBe('/businesses/{id}/listings.json');
      expect(listings[0]!.attributes['http.response.status_code']).toBe(200);
      expect(listings[0]!.attributes['listings.attempt']).toBe(1);

      // No secret in any attribute, and no query.
      const text = JSON.stringify(spans);
      for (const credential of world.sandbox.credentials) {
        expect(text).not.toContain(credential.authToken);
        expect(text).not.toContain(credential.userEmail);
      }
      expect(text).not.toMatch(/auth_token|user_email|\?/);
      // The collector's headers went with the export.
      expect(receiver.headers.some((h) => h['x-api-key'] === 'collector key')).toBe(true);
      // The run's log lines and its sync_runs row name its trace.
      const finished = lines().find((line) => line.includes('sync finished'));
      expect(finished).toContain(`"traceId":"${run.traceId}"`);
      const stored = await world.warehouse.db
        .selectFrom('sync_runs')
        .select('trace_id')
        .where('run_id', '=', result.runId)
        .executeTakeFirstOrThrow();
      expect(stored.trace_id).toBe(run.traceId);
    } finally {
      await receiver.close();
    }
  });

  it('exports nothing and logs no trace id when no endpoint is set', async () => {
    tracing = await startTracing({}, '0.0.0-test');
    expect(tracing).toBeUndefined();
    const { logger, lines } = memoryLogger();
    const result = await runSync({
      warehouse: world.warehouse,
      api: world.api,
      credentials: world.sandbox.credentials,
      logger,
      trigger: 'test',
    });
    expect(result.status).toBe('succeeded');
    expect(lines().some((line) => line.includes('traceId'))).toBe(false);
    const stored = await world.warehouse.db
      .selectFrom('sync_runs')
      .select('trace_id')
      .where('run_id', '=', result.runId)
      .executeTakeFirstOrThrow();
    expect(stored.trace_id).toBeNull();
  });
});
