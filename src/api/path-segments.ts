/** Path segments of an operation's URL from ids, checked and encoded. */

/** A path segment from a numeric id; rejects anything that is not a positive integer. */
export function idSegment(name: string, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, got ${String(value)}.`);
  }
  return String(value);
}

/** A path segment from a text id (uuid, request id), encoded. */
export function textSegment(name: string, value: string | number): string {
  const text = String(value).trim();
  if (text === '') throw new RangeError(`${name} must not be empty.`);
  return encodeURIComponent(text);
}
