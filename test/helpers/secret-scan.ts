/**
 * Looking for secrets in what was stored or printed, in every form they may take there:
 * as themselves, or written with JSON escapes (`"\u0068unter2"` is `hunter2` to any
 * reader, and escapes of escapes when JSON text sits inside JSON, as a body in a row
 * dump does); and a secret of another type than a string (a number, an array or object
 * of values) leaf by leaf. Pure: the unit suites use it too.
 */

const ESCAPED = /\\u([0-9a-fA-F]{4})|\\(["\\/bfnrt])/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/** The text with its JSON string escapes decoded once, left to right. */
export function jsonEscapesDecoded(text: string): string {
  return text.replace(ESCAPED, (_whole, hex: string | undefined, short: string | undefined) =>
    hex ? String.fromCharCode(Number.parseInt(hex, 16)) : (SHORT_ESCAPES[short ?? ''] ?? ''),
  );
}

/**
 * The text, followed by each further decoding of its JSON escapes until nothing changes
 * (at most four deep): what `toContain` must search so that an escaped secret is found.
 */
export function scannableText(text: string): string {
  const forms = [text];
  for (let depth = 0; depth < 4; depth++) {
    const next = jsonEscapesDecoded(forms[forms.length - 1] as string);
    if (next === forms[forms.length - 1]) break;
    forms.push(next);
  }
  return forms.join('\n');
}

/**
 * What of a secret value a scan looks for: a string itself, a number as JSON writes it,
 * and the strings and numbers inside an array or object at any depth. Booleans and null
 * hold nothing to find.
 */
export function secretLeaves(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (typeof value === 'number') return [JSON.stringify(value)];
  if (Array.isArray(value)) return value.flatMap(secretLeaves);
  if (typeof value === 'object' && value !== null)
    return Object.values(value).flatMap(secretLeaves);
  return [];
}

/** The leaves of `secrets` that `text` holds in any form (`scannableText`): [] when clean. */
export function secretsFoundIn(text: string, secrets: readonly unknown[]): string[] {
  const scanned = scannableText(text);
  return [...new Set(secrets.flatMap(secretLeaves))].filter((leaf) => scanned.includes(leaf));
}
