/**
 * Logging, and the one place that knows what a secret looks like.
 *
 * Secrets are kept out of logs by construction (the API client never puts a token into
 * a message), and this module is the net under that: every log record, error message and
 * stack passes through `redactSecrets` before it is written, so a token inside a URL, a
 * directory password inside a raw payload or an `Authorization` header is replaced
 * wherever it sits in the object.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

export const REDACTED = '[REDACTED]';

/** Names of fields whose values are secrets, whatever object they appear in. */
const SECRET_NAMES =
  'auth_?token|site_?password|password|passwd|secrets?|webhook_?secrets?|alert_?webhook_?secret|authorization|cookie|set-cookie|x-service-signature|api_?key|token';
const SECRET_KEY = new RegExp(`^(${SECRET_NAMES})$`, 'i');
/** `"authToken":"…"` inside serialized JSON (a log line, a stored payload's text). */
const SECRET_JSON_FIELD = new RegExp(`"(${SECRET_NAMES})"\\s*:\\s*"(?:[^"\\\\]|\\\\.)*"`, 'gi');

/**
 * `auth_token=…`, `site_password=…` and friends inside query strings and free text, and
 * `Bearer …` credentials. The value runs to the next separator.
 */
const SECRET_IN_TEXT =
  /\b(auth_token|authToken|site_password|password|secret|token|api_key)(=|":\s*"|:\s*)(?!\[REDACTED\])([^&\s"',;)}\]]+)/gi;
const BEARER = /\b(Bearer|Basic)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]+/g;
/** `postgres://user:password@host` */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]+:)([^@/?#\s]+)@/gi;

/** Replace secrets inside a string: query parameters, `key: value` text, URL passwords. */
export function redactText(text: string): string {
  return text
    .replace(SECRET_JSON_FIELD, (_m, key: string) => `"${key}":"${REDACTED}"`)
    .replace(SECRET_IN_TEXT, (_m, key: string, sep: string) => `${key}${sep}${REDACTED}`)
    .replace(BEARER, (_m, scheme: string) => `${scheme} ${REDACTED}`)
    .replace(URL_PASSWORD, (_m, head: string) => `${head}${REDACTED}@`);
}

/**
 * A deep copy of `value` with every secret replaced: values under secret keys, and
 * secrets inside strings. Errors become plain objects (message, code, stack, cause), so
 * they can be logged or stored. Cycles are cut.
 */
export function redactSecrets<T>(value: T): T {
  return redactValue(value, new WeakSet()) as T;
}

function redactValue(value: unknown, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  if (value instanceof Date) return value;
  if (value instanceof Error) {
    const plain: Record<string, unknown> = {
      type: value.name,
      message: redactText(value.message),
    };
    for (const [key, inner] of Object.entries(value)) {
      plain[key] = SECRET_KEY.test(key) ? REDACTED : redactValue(inner, seen);
    }
    if (value.stack) plain['stack'] = redactText(value.stack);
    if (value.cause !== undefined) plain['cause'] = redactValue(value.cause, seen);
    return plain;
  }
  if (Array.isArray(value)) return value.map((item) => redactValue(item, seen));
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) && inner != null ? REDACTED : redactValue(inner, seen);
  }
  return out;
}

export interface LoggerOptions {
  level?: string;
  /** Where records go; standard output by default. Tests pass a stream they read back. */
  destination?: DestinationStream;
  /** Fields bound to every record. */
  base?: Record<string, unknown>;
  /**
   * Human-readable single lines (time, level, message, a few fields) instead of JSON: for
   * a terminal. Off a terminal the JSON lines stay, for log collectors.
   */
  human?: boolean;
}

/**
 * Where human lines go while a progress bar is drawn: the bar prints them above itself
 * (src/sync/progress.ts), so a log line never lands inside the bar's line.
 */
let terminalWriter: ((text: string) => void) | undefined;

/** Route human log lines through `writer` (a progress bar) until called with undefined. */
export function routeTerminalLines(writer: ((text: string) => void) | undefined): void {
  terminalWriter = writer;
}

/** Fields every record carries that a person reading a terminal does not need. */
const HUMAN_HIDDEN = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);
/** A field value longer than this is cut: one record, one line. */
const HUMAN_VALUE_CHARS = 120;

function humanValue(value: unknown): string {
  let text: string;
  if (value && typeof value === 'object' && 'message' in value) {
    const { message, code } = value as { message?: unknown; code?: unknown };
    text = typeof code === 'string' ? `${code}: ${String(message)}` : String(message);
  } else {
    text = typeof value === 'string' ? value : JSON.stringify(value);
  }
  text = text.replace(/\s+/g, ' ');
  if (text.length > HUMAN_VALUE_CHARS) text = `${text.slice(0, HUMAN_VALUE_CHARS - 1)}…`;
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}

/** One JSON log line as a person reads it: `12:03:04 WARN  message  key=value …`. */
export function formatHumanLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line);
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof record['time'] === 'string' ? record['time'].slice(11, 19) : '';
  const level = String(record['level'] ?? 'info')
    .toUpperCase()
    .padEnd(5);
  const fields = Object.entries(record)
    .filter(([key, value]) => !HUMAN_HIDDEN.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${humanValue(value)}`);
  const text = [`${time} ${level} ${String(record['msg'] ?? '')}`, ...fields].join('  ');
  return `${text.trim()}\n`;
}

function humanDestination(fallback: DestinationStream): DestinationStream {
  return {
    write: (line: string) => {
      const text = formatHumanLine(line);
      if (terminalWriter) terminalWriter(text);
      else fallback.write(text);
    },
  };
}

/** The project's logger: JSON lines, ISO timestamps, every record passed through redaction. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: options.base ?? { service: 'listings-sync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (record) => redactSecrets(record),
        bindings: (bindings) => redactSecrets(bindings),
      },
      serializers: {
        err: (err: unknown) => redactSecrets(err),
        error: (err: unknown) => redactSecrets(err),
      },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((arg) => (typeof arg === 'string' ? redactText(arg) : arg));
          return method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
    },
    redactingDestination(
      // Standard error: standard output is for what a command prints (summaries, JSON).
      options.human
        ? humanDestination(options.destination ?? pino.destination({ fd: 2, sync: true }))
        : (options.destination ?? pino.destination({ fd: 2, sync: true })),
    ),
  );
}

/**
 * The last net: every serialized line is scrubbed as text, which also covers fields pino
 * writes without calling a formatter (child-logger bindings after the first level).
 */
function redactingDestination(destination: DestinationStream): DestinationStream {
  return { write: (line: string) => destination.write(redactText(line)) };
}

/** A logger that writes nothing, for library callers and tests that do not read logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * A logger that keeps its lines in memory, for tests that assert what must or must not
 * be logged.
 */
export function memoryLogger(level = 'debug'): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = { write: (chunk: string) => void chunks.push(chunk) };
  const logger = createLogger({ level, destination });
  return { logger, lines: () => chunks.join('').split('\n').filter(Boolean) };
}
