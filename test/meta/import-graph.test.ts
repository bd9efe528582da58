/**
 * Dependencies point one way. The imports under src/, read from the files, form a graph
 * of folders (a root file such as `log.ts` is its own node; `config.ts` and `config/` are
 * both the node `config`): it has no cycle, the base (configuration and logging) imports
 * nothing else, and the warehouse imports neither the alert rules nor what runs it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cyclesOf } from '../helpers/import-cycles.ts';

const SRC = resolve(import.meta.dirname, '../../src');

type Graph = Map<string, Map<string, string[]>>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : /\.(ts|mts|js|mjs)$/.test(entry.name)
        ? [join(dir, entry.name)]
        : [],
  );
}

/** `alerts/…` → `alerts/`; `log.ts` → `log`; `config.ts` and `config/…` → `config`. */
function nodeOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  const node =
    parts.length > 1 ? `${parts[0]}/` : (parts[0] ?? '').replace(/\.(ts|mts|js|mjs)$/, '');
  return node === 'config/' ? 'config' : node;
}

/** Folder-level edges, each with the file imports that make it (static, dynamic, re-export). */
function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = resolve(file, '..', match[1] as string);
      if (!target.startsWith(SRC + sep)) continue;
      const from = nodeOf(file);
      const to = nodeOf(target);
      if (from === to) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [
        ...(edges.get(to) ?? []),
        `${relative(SRC, file)} -> ${relative(SRC, target)}`,
      ]);
    }
  }
  return graph;
}

/** Each cycle as `a <-> b <-> c`, followed by the file imports along it. */
function describeCycles(graph: Graph): string[] {
  const edges = new Map([...graph].map(([from, to]) => [from, [...to.keys()]]));
  return cyclesOf(edges).map((cycle) => {
    const inCycle = new Set(cycle);
    const imports = cycle.flatMap((from) =>
      [...(graph.get(from) ?? [])].filter(([to]) => inCycle.has(to)).flatMap(([, files]) => files),
    );
    return `${cycle.join(' <-> ')}: ${imports.join(', ')}`;
  });
}

/** What `from` imports, as `node: file -> file` lines, of the nodes `allowed` leaves out. */
function importsBeyond(graph: Graph, from: string, allowed: (node: string) => boolean): string[] {
  return [...(graph.get(from) ?? [])]
    .filter(([to]) => !allowed(to))
    .flatMap(([to, files]) => files.map((f) => `${to}: ${f}`));
}

describe('import graph of src/', () => {
  const graph = importGraph();

  it('is read from the files: known edges are there', () => {
    // A walker that found nothing would pass every check below.
    expect(graph.get('sync/')?.has('warehouse/')).toBe(true);
    expect(graph.get('alerts/')?.has('warehouse/')).toBe(true);
    expect(graph.get('warehouse/')?.has('log')).toBe(true);
  });

  it('finds a cycle when there is one, and names its nodes', () => {
    const edges = new Map([
      ['a/', ['b/']],
      ['b/', ['c']],
      ['c', ['a/', 'd/']],
      ['d/', []],
    ]);
    expect(cyclesOf(edges)).toEqual([['a/', 'b/', 'c']]);
    expect(cyclesOf(new Map([['a/', ['b/']]]))).toEqual([]);
  });

  it('has no cycle between any two folders or root files', () => {
    expect(describeCycles(graph)).toEqual([]);
  });

  it('the base (configuration, logging and the error base) imports nothing else of src/', () => {
    const base = new Set(['config', 'log', 'errors']);
    expect(importsBeyond(graph, 'config', (to) => base.has(to))).toEqual([]);
    expect(importsBeyond(graph, 'log', (to) => base.has(to))).toEqual([]);
    // src/errors.ts: every folder may import it, so it imports nothing of ours.
    expect(importsBeyond(graph, 'errors', () => false)).toEqual([]);
  });

  it('the warehouse imports neither the alerts nor what runs it (sync, serve, the CLI)', () => {
    const above = new Set(['alerts/', 'sync/', 'serve/', 'cli/', 'cli']);
    expect(importsBeyond(graph, 'warehouse/', (to) => !above.has(to))).toEqual([]);
  });
});
