/**
 * A test file that syncs more than a small world in `beforeEach` pays for that world once
 * per test, on each backend: the suite's CPU doubled that way (issue 57). Such a file must
 * say why, with a marker comment `// world per test: <reason>` (a test that writes to what
 * it syncs, where a copy of a shared world would not do); otherwise its tests read a world
 * built once (`beforeAll`, or a shared one) and build their own only when they write
 * (docs/development.md, "A new test file").
 *
 * Read from the source: a `beforeEach` that calls a sync (the harness's `sync`, `runSync`,
 * `syncNight`, `runDemo`, `simulatedDemo`…), directly or through a function of the same
 * file, of a sandbox of more than `SMALL_BUSINESSES` businesses (its `startSandbox` options'
 * `accounts × businessesPerAccount`, the sandbox's defaults 2 × 25 where they are not given
 * there or in a constant of the file they spread).
 */
import { readFileSync } from 'node:fs';
import { glob } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** A small world: what a test may sync for itself in `beforeEach` without saying why. */
const SMALL_BUSINESSES = 6;

/** The sandbox's own defaults (src/sandbox/server.ts). */
const DEFAULT_ACCOUNTS = 2;
const DEFAULT_BUSINESSES_PER_ACCOUNT = 25;

const SYNC_CALL =
  /(?<![\w.])(?:sync|runSync|syncNight|syncProxied|shareThenSync|runDemo|simulatedDemo)\s*\(/;
const MARKER = /\/\/ world per test: \S/;

/** The text from `open` (an opening bracket) to its matching close. */
function balanced(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    if (depth === 0) return text.slice(open, i + 1);
  }
  return text.slice(open);
}

/** The bodies of the file's named functions (`function f(`, `const f = async (`). */
function localFunctions(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(
    /(?:function\s+(\w+)\s*\(|(?:const|let)\s+(\w+)\s*=\s*(?:async\s*)?\()/g,
  )) {
    const name = m[1] ?? m[2];
    const brace = text.indexOf('{', (m.index ?? 0) + m[0].length);
    if (name && brace >= 0) found.set(name, balanced(text, brace));
  }
  return found;
}

/** Every `beforeEach(…)` of the file, with the bodies of the file's functions it calls. */
function beforeEachCode(text: string): string[] {
  const functions = localFunctions(text);
  return [...text.matchAll(/(?<![\w.])beforeEach\s*\(/g)].map((m) => {
    const hook = balanced(text, (m.index ?? 0) + m[0].length - 1);
    const called = [...functions]
      .filter(([name]) => new RegExp(`(?<![\\w.])${name}\\s*\\(`).test(hook))
      .map(([, body]) => body);
    return [hook, ...called].join('\n');
  });
}

/** The businesses of the largest sandbox `code` starts (constants it spreads read from `text`). */
function largestSandbox(code: string, text: string): number {
  let largest = 0;
  for (const m of code.matchAll(/startSandbox\s*\(/g)) {
    let options = balanced(code, (m.index ?? 0) + m[0].length - 1);
    for (const spread of options.matchAll(/\.\.\.(\w+)/g)) {
      const constant = new RegExp(`const\\s+${spread[1]}\\s*=\\s*\\{`).exec(text);
      if (constant) options += balanced(text, constant.index + constant[0].length - 1);
    }
    const number = (key: string, fallback: number) =>
      Number(new RegExp(`\\b${key}:\\s*(\\d+)`).exec(options)?.[1] ?? fallback);
    largest = Math.max(
      largest,
      number('accounts', DEFAULT_ACCOUNTS) *
        number('businessesPerAccount', DEFAULT_BUSINESSES_PER_ACCOUNT),
    );
  }
  return largest;
}

/** Why `text` breaks the rule, or undefined when it keeps it. */
function worldPerTestWithoutReason(text: string): string | undefined {
  if (MARKER.test(text)) return undefined;
  for (const code of beforeEachCode(text)) {
    if (!SYNC_CALL.test(code)) continue;
    const businesses = largestSandbox(code, text);
    if (businesses > SMALL_BUSINESSES)
      return `syncs ${businesses} businesses in beforeEach without a "// world per test:" reason`;
  }
  return undefined;
}

describe('a world synced per test', () => {
  it('is small, or its file says why', async () => {
    const offending: string[] = [];
    let syncing = 0;
    for await (const file of glob('test/**/*.test.ts', { cwd: ROOT })) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      if (beforeEachCode(text).some((code) => SYNC_CALL.test(code))) syncing++;
      const why = worldPerTestWithoutReason(text);
      if (why) offending.push(`${file}: ${why}`);
    }
    // The check reads what it should: some files do sync a small world per test.
    expect(syncing).toBeGreaterThan(0);
    expect(offending).toEqual([]);
  });

  it('sees a large world synced in beforeEach, through a function of the file, and the marker', () => {
    const large = `
      const WORLD = { seed: 1, accounts: 2, businessesPerAccount: 8 };
      async function open() { const s = await startSandbox({ ...WORLD, port: 0 }); await sync(w, api, s.credentials); }
      beforeEach(async () => { world = await open(); });`;
    expect(worldPerTestWithoutReason(large)).toMatch(/syncs 16 businesses/);
    expect(worldPerTestWithoutReason(`// world per test: each test posts replies\n${large}`)).toBe(
      undefined,
    );
    // Defaults where the options do not say: 2 × 25.
    expect(
      worldPerTestWithoutReason(
        'beforeEach(async () => { s = await startSandbox({ port: 0 }); await runSync(w); });',
      ),
    ).toMatch(/syncs 50 businesses/);
    const small =
      'beforeEach(async () => { s = await startSandbox({ accounts: 1, businessesPerAccount: 3 }); await sync(w); });';
    expect(worldPerTestWithoutReason(small)).toBe(undefined);
    // A large sandbox started but not synced in beforeEach is not a synced world.
    expect(
      worldPerTestWithoutReason(
        'beforeEach(async () => { s = await startSandbox({ port: 0 }); });',
      ),
    ).toBe(undefined);
  });
});
