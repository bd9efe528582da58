/**
 * What the client quotes from the upstream, scrubbed: a credential's own `auth_token` and
 * `user_email` (raw and URL-encoded) and anything secret-shaped (src/log.ts's
 * `redactText`) are replaced before a text goes into an error, and body snippets are cut
 * short. A value is replaced where it stands whole, never inside a longer word
 * (`replaceWhole`).
 */

import type { Credential } from '../../config/index.ts';
import { redactText, replaceWhole } from '../../log.ts';
import { errorCodeOf } from './transport.ts';

/** Upstream body text quoted in errors is cut to this length. */
const SNIPPET_CHARS = 200;

/** Remove the credential's own values and anything secret-shaped from a text. */
export function scrub(text: string, credential: Credential): string {
  let out = text;
  for (const secret of [credential.authToken, credential.userEmail]) {
    if (secret) out = replaceWhole(out, secret);
    const encoded = encodeURIComponent(secret);
    if (encoded && encoded !== secret) out = replaceWhole(out, encoded);
  }
  return redactText(out);
}

/** At most SNIPPET_CHARS of a body, on one line, scrubbed. */
export function snippet(text: string, credential: Credential): string {
  const oneLine = scrub(text, credential).replace(/\s+/g, ' ').trim();
  return oneLine.length > SNIPPET_CHARS ? `${oneLine.slice(0, SNIPPET_CHARS - 1)}…` : oneLine;
}

/** A transport error as a cause: its message scrubbed, its code kept. */
export function scrubbedCause(error: unknown, credential: Credential): unknown {
  if (!(error instanceof Error)) return error;
  const copy = new Error(scrub(error.message, credential));
  copy.name = error.name;
  const code = errorCodeOf(error);
  if (code) Object.assign(copy, { code });
  return copy;
}
