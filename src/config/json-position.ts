/**
 * Where a JSON text stops being JSON, for an error a person can act on: the line, the
 * column and an excerpt of that line with every value but a credential's name, baseUrl
 * and userEmail masked (and any unquoted word that is not a number or a literal). `JSON.parse`'s own message is not used: it quotes the text
 * around the error, which may be an auth token.
 */

export interface JsonErrorPosition {
  /** 1-based. */
  line: number;
  /** 1-based, in characters. */
  column: number;
  /** The line, cut to EXCERPT_CHARS around the column, values masked. */
  excerpt: string;
}

/** The offset of the first character that is not valid JSON (the text's length at an early end). */
function firstErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = () => {
    if (text[i] !== '"') fail();
    i++;
    while (i < text.length && text[i] !== '"') {
      const code = text.charCodeAt(i);
      if (code < 0x20) fail();
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x')) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!match) fail();
    i += (match as RegExpExecArray)[0].length;
  };
  /** An object's or an array's members, from its opening bracket through `close`. */
  const members = (close: '}' | ']', member: () => void): void => {
    i++;
    space();
    if (text[i] === close) {
      i++;
      return;
    }
    for (;;) {
      member();
      space();
      if (text[i] === ',') i++;
      else if (text[i] === close) {
        i++;
        return;
      } else fail();
    }
  };
  const property = () => {
    space();
    string();
    space();
    if (text[i] !== ':') fail();
    i++;
    value();
  };
  const value = (): void => {
    space();
    const ch = text[i];
    if (ch === '{') members('}', property);
    else if (ch === '[') members(']', value);
    else if (ch === '"') string();
    else if (ch === 't') literal('true');
    else if (ch === 'f') literal('false');
    else if (ch === 'n') literal('null');
    else number();
  };
  try {
    value();
    space();
    if (i < text.length) fail();
    return text.length;
  } catch (offset) {
    return Math.min(offset as number, text.length);
  }
}

/** Values shown as they are: a credential's label, address and e-mail are not secrets. */
const SHOWN_KEYS = /"(name|baseUrl|userEmail)"\s*:\s*$/;

/**
 * Every string on the line that is not a key nor the value of a SHOWN_KEYS key becomes
 * "…", and so does every bare word that is not a number or a literal (an unquoted token).
 */
function maskValues(line: string): string {
  return line.replace(/"(?:[^"\\]|\\.)*("|$)|[^\s"{}[\],:]+/g, (match, _close, offset: number) => {
    if (!match.startsWith('"')) {
      return /^(true|false|null|-?\d+(\.\d+)?([eE][+-]?\d+)?)$/.test(match) ? match : '…';
    }
    const after = line.slice(offset + match.length);
    if (match.length > 1 && match.endsWith('"') && /^\s*:/.test(after)) return match;
    if (SHOWN_KEYS.test(line.slice(0, offset))) return match;
    return '"…"';
  });
}

/** A longer line is cut to this many characters around the error. */
const EXCERPT_CHARS = 100;

/** Where `text` (which `JSON.parse` refused) goes wrong; never quotes a secret. */
export function jsonErrorPosition(text: string): JsonErrorPosition {
  const offset = firstErrorOffset(text);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const lineStart = before.lastIndexOf('\n') + 1;
  const column = offset - lineStart + 1;
  const end = text.indexOf('\n', lineStart);
  const untrimmed = text.slice(lineStart, end === -1 ? text.length : end).trimEnd();
  const raw = untrimmed.trimStart();
  const indent = untrimmed.length - raw.length;
  const whole = maskValues(raw);
  if (whole.length <= EXCERPT_CHARS) return { line, column, excerpt: whole };
  // Masking changes lengths: find the column in the masked line by masking what precedes it.
  const at = maskValues(raw.slice(0, Math.max(0, column - 1 - indent))).length;
  const from = Math.max(0, Math.min(at - EXCERPT_CHARS / 2, whole.length - EXCERPT_CHARS));
  const cut = whole.slice(from, from + EXCERPT_CHARS);
  const excerpt = `${from > 0 ? '…' : ''}${cut}${from + EXCERPT_CHARS < whole.length ? '…' : ''}`;
  return { line, column, excerpt };
}
