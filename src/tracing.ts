/**
 * OpenTelemetry traces (docs/running.md, "Traces"): off unless
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, then spans
 * go to that OTLP/HTTP endpoint. Off, every `inSpan` runs its work inside the API's no-op
 * tracer: no span is made and nothing is exported. Imports nothing of ours, so every
 * folder may import it.
 *
 * Spans never carry a secret: the upstream's path is templated and has no query (the
 * token and e-mail travel in the query), and a credential is named, never shown.
 *
 * A collector never holds a run (docs/running.md, "Traces"): each export, and the final
 * flush at shutdown, is bounded by `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` (default 1,000 ms,
 * not the standard's 10 s), and a failed export is said once, at warn, naming the
 * endpoint without its userinfo or query.
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

/** How much longer than an export's bound the batch processor waits for its outcome. */
const SHUTDOWN_MARGIN_MS = 100;

/** The default bound of one export and of the flush at shutdown, in milliseconds. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 1_000;

/**
 * `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` (or `OTEL_EXPORTER_OTLP_TIMEOUT`), milliseconds: how
 * long one export, and the flush at shutdown, may take. Throws a RangeError naming the
 * variable and the rule when it is not a whole number from 1 to 60,000.
 */
export function tracingTimeoutMs(env: Readonly<Record<string, string | undefined>>): number {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT?.trim()
    ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'
    : 'OTEL_EXPORTER_OTLP_TIMEOUT';
  const text = env[name]?.trim();
  if (!text) return DEFAULT_EXPORT_TIMEOUT_MS;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > 60_000) {
    throw new RangeError(
      `${name} must be a whole number of milliseconds from 1 to 60000 (got "${text}")`,
    );
  }
  return value;
}

/**
 * The endpoint as a log line may show it: scheme, host, port and path; no user, no
 * password, no query (a collector's key may ride in either), no fragment.
 */
export function printableEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '[an endpoint that does not parse]';
  }
}

export interface TracingOptions {
  /**
   * Told when an export fails after one that did not (so once per run while a collector
   * stays down): the endpoint without credentials, and what went wrong (an error code or
   * an HTTP status, never the error's text).
   */
  warn?: (message: string, fields: { endpoint: string; error: string }) => void;
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
  options: TracingOptions = {},
): Promise<Tracing | undefined> {
  const url = tracingEndpoint(env);
  if (!url || active) return undefined;
  const timeoutMs = tracingTimeoutMs(env);
  const reporter = failureReporter(url, options.warn);
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
        exporter: reportingFailures(
          new OTLPTraceExporter({ url, headers: otlpHeaders(env), timeoutMillis: timeoutMs }),
          reporter,
        ),
        maxQueueSize: 8192,
        scheduledDelayMillis: 2_000,
        // A little past the exporter's own bound, so that its outcome is what is reported.
        exportTimeoutMillis: timeoutMs + SHUTDOWN_MARGIN_MS,
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  active = true;
  return {
    async shutdown() {
      // An export in flight and the final flush each take at most timeoutMs; past both,
      // the run ends and what is still buffered is dropped.
      let timer: NodeJS.Timeout | undefined;
      try {
        const ended = await Promise.race([
          provider.shutdown().then(
            () => 'flushed' as const,
            () => 'timeout' as const,
          ),
          new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), 2 * (timeoutMs + SHUTDOWN_MARGIN_MS));
            timer.unref();
          }),
        ]);
        if (ended === 'timeout') reporter.failed('timeout');
      } finally {
        clearTimeout(timer);
        trace.disable();
        context.disable();
        active = false;
      }
    },
  };
}

let active = false;

type Exporter = InstanceType<
  typeof import('@opentelemetry/exporter-trace-otlp-http')['OTLPTraceExporter']
>;

/**
 * Tells `warn` when an export fails after one that did not: once per run while a
 * collector stays down, again after it came back and went.
 */
function failureReporter(url: string, warn: TracingOptions['warn']) {
  let failing = false;
  const endpoint = printableEndpoint(url);
  return {
    succeeded() {
      failing = false;
    },
    failed(error: string) {
      if (failing) return;
      failing = true;
      warn?.('trace export failed; spans are dropped, the run goes on', { endpoint, error });
    },
  };
}

/** The exporter, each export's outcome told to `reporter`. */
function reportingFailures(
  exporter: Exporter,
  reporter: ReturnType<typeof failureReporter>,
): Exporter {
  const original = exporter.export.bind(exporter);
  exporter.export = (spans, done) => {
    original(spans, (result) => {
      if (result.code === 0) reporter.succeeded();
      else reporter.failed(failureName(result.error));
      done(result);
    });
  };
  return exporter;
}

/** What went wrong, without the error's text (which may quote the URL). */
function failureName(error: unknown): string {
  if (!error || typeof error !== 'object') return 'unknown';
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') return code;
  if (typeof code === 'number') return `HTTP ${code}`;
  if (typeof message === 'string' && /timed? ?out/i.test(message)) return 'timeout';
  return error instanceof Error ? error.name : 'unknown';
}

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
