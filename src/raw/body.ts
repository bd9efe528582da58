/**
 * A kept body: what of an upstream answer the raw zone may hold, its address and its
 * compressed bytes (docs/warehouse.md, "Raw zone").
 *
 * Directory credentials (`site_username`, `site_password`) travel inside listing bodies.
 * They are found on the parsed value, as replay will read it, not on the text: a key
 * written with escapes (`"site\u005fpassword"`) is the same key once parsed, and a value
 * may be of any type. Before hashing, every such value but a null or a blank string is
 * replaced (KEPT_OUT_MARKER for a string, KEPT_OUT_VALUE for any other type), so that
 * `has_site_credentials` derives on replay exactly as it did on the night. The
 * credential's own token and email never appear in a body; if an error body echoed them,
 * they are replaced too.
 */
import { createHash } from 'node:crypto';
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  zstdCompressSync,
  zstdDecompressSync,
} from 'node:zlib';

/** What a directory credential's string value becomes in the raw zone. Non-blank on purpose. */
const KEPT_OUT_MARKER = '[kept out of the raw zone]';

/**
 * What a directory credential's value of any other type (number, boolean, array, object)
 * becomes: `["[kept out of the raw zone]"]` in the kept body. Not a string on purpose: `has_site_credentials` is "some value is a non-blank
 * string" (listingSchema, src/api/listings.ts), false for such a value, and false for this.
 */
const KEPT_OUT_VALUE: readonly string[] = Object.freeze([KEPT_OUT_MARKER]);

/** The codec of a body kept whole in raw_bodies.bytes: brotli. */
export const BODY_ENCODING = 'br';

/**
 * The codec of a body kept as what changed since its base (migration 0032): zstd with the
 * text of `raw_bodies.base_hash`, a body kept whole, as its dictionary. A base is never
 * itself a delta, so a body decodes from at most two rows.
 */
export const DELTA_ENCODING = 'zstd-dict';

/** Keys whose values are directory credentials, as they read once parsed. */
const DIRECTORY_CREDENTIALS: ReadonlySet<string> = new Set(['site_username', 'site_password']);

/**
 * What a webhook payload and a log excerpt keep out, by the raw zone's rule: directory
 * credentials, and the credential's e-mail and token (SECRET_PARAMS: `user_email`,
 * `auth_token`), wherever they sit (docs/serve.md, "Webhooks").
 */
export const KEPT_OUT_KEYS: ReadonlySet<string> = new Set([
  'site_username',
  'site_password',
  'user_email',
  'auth_token',
]);

/** The body text with directory credentials and the given secrets replaced. */
export function withoutSecrets(text: string, secrets: readonly string[] = []): string {
  let out = withoutDirectoryCredentials(text);
  for (const secret of secrets) {
    if (!secret) continue;
    out = out.split(secret).join(KEPT_OUT_MARKER);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join(KEPT_OUT_MARKER);
  }
  return out;
}

/**
 * A text without a match cannot hold a directory-credential key, so it need not be parsed.
 * JSON writes each character of a key either as itself or as a `\uXXXX` escape (hex in
 * either case; its other escapes stand for `"`, `\`, `/` and control characters). The
 * names are made of `_` (U+005F) and the lower-case letters a-z (U+0061 to U+007A). So a
 * key that parses to either name is written either entirely as itself, and the name is in
 * the text, or with at least one of those characters escaped, `\u005f` or `\u0061` to
 * `\u007a`. The text rule for a body that does not parse decodes keys as JSON does, so
 * this holds there too. Most bodies (reviews, rankings, keywords, even with non-ASCII
 * text escaped as `\u00e9`) pass here without being parsed.
 */
const MAY_HOLD_DIRECTORY_CREDENTIAL =
  /site_(?:username|password)|\\u00(?:5[fF]|6[1-9a-fA-F]|7[0-9aA])/;

/**
 * The text with every directory credential kept out. A text whose parsed value holds no
 * credential key is kept byte for byte. One that does is kept re-serialised
 * (JSON.stringify), even when no value needed replacing: a key written twice in one
 * object parses to its last value, and an earlier one, in the text only, must not stay.
 * A text that does not parse (an HTML error page, a cut-off body) gets the same rule
 * applied to its text (`withoutCredentialsInText`).
 */
function withoutDirectoryCredentials(text: string): string {
  if (!MAY_HOLD_DIRECTORY_CREDENTIAL.test(text)) return text;
  return keptOutOfText(text, DIRECTORY_CREDENTIALS);
}

/**
 * The raw zone's rule on a text, for any set of keys (KEPT_OUT_KEYS for a webhook's log
 * excerpt): parsed, the value of every such key replaced and the whole re-serialised;
 * a text that does not parse (cut short, not JSON) gets the text rule instead.
 */
export function keptOutOfText(text: string, keys: ReadonlySet<string> = KEPT_OUT_KEYS): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return withoutCredentialsInText(text, keys);
  }
  if (!keepOut(parsed, keys)) return text;
  try {
    return JSON.stringify(parsed);
  } catch {
    // Nested deeper than JSON.stringify can recurse (JSON.parse is not so bounded).
    return withoutCredentialsInText(text, keys);
  }
}

/** What a directory credential's value is kept as. */
function keptOut(value: unknown): unknown {
  // Nothing to keep out: a null, or a blank string (has_site_credentials reads false).
  if (value === null) return value;
  if (typeof value === 'string') return value.trim() === '' ? value : KEPT_OUT_MARKER;
  return KEPT_OUT_VALUE;
}

/**
 * Replaces, in place, the value of every key in `keys` (directory credentials in the raw
 * zone; KEPT_OUT_KEYS in a stored webhook payload) of every object at any depth; true
 * when there was such a key. A loop, not recursion: a parsed body may be nested deeper
 * than the stack allows.
 */
export function keepOut(root: unknown, keys: ReadonlySet<string> = KEPT_OUT_KEYS): boolean {
  let found = false;
  const pending: object[] = [];
  if (typeof root === 'object' && root !== null) pending.push(root);
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'object' && item !== null) pending.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const inner = record[key];
      if (keys.has(key)) {
        found = true;
        record[key] = keptOut(inner);
      } else if (typeof inner === 'object' && inner !== null) {
        pending.push(inner);
      }
    }
  }
  return found;
}

// A quoted string followed by a colon: a key, escapes and all. The name is at most 13
// characters, each written as itself (1) or as `\uXXXX` (6).
const QUOTED_KEY = /"((?:[^"\\\n]|\\.){1,78})"\s*:\s*/g;

/**
 * The text rule, for a text that does not parse: every quoted key that decodes to a
 * credential name, and the value after its colon whatever it is (a string, a number, an
 * array or object to its matching bracket), up to where it closes or the text ends, is
 * replaced as `keptOut` would. When in doubt it keeps out too much, never too little.
 */
function withoutCredentialsInText(text: string, keys: ReadonlySet<string>): string {
  let out = '';
  let copied = 0;
  QUOTED_KEY.lastIndex = 0;
  for (let match = QUOTED_KEY.exec(text); match; match = QUOTED_KEY.exec(text)) {
    if (!keys.has(decodedString(match[1] as string) ?? '')) continue;
    const start = match.index + match[0].length;
    const end = valueEnd(text, start);
    const value = text.slice(start, end);
    let kept: string;
    if (value === 'null') kept = value;
    else if (value.startsWith('"')) {
      const decoded = decodedString(value.slice(1, -1));
      kept =
        value.endsWith('"') && decoded !== null && decoded.trim() === ''
          ? value
          : `"${KEPT_OUT_MARKER}"`;
    } else kept = JSON.stringify(KEPT_OUT_VALUE);
    out += text.slice(copied, start) + kept;
    copied = end;
    QUOTED_KEY.lastIndex = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** A JSON string's content decoded, or null when it is not valid JSON. */
function decodedString(content: string): string | null {
  try {
    return JSON.parse(`"${content}"`) as string;
  } catch {
    return null;
  }
}

/** Where the JSON value starting at `start` ends, tolerantly: at the text's end if it does not close. */
function valueEnd(text: string, start: number): number {
  const first = text[start];
  if (first === '"') return stringEnd(text, start);
  if (first === '[' || first === '{') {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (c === '"') i = stringEnd(text, i) - 1;
      else if (c === '[' || c === '{') depth++;
      else if ((c === ']' || c === '}') && --depth === 0) return i + 1;
    }
    return text.length;
  }
  const scalar = /[\s,\]}]/g;
  scalar.lastIndex = start;
  return scalar.exec(text)?.index ?? text.length;
}

/** The index after the closing quote of the string opening at `start`, or the text's end. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '"') return i + 1;
  }
  return text.length;
}

/** sha256 of the (already cleaned) text, lowercase hex: the body's address. */
export function bodyHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A body as the raw zone keeps it: the text with secrets replaced, and its hash. */
export interface KeptBody {
  text: string;
  hash: string;
}

// The raw capture and the sync's answers check (src/sync/business.ts) each need the kept
// form of the same response, one right after the other: the second takes the first's.
// Bounded: an entry whose second use never comes (no capture) is dropped with the rest.
const MAX_PENDING_KEPT = 256;
const pendingKept = new Map<string, KeptBody & { secrets: string }>();

/**
 * `withoutSecrets` and `bodyHash` of a response's text, computed once for the two users
 * of the same response: the first computes and leaves it, the second takes it.
 */
export function keptBody(text: string, secrets: readonly string[]): KeptBody {
  const key = secrets.join('\u0000');
  const pending = pendingKept.get(text);
  if (pending && pending.secrets === key) {
    pendingKept.delete(text);
    return { text: pending.text, hash: pending.hash };
  }
  const kept = withoutSecrets(text, secrets);
  const body = { text: kept, hash: bodyHash(kept) };
  if (pendingKept.size >= MAX_PENDING_KEPT) pendingKept.clear();
  pendingKept.set(text, { ...body, secrets: key });
  return body;
}

// Quality 5: on a 20 KB listings body it compresses within 1 % of quality 9 (about 27:1)
// at a tenth of the time (2 ms against 22 ms here), which a sync pays per changed body.
const BROTLI_QUALITY = 5;

/**
 * The brotli window for a body of `size` bytes: the smallest that holds it (a window of
 * 2^bits bytes holds 16 fewer; 10 to 24 bits, brotli's range). A window past the body
 * finds nothing more in it, and the encoder sets up its tables for the window: sized to
 * the body, the 3,009 bodies of a first sync of 500 compress in about 12 % less CPU into
 * 0.1 % fewer bytes (docs/benchmarks.md). The window is written in the stream's header, so
 * any brotli decoder reads it.
 */
export function brotliWindowBits(size: number): number {
  const { BROTLI_MIN_WINDOW_BITS: min, BROTLI_MAX_WINDOW_BITS: max } = constants;
  return Math.min(max, Math.max(min, Math.ceil(Math.log2(size + 16))));
}

export function compressBody(text: string): Uint8Array {
  const bytes = Buffer.from(text, 'utf8');
  return brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_LGWIN]: brotliWindowBits(bytes.length),
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
}

// Level 6: on a reviews body against the previous night's it keeps 444 bytes where brotli
// quality 5 keeps 947 of the whole, in 0.26 ms against 1.8 ms (level 9: 343 bytes, 1.7 ms).
const ZSTD_LEVEL = 6;

/** The text compressed with `base` (a body kept whole) as its zstd dictionary. */
export function compressDelta(text: string, base: string): Uint8Array {
  return zstdCompressSync(Buffer.from(text, 'utf8'), {
    dictionary: Buffer.from(base, 'utf8'),
    params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
  });
}

/**
 * A kept body's text. A delta (DELTA_ENCODING) needs its base's text; a body kept whole
 * (`br`) needs nothing else.
 */
export function decompressBody(encoding: string, bytes: Uint8Array, base?: string): string {
  if (encoding === BODY_ENCODING) return brotliDecompressSync(bytes).toString('utf8');
  if (encoding === DELTA_ENCODING) {
    if (base === undefined)
      throw new Error('A raw body kept as a delta was read without its base.');
    return zstdDecompressSync(bytes, { dictionary: Buffer.from(base, 'utf8') }).toString('utf8');
  }
  throw new Error(
    `A raw body is stored with encoding "${encoding}", which this version cannot read.`,
  );
}

/**
 * Why a kept body does not read, in the words replay names it with (docs/replay.md, "A
 * night it cannot rebuild"): the request it answered, its hash, and the cause.
 */
export function unreadableBodyReason(request: string, hash: string, cause: unknown): string {
  const text = cause instanceof Error ? cause.message : String(cause);
  return `the kept body of ${request} (${hash}) cannot be read: ${text}`;
}

/** A kept body as stored, with its base's row when it is a delta. */
export interface StoredBody {
  encoding: string;
  bytes: Uint8Array;
  base_encoding?: string | null;
  base_bytes?: Uint8Array | null;
}

/** The text of a stored body read with its base's columns (`base_encoding`, `base_bytes`). */
export function storedBodyText(row: StoredBody): string {
  if (row.encoding !== DELTA_ENCODING) return decompressBody(row.encoding, row.bytes);
  if (!row.base_encoding || !row.base_bytes) {
    throw new Error('A raw body kept as a delta has lost its base.');
  }
  return decompressBody(row.encoding, row.bytes, decompressBody(row.base_encoding, row.base_bytes));
}

/**
 * The request as the raw zone names it: the path under /api/v2 and its query sorted,
 * without `auth_token` and `user_email`. Replay looks bodies up by it.
 */
export function requestKey(path: string, query: Readonly<Record<string, string>>): string {
  const params = new URLSearchParams(
    Object.entries(query)
      .filter(([name]) => !SECRET_PARAMS.has(name))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  ).toString();
  return params ? `${path}?${params}` : path;
}

/** Query parameters that carry the credential: never kept. */
export const SECRET_PARAMS: ReadonlySet<string> = new Set(['auth_token', 'user_email']);

/** The business a read is about, from its path (`/businesses/42/...`), or null. */
export function businessIdOfPath(path: string): number | null {
  const match = /^\/businesses\/(\d+)[/.]/.exec(path);
  return match ? Number(match[1]) : null;
}
