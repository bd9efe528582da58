/**
 * OpenTelemetry traces (docs/running.md, "Traces"): off unless
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, then spans
 * go to that OTLP/HTTP endpoint. Off, every `inSpan` runs its work inside the API's no-op
 * tracer: no span is made and nothing is exported. Imports nothing of ours, so every
 * folder may import it.
 *
 * Spans never carry a secret: the upstream's path is templated and has no query (the
 * token and e-mail travel in the query), and a credential is named, never shown.
 */
import { type Attributes, context, type Span, SpanStatusCode, trace } from '@opentelemetry/api';

const TRACER_NAME = 'listings-sync';

/** Whether the standard variables ask for traces. */
export function tracingEndpoint(
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,key2=value2`, values percent-encoded). */
function otlpHeaders(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const text = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? '';
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      headers[key] = decodeURIComponent(value);
    } catch {
      headers[key] = value;
    }
  }
  return headers;
}

export interface Tracing {
  /** Exports what is buffered and stops; later spans are no-ops again. */
  shutdown(): Promise<void>;
}

/**
 * Starts exporting spans when the environment asks for it; undefined (and no cost) when
 * it does not. One tracing at a time per process: a second start while one is on returns
 * undefined and leaves the first in place.
 */
export async function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  version: string,
): Promise<Tracing | undefined> {
  const url = tracingEndpoint(env);
  if (!url || active) return undefined;
  // Loaded only when asked for: a run without traces does not load the SDK.
  const [
    { TracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { AsyncLocalStorageContextManager },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
  ]);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME?.trim() || 'listings-sync',
      'service.version': version,
    }),
    spanProcessors: [
      // Bounded: at most 8,192 spans wait; past that new ones are dropped, never the run.
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url, headers: otlpHeaders(env), timeoutMillis: 10_000 }),
        maxQueueSize: 8192,
        scheduledDelayMillis: 2_000,
        exportTimeoutMillis: 10_000,
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  active = true;
  return {
    async shutdown() {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        active = false;
      }
    },
  };
}

let active = false;

/**
 * Runs `work` in a span named `name`, a child of the span it is called in; ends the span
 * when `work` settles, with an error status when it throws.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!active) return work(NOOP_SPAN);
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.name : 'error',
      });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The trace id of the span in force, when tracing is on. */
export function currentTraceId(): string | undefined {
  if (!active) return undefined;
  const id = trace.getActiveSpan()?.spanContext().traceId;
  return id && !/^0+$/.test(id) ? id : undefined;
}

/** A span that records nothing: what `inSpan` hands its work when tracing is off. */
const NOOP_SPAN: Span = trace.wrapSpanContext({
  traceId: '00000000000000000000000000000000',
  spanId: '0000000000000000',
  traceFlags: 0,
});
