/**
 * `X-Service-Signature` (docs/upstream.md, "Webhooks"; docs/serve.md): `sha256=<HMAC-SHA256(secret, raw
 * body)>`, the digest in lowercase hex or in base64, the `sha256=` prefix optional. Any one
 * of several secrets may match, so a secret can be rotated without downtime. Compared in
 * constant time over equal-length buffers; nothing here ever logs or returns a secret.
 *
 * Shared by `serve` (verifying deliveries) and `alerts` (signing the JSON sink's posts),
 * so it belongs to neither.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';

/** A SHA-256 digest is 32 bytes. */
const DIGEST_BYTES = 32;
const HEX = /^[0-9a-fA-F]{64}$/;
/** 32 bytes in base64 (standard or URL-safe alphabet): 43 characters and one `=`. */
const BASE64 = /^[A-Za-z0-9+/_-]{43}=?$/;

/** The header value our own senders use (lowercase hex). */
export function signBody(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The digest bytes a header value carries, or null when it is not a SHA-256 digest. */
export function parseSignature(header: string | string[] | undefined): Buffer | null {
  if (typeof header !== 'string') return null;
  let value = header.trim();
  if (value.toLowerCase().startsWith('sha256=')) value = value.slice('sha256='.length).trim();
  if (HEX.test(value)) return Buffer.from(value, 'hex');
  if (BASE64.test(value)) {
    const digest = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    return digest.length === DIGEST_BYTES ? digest : null;
  }
  return null;
}

/**
 * True when `header` is a valid signature of `rawBody` under any of `secrets`. Every
 * secret is tried (no early exit), so the time taken does not tell which one matched.
 */
export function verifySignature(
  rawBody: Buffer,
  header: string | string[] | undefined,
  secrets: readonly string[],
): boolean {
  const given = parseSignature(header);
  if (!given || secrets.length === 0) return false;
  let valid = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(rawBody).digest();
    // Both are 32 bytes by construction, as timingSafeEqual requires.
    if (timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
}
