/**
 * A kept body: what of an upstream answer the raw zone may hold, its address and its
 * compressed bytes (docs/warehouse.md, "Raw zone").
 *
 * Directory credentials (`site_username`, `site_password`) travel inside listing bodies;
 * a non-blank value is replaced by KEPT_OUT_MARKER before hashing, in the text itself so
 * that every other byte stays as received. A blank value stays blank, so that
 * `has_site_credentials` derives on replay exactly as it did on the night. The
 * credential's own token and email never appear in a body; if an error body echoed
 * them, they are replaced too.
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

/** What a directory credential's value becomes in the raw zone. Non-blank on purpose. */
export const KEPT_OUT_MARKER = '[kept out of the raw zone]';

/** The codec of raw_bodies.bytes. */
export const BODY_ENCODING = 'br';

// A JSON string value under a directory-credential key, or a bare scalar (a number).
const DIRECTORY_SECRET =
  /("site_(?:username|password)"\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false)/g;

/** The body text with directory credentials and the given secrets replaced. */
export function withoutSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(DIRECTORY_SECRET, (whole, key: string, value: string) => {
    if (value === 'true' || value === 'false') return whole;
    if (value.startsWith('"')) {
      let decoded: unknown;
      try {
        decoded = JSON.parse(value);
      } catch {
        decoded = value;
      }
      // Blank stays blank: has_site_credentials is "some value is non-blank".
      if (typeof decoded === 'string' && decoded.trim() === '') return whole;
    }
    return `${key}${JSON.stringify(KEPT_OUT_MARKER)}`;
  });
  for (const secret of secrets) {
    if (!secret) continue;
    out = out.split(secret).join(KEPT_OUT_MARKER);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join(KEPT_OUT_MARKER);
  }
  return out;
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

export function compressBody(text: string): Uint8Array {
  return brotliCompressSync(Buffer.from(text, 'utf8'), {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });
}

export function decompressBody(encoding: string, bytes: Uint8Array): string {
  if (encoding !== BODY_ENCODING) {
    throw new Error(
      `A raw body is stored with encoding "${encoding}", which this version cannot read.`,
    );
  }
  return brotliDecompressSync(bytes).toString('utf8');
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
