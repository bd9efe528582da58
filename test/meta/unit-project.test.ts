/**
 * The unit project stays pure: none of its files opens a database, starts the sandbox or
 * starts a process (`npm run test:unit` runs in seconds, anywhere). Read from the imports
 * of the files vitest.config.ts lists under `unit`.
 */
import { readFileSync } from 'node:fs';
import { glob } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** What a unit suite may not import: databases, the sandbox, child processes, the CLI runner. */
const FORBIDDEN = [
  /helpers\/database\.ts/,
  /helpers\/cli\.ts/,
  /helpers\/warehouse-template\.ts/,
  /src\/sandbox\//,
  /['"]node:child_process['"]/,
  /['"]@electric-sql\/pglite['"]/,
  /['"]pg['"]/,
];

describe('the unit project', () => {
  it('imports no database, sandbox or process', async () => {
    const config = readFileSync(join(ROOT, 'vitest.config.ts'), 'utf8');
    const list = /const UNIT = \[([\s\S]*?)\];/.exec(config)?.[1] ?? '';
    const patterns = [...list.matchAll(/'([^']+)'/g)].map((m) => m[1] as string);
    expect(patterns.length).toBeGreaterThan(0);
    const files: string[] = [];
    for (const pattern of patterns) {
      for await (const file of glob(pattern, { cwd: ROOT })) files.push(file);
    }
    expect(files.length).toBeGreaterThan(5);
    const offending = files.flatMap((file) => {
      const imports = [
        ...readFileSync(join(ROOT, file), 'utf8').matchAll(/from\s+(['"][^'"]+['"])/g),
      ];
      return imports
        .map((m) => m[1] as string)
        .filter((spec) => FORBIDDEN.some((rule) => rule.test(spec)))
        .map((spec) => `${relative(ROOT, join(ROOT, file))}: ${spec}`);
    });
    expect(offending).toEqual([]);
  });
});
