/**
 * The repository cites only what it contains: no source file points at a design document
 * or a spec that is not in the repository, and the documented commands run on the
 * project's Node (`npx listings-sync …`), not the machine's (`node bin/listings-sync.mjs …`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, ext);
    return ext.test(name) ? [path] : [];
  });
}

describe('citations', () => {
  it('no source file or shipped manifest cites design.md or the seed', () => {
    const shipped = [...files(join(ROOT, 'src'), /\.ts$/), ...files(join(ROOT, 'k8s'), /\.ya?ml$/)];
    const offending = shipped.flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${relative(ROOT, path)}:${i + 1}` }))
        .filter(({ line }) => /design\.md|the seed|seed\/000_/i.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(offending).toEqual([]);
  });

  it('documented shell commands use npx listings-sync; node bin/listings-sync.mjs only for serve and sandbox', () => {
    // npx does not pass SIGTERM on to its child (docs/serve.md, "Starting it"): the long-running
    // commands are started with node, everything else with npx.
    const docs = [join(ROOT, 'README.md'), ...files(join(ROOT, 'docs'), /\.md$/)];
    const offending = docs.flatMap((path) => {
      const text = readFileSync(path, 'utf8');
      // Lines inside fenced shell blocks (a fence opens with ```sh/bash/console or a bare
      // ```, and the next ``` closes it), so prose between blocks is never read as a command.
      const commands: string[] = [];
      let fence: 'shell' | 'other' | undefined;
      for (const line of text.split('\n')) {
        const open = /^```(\w*)/.exec(line);
        if (open) {
          fence = fence
            ? undefined
            : /^(sh|bash|console|)$/.test(open[1] ?? '')
              ? 'shell'
              : 'other';
        } else if (fence === 'shell') commands.push(line);
      }
      return commands
        .filter((line) => /\bnode\s+(src\/cli(\/main)?\.ts|bin\/listings-sync\.mjs)\b/.test(line))
        .filter((line) => !/\bnode\s+bin\/listings-sync\.mjs\s+(serve|sandbox)\b/.test(line))
        .map((line) => `${relative(ROOT, path)}: ${line.trim()}`);
    });
    expect(offending).toEqual([]);
  });
});
