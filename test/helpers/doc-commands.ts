/**
 * Reading the command lines the docs show: their fenced blocks, a line split into words
 * as sh would, and `A=1 npx listings-sync sync` split into environment and arguments.
 * Shared by the walks of test/meta (readme.test.ts, docs-walk.test.ts). Pure: no
 * file, process or database.
 */

/** One fenced block of a Markdown text. */
export interface Fence {
  /** The info string after the opening fence (`sh`, `json`, … or empty). */
  lang: string;
  /** The block's first line number in the text. */
  line: number;
  /** The text between the fences. */
  body: string;
}

/** The fenced blocks of `markdown`, in order. */
export function fences(markdown: string): Fence[] {
  return [...markdown.matchAll(/^```([\w-]*)\n([\s\S]*?)^```/gm)].map((match) => ({
    lang: match[1] ?? '',
    line: markdown.slice(0, match.index).split('\n').length,
    body: match[2] ?? '',
  }));
}

/** Split a command line as sh would (quotes, `#` comments), for the docs' simple lines. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: '"' | "'" | null = null;
  let started = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) words.push(word);
      word = '';
      started = false;
    } else if (ch === '#' && !started) {
      break;
    } else {
      word += ch;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}

/**
 * `A=1 B=2 npx listings-sync sync` (or `node_modules/.bin/node bin/listings-sync.mjs …`) →
 * environment and CLI arguments; null for any other command.
 */
export function parseCliLine(line: string): { env: Record<string, string>; args: string[] } | null {
  const words = shellWords(line);
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_]+=/.test(words[0])) {
    const [name, ...value] = (words.shift() as string).split('=');
    env[name as string] = value.join('=');
  }
  // Long-running commands are documented under `node` itself (npx does not pass SIGTERM on).
  const npx = words[0] === 'npx' && words[1] === 'listings-sync';
  const node = words[0] === 'node_modules/.bin/node' && words[1] === 'bin/listings-sync.mjs';
  if (!npx && !node) return null;
  return { env, args: words.slice(2) };
}
