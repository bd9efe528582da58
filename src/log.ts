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

/**
 * Names of fields whose values are secrets, whatever object they appear in. A directory
 * login (`site_username`) counts: docs/warehouse.md promises no directory credential is
 * stored, and a login is half of one.
 */
const SECRET_NAMES =
  'auth_?token|site_?password|site_?username|password|passwd|secrets?|webhook_?secrets?|alert_?webhook_?secret|authorization|cookie|set-cookie|x-service-signature|api_?key|token';
const SECRET_KEY = new RegExp(`^(${SECRET_NAMES})$`, 'i');
/** `"authToken":"…"` inside serialized JSON (a log line, a stored payload's text). */
const SECRET_JSON_FIELD = new RegExp(`"(${SECRET_NAMES})"\\s*:\\s*"(?:[^"\\\\]|\\\\.)*"`, 'gi');

/**
 * `auth_token=…`, `site_password=…` and friends inside query strings and free text, and
 * `Bearer …` credentials. The value runs to the next separator.
 */
const SECRET_IN_TEXT =
  /\b(auth_token|authToken|site_password|site_username|password|secret|token|api_key)(=|":\s*"|:\s*)(?!\[REDACTED\])([^&\s"',;)}\]]+)/gi;
const BEARER = /\b(Bearer|Basic)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]+/g;
/**
 * `scheme://user:password@host`: the password runs to the last `@` before a `/`, `?`,
 * `#`, space or quote, so an `@` inside it is covered and a query's `a@b` e-mail is not.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^:/?#\s@"']+:)([^/?#\s"']+)@/gi;
/**
 * A database URL's password may also hold an unencoded `/`, `#` or `?` (DATABASE_URL is
 * pasted by people): for `postgres://` the password runs to the last `@` before a space
 * or a quote. Over-redacting such a line is the safe mistake.
 */
const DATABASE_URL_PASSWORD = /\b(postgres(?:ql)?:\/\/[^:/?#\s@"']+:)([^\s"']*)@/gi;

/** Replace secrets inside a string: query parameters, `key: value` text, URL passwords. */
export function redactText(text: string): string {
  return text
    .replace(SECRET_JSON_FIELD, (_m, key: string) => `"${key}":"${REDACTED}"`)
    .replace(SECRET_IN_TEXT, (_m, key: string, sep: string) => `${key}${sep}${REDACTED}`)
    .replace(BEARER, (_m, scheme: string) => `${scheme} ${REDACTED}`)
    .replace(DATABASE_URL_PASSWORD, (_m, head: string) => `${head}${REDACTED}@`)
    .replace(URL_PASSWORD, (_m, head: string) => `${head}${REDACTED}@`);
}

/**
 * True when `url` cannot be printed or used as written: it does not parse, or its path,
 * query or fragment still holds an `@` (`%40`), the sign of a password with an unencoded
 * `/`, `#` or `?` that moved the rest of the password past the host. Configuration loading
 * refuses such a DATABASE_URL (docs/configuration.md), and `redactUrl` prints none of it.
 */
export function isUnreadableUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return true;
  }
  const tail = `${parsed.pathname}${parsed.search}${parsed.hash}`;
  return /@|%40/i.test(tail) || (url.includes('@') && !parsed.username && !parsed.password);
}

/** What `redactUrl` prints for a URL that `isUnreadableUrl`: no part of it. */
export const UNREADABLE_URL = `[${REDACTED}: a URL that does not parse (percent-encode / # ? @ in a password)]`;

/**
 * A URL fit to print: scheme, user, host, port, path and query, with the password alone
 * replaced (`postgres://sync:[REDACTED]@db:5432/listings`). The one redaction of every URL
 * that reaches output (`check`, `config`, summaries, errors, the demo's lines);
 * `withoutUserinfo` is what `accounts.base_url` stores. A URL that `isUnreadableUrl`
 * prints no part of itself.
 */
export function redactUrl(url: string): string {
  if (isUnreadableUrl(url)) return UNREADABLE_URL;
  const parsed = new URL(url);
  const user = parsed.username ? `${parsed.username}${parsed.password ? `:${REDACTED}` : ''}@` : '';
  const path = parsed.pathname === '/' && !url.endsWith('/') ? '' : parsed.pathname;
  return `${parsed.protocol}//${user}${parsed.host}${path}${parsed.search}`;
}

/**
 * An http(s) URL without its userinfo (`http://user:pw@host/x` → `http://host/x`), for
 * storing and printing a credential's base URL. One that does not parse prints nothing.
 */
export function withoutUserinfo(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactUrl(url);
  }
  if (!parsed.username && !parsed.password) return url;
  parsed.username = '';
  parsed.password = '';
  const text = parsed.href;
  return url.endsWith('/') || !text.endsWith('/') ? text : text.slice(0, -1);
}

/**
 * The spellings of a database URL's password a driver may echo: as written (between the
 * userinfo's `:` and the last `@`), and percent-decoded. For a URL that `isUnreadableUrl`,
 * also each stretch between the reserved characters: a driver that split such a URL
 * elsewhere echoes them as a host, port or database name (`getaddrinfo ENOTFOUND <piece>`).
 */
function passwordSpellings(url: string): string[] {
  const start = url.indexOf('//');
  const at = url.lastIndexOf('@');
  const colon = url.indexOf(':', start + 2);
  if (start < 0 || at < 0 || colon < 0 || colon > at) return [];
  const password = url.slice(colon + 1, at);
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {}
  const pieces = isUnreadableUrl(url)
    ? password.split(/[/#?@:]/).filter((piece) => piece.length >= 2)
    : [];
  return [...new Set([password, decoded, ...pieces])]
    .filter((secret) => secret.length > 0)
    .sort((a, b) => b.length - a.length);
}

/** A letter, digit or `_`: what continues a word. */
const WORD_CHAR = '[\\p{L}\\p{N}_]';
const WORD = new RegExp(`^${WORD_CHAR}$`, 'u');

/**
 * `text` with every occurrence of `secret` that stands as a whole value replaced by
 * `[REDACTED]`: not one inside a longer word. Where the secret begins (or ends) with a
 * letter, digit or `_`, the character before it (after it) must not be one, so a password
 * `e` or `x` leaves `role "nouser" does not exist` whole, at any length of password; a
 * secret edge that is punctuation (`@x`) is replaced wherever it stands.
 */
export function replaceWhole(text: string, secret: string, by: string = REDACTED): string {
  if (!secret) return text;
  const escaped = secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const chars = [...secret];
  const wordAt = (ch: string | undefined) => ch !== undefined && WORD.test(ch);
  const before = wordAt(chars[0]) ? `(?<!${WORD_CHAR})` : '';
  const after = wordAt(chars.at(-1)) ? `(?!${WORD_CHAR})` : '';
  return text.replace(new RegExp(`${before}${escaped}${after}`, 'gu'), () => by);
}

/**
 * `text` with everything a database URL could leak removed: the URL itself (however it
 * is spelled) printed as `redactUrl` prints it, its password raw and percent-decoded, and
 * what `redactText` catches. The printed URL, and the message that names an unreadable
 * one, are kept whole: a password that is also a word of them (`postgres`, the user's own
 * name) must not turn the scheme, the user or the advice into `[REDACTED]`.
 */
export function redactDatabaseUrlIn(text: string, url: string): string {
  const shown = redactUrl(url);
  const kept = [shown, UNREADABLE_DATABASE_URL];
  // Environment variables cannot hold a NUL, so no password holds these markers.
  const marker = (i: number) => `\u0000${i}\u0000`;
  let out = text.split(url).join(marker(0));
  kept.forEach((piece, i) => {
    out = out.split(piece).join(marker(i));
  });
  for (const secret of passwordSpellings(url)) out = replaceWhole(out, secret);
  out = redactText(out);
  kept.forEach((piece, i) => {
    out = out.split(marker(i)).join(piece);
  });
  return out;
}

/**
 * Why a DATABASE_URL that `isUnreadableUrl` is refused, and the fix; it names no part of
 * the value, since any part of it may be the password.
 */
export const UNREADABLE_DATABASE_URL =
  'DATABASE_URL cannot be parsed as a URL: a / # or ? in its password (or an @ before one ' +
  'of them) hides where the password ends and the host begins. Percent-encode them in the ' +
  'password (/ as %2F, # as %23, ? as %3F, @ as %40; `node -p "encodeURIComponent(process.argv[1])" ' +
  "'<password>'` prints it encoded). No part of the value is printed: any of it may be the password.";

/**
 * A driver's error with `redactDatabaseUrlIn` applied to its message, keeping only its
 * `code`: fit to be an error's `cause` (Node's URL errors carry the URL in `input`).
 */
export function withoutDatabaseUrl(error: unknown, url: string): Error {
  const message = redactDatabaseUrlIn(error instanceof Error ? error.message : String(error), url);
  const code = (error as { code?: unknown } | null)?.code;
  return Object.assign(new Error(message), typeof code === 'string' ? { code } : {});
}

/**
 * A deep copy of `value` with every secret replaced: values under secret keys, and
 * secrets inside strings. Errors become plain objects (message, code, stack, cause), so
 * they can be logged or stored. Cycles are cut.
 */
export function redactSecrets<T>(value: T): T {
  return redactValue(value, new WeakSet(), 0) as T;
}

/**
 * Objects nested deeper than this are replaced by a marker: the walk is recursive, and a
 * hostile payload (a webhook body nested thousands deep) must not overflow the stack of
 * whatever logs or stores it. Real records are a few levels deep.
 */
const MAX_REDACT_DEPTH = 100;
const TOO_DEEP = '[Too deep]';

function redactValue(value: unknown, seen: WeakSet<object>, depth: number): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_REDACT_DEPTH) return TOO_DEEP;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  if (value instanceof Date) return value;
  if (value instanceof Error) {
    const plain: Record<string, unknown> = {
      type: value.name,
      message: redactText(value.message),
    };
    for (const [key, inner] of Object.entries(value)) {
      plain[key] = SECRET_KEY.test(key) ? REDACTED : redactValue(inner, seen, depth + 1);
    }
    if (value.stack) plain['stack'] = redactText(value.stack);
    if (value.cause !== undefined) plain['cause'] = redactValue(value.cause, seen, depth + 1);
    return plain;
  }
  if (Array.isArray(value)) return value.map((item) => redactValue(item, seen, depth + 1));
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] =
      SECRET_KEY.test(key) && inner != null ? REDACTED : redactValue(inner, seen, depth + 1);
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

/**
 * A list or object without JSON's quotes (`a,b`, `{listed:50,failed:1}`): a quoted JSON
 * value would be quoted again below, and every inner quote escaped.
 */
function plainValue(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object' || depth > 1) {
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  if (Array.isArray(value)) return value.map((item) => plainValue(item, depth + 1)).join(',');
  const fields = Object.entries(value).map(
    ([key, item]) => `${key}:${plainValue(item, depth + 1)}`,
  );
  return `{${fields.join(',')}}`;
}

function humanValue(value: unknown): string {
  let text: string;
  if (value && typeof value === 'object' && 'message' in value) {
    const { message, code } = value as { message?: unknown; code?: unknown };
    text = typeof code === 'string' ? `${code}: ${String(message)}` : String(message);
  } else {
    text = plainValue(value);
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
