/**
 * The repository cites only what it contains: no source file points at a design document
 * or a spec that is not in the repository, and the documented commands run on the
 * project's Node (`npx listings-sync …`), not the machine's (`node src/cli/main.ts …`).
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

  // Long-running commands (`serve`, `sandbox`) are the exception, run under node itself:
  // npx does not pass SIGTERM on (test/e2e/long-running-commands.test.ts).
  it('documented shell commands use npx listings-sync, never node src/cli/main.ts but for serve and sandbox', () => {
    const docs = [join(ROOT, 'README.md'), ...files(join(ROOT, 'docs'), /\.md$/)];
    const offending = docs.flatMap((path) => {
      const text = readFileSync(path, 'utf8');
      // Every fence paired with its own close (a ```json block's close is not an opening).
      const blocks = [...text.matchAll(/^```([\w-]*)\n([\s\S]*?)^```/gm)]
        .filter((m) => ['sh', 'bash', 'console', ''].includes(m[1] ?? ''))
        .map((m) => m[2] ?? '');
      return blocks
        .flatMap((block) => block.split('\n'))
        .filter((line) => /\bnode\s+src\/cli(\/main)?\.ts\b/.test(line))
        .filter((line) => !/\bnode\s+src\/cli\/main\.ts\s+(serve|sandbox)\b/.test(line))
        .map((line) => `${relative(ROOT, path)}: ${line.trim()}`);
    });
    expect(offending).toEqual([]);
  });
});
