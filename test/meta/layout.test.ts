/**
 * The layout of src/, read from its files (docs/contributing.md, the table at the top):
 * no circle of file imports anywhere, type-only imports included; no folder holding more
 * than a fifth of src/, the sandbox aside; the command layer under src/cli, which nothing
 * below the CLI imports; and `database.ts` naming no table (each owner declares its own).
 * test/meta/import-graph.test.ts holds the same graph folder by folder.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cyclesOf } from '../helpers/import-cycles.ts';

const SRC = resolve(import.meta.dirname, '../../src');

/** The files of `dir` and its sub-folders, as paths under src/. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : /\.(ts|mts|js|mjs)$/.test(entry.name)
        ? [relative(SRC, join(dir, entry.name))]
        : [],
  );
}

/** Each file's imports of src/ files: static, dynamic, type-only and re-exports. */
function fileGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(join(SRC, file), 'utf8');
    const targets = new Set<string>();
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = resolve(SRC, dirname(file), match[1] as string);
      if (target.startsWith(SRC + sep)) targets.add(relative(SRC, target));
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** Each circle as its files, then the imports along it. */
function describeCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  return cyclesOf(graph).map((cycle) => {
    const inCycle = new Set(cycle);
    const imports = cycle.flatMap((from) =>
      (graph.get(from) ?? []).filter((to) => inCycle.has(to)).map((to) => `${from} -> ${to}`),
    );
    return `${cycle.join(' <-> ')}: ${imports.join(', ')}`;
  });
}

/** The lines of each folder's own files (a sub-folder is a folder of its own), the sandbox aside. */
function folderLines(): { folders: Map<string, number>; total: number } {
  const folders = new Map<string, number>();
  let total = 0;
  for (const file of sourceFiles(SRC)) {
    if (file.startsWith(`sandbox${sep}`)) continue;
    const lines = readFileSync(join(SRC, file), 'utf8').split('\n').length;
    const folder = dirname(file);
    folders.set(folder, (folders.get(folder) ?? 0) + lines);
    total += lines;
  }
  return { folders, total };
}

describe('layout of src/', () => {
  const graph = fileGraph();

  it('is read from the files: known imports are there', () => {
    // A walker that found nothing would pass every check below.
    expect(graph.get('sync/run.ts')?.length).toBeGreaterThan(5);
    expect(graph.get('warehouse/tables/listings.ts')).toContain('warehouse/database.ts');
    // A type-only import is an edge too.
    expect(readFileSync(join(SRC, 'sync/in-flight.ts'), 'utf8')).toMatch(/^import type /m);
    expect(graph.get('sync/in-flight.ts')).toContain('log.ts');
  });

  it('finds a circle when there is one, and names its files', () => {
    const edges = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
    ]);
    expect(cyclesOf(edges)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    expect(cyclesOf(new Map([['a.ts', ['b.ts']]]))).toEqual([]);
  });

  it('has no circle of file imports, type-only imports included', () => {
    expect(describeCycles(graph)).toEqual([]);
  });

  it('no folder holds more than a fifth of src/ (the sandbox aside)', () => {
    const { folders, total } = folderLines();
    expect(total).toBeGreaterThan(10_000);
    const over = [...folders]
      .filter(([, lines]) => lines > total / 5)
      .map(([folder, lines]) => `${folder}: ${((100 * lines) / total).toFixed(1)} %`);
    expect(over).toEqual([]);
  });

  it('the command layer is under src/cli, and nothing below the CLI imports src/cli', () => {
    expect(sourceFiles(SRC).filter((file) => /^(command|workflows)\//.test(file))).toEqual([]);
    const below = [...graph]
      .filter(([from]) => !from.startsWith(`cli${sep}`))
      .flatMap(([from, to]) =>
        to.filter((t) => t.startsWith(`cli${sep}`)).map((t) => `${from} -> ${t}`),
      );
    expect(below).toEqual([]);
  });

  it('database.ts names no table: every table is declared by its owner', () => {
    expect(graph.get('warehouse/database.ts')?.filter((to) => to.startsWith('warehouse/'))).toEqual(
      [],
    );
    const text = readFileSync(join(SRC, 'warehouse/database.ts'), 'utf8');
    expect(text).toMatch(/export interface Database \{\}/);
    expect(text).not.toMatch(/export interface \w+Table\b/);
  });

  it('the alert kinds contract reaches nothing of the outbox, through any import', () => {
    const reached = new Set<string>();
    const walk = (file: string): void => {
      for (const to of graph.get(file) ?? []) {
        if (reached.has(to)) continue;
        reached.add(to);
        walk(to);
      }
    };
    walk('alerts/kinds/kind.ts');
    expect(reached.has('alerts/alert.ts')).toBe(true);
    expect([...reached].filter((to) => /^alerts\/(outbox|sink-rows)/.test(to))).toEqual([]);
  });
});
