/**
 * No function in src/ runs over 120 lines (issue 56): one that does several things is split
 * by what it does. Every function of every file is measured, from the line its node starts
 * on to the line it ends on (declarations, expressions, arrows and methods; a nested
 * function's lines count for the function around it too), parsed by the TypeScript parser
 * vitest already brings (oxc, through `rolldown/parseAst`).
 *
 * LONG_FUNCTIONS names those not split yet, so that the rule holds for every other and for
 * every new one; an entry that no longer exceeds the limit fails too, so the list only
 * shrinks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAst } from 'rolldown/parseAst';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');
const LIMIT = 120;

/**
 * Not split yet (`file:function`, the file under src/): none since issue 56 split the last
 * four. An entry here is a debt with its issue; remove it when its function is split.
 */
const LONG_FUNCTIONS: readonly string[] = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

type Node = { type: string; start: number; end: number; [key: string]: unknown };

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as Node).type === 'string';
}

const FUNCTION_TYPES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
]);

/** A function's name: its own, or the variable, property or method it is the value of. */
function nameOf(node: Node, parent: Node | undefined): string | undefined {
  const id = node.id as { name?: string } | null | undefined;
  if (id?.name) return id.name;
  const key = (parent?.id ?? parent?.key) as { name?: string; value?: unknown } | undefined;
  if (key?.name) return key.name;
  if (typeof key?.value === 'string') return key.value;
  return undefined;
}

type FunctionLength = { name: string; line: number; lines: number };

/** Every function of a TypeScript text with its first line and its length in lines. */
function functionLengths(text: string): FunctionLength[] {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((lineStarts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
  const found: FunctionLength[] = [];
  // An anonymous function (a callback) is named after the function around it.
  const walk = (node: Node, parent: Node | undefined, around: string): void => {
    let name = around;
    if (FUNCTION_TYPES.has(node.type)) {
      const own = nameOf(node, parent);
      name = own ?? `${around} (a callback)`;
      const line = lineOf(node.start);
      found.push({ name, line, lines: lineOf(node.end - 1) - line + 1 });
    }
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value]) {
        if (isNode(child)) walk(child, node, name);
      }
    }
  };
  walk(parseAst(text, { lang: 'ts' }) as unknown as Node, undefined, '(top level)');
  return found;
}

function longFunctions(): Map<string, number> {
  const long = new Map<string, number>();
  for (const file of sourceFiles(SRC)) {
    const path = relative(SRC, file).split('\\').join('/');
    for (const fn of functionLengths(readFileSync(file, 'utf8'))) {
      if (fn.lines <= LIMIT) continue;
      const key = `${path}:${fn.name}`;
      long.set(key, Math.max(long.get(key) ?? 0, fn.lines));
    }
  }
  return long;
}

describe('function length', () => {
  it('measures declarations, arrows and methods from their first line to their last', () => {
    const text = [
      'export function a() {', //  1
      '  return 1;', //            2
      '}', //                      3
      'const b = (x: number): number => {', // 4
      '  const inner = () => x;', // 5
      '  return [x].map((y) => y)[0] ?? inner();', // 6
      '};', //                     7
      'class C {', //              8
      '  m(): void {', //          9
      '  }', //                   10
      '}', //                     11
    ].join('\n');
    expect(functionLengths(text)).toEqual([
      { name: 'a', line: 1, lines: 3 },
      { name: 'b', line: 4, lines: 4 },
      { name: 'inner', line: 5, lines: 1 },
      { name: 'b (a callback)', line: 6, lines: 1 },
      { name: 'm', line: 9, lines: 2 },
    ]);
  });

  it(`finds no function in src/ over ${LIMIT} lines but those not split yet`, () => {
    const long = longFunctions();
    const unlisted = [...long].filter(([key]) => !LONG_FUNCTIONS.includes(key));
    expect(unlisted.map(([key, lines]) => `${key} (${lines} lines)`)).toEqual([]);
  });

  it('lists no function as long that no longer is', () => {
    const long = longFunctions();
    expect(LONG_FUNCTIONS.filter((key) => !long.has(key))).toEqual([]);
  });
});
