/**
 * Integration files share their worker process (`isolate: false` in vitest.config.ts), so
 * a file that replaces a module with `vi.mock` would hand the replacement to the files
 * after it. Every such file must be listed in `MOCKS_MODULES`, which runs each in a
 * process of its own; and every listed file must still need it.
 */
import { readFileSync } from 'node:fs';
import { glob } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

describe('test isolation', () => {
  it('runs exactly the files that mock a module in a process of their own', async () => {
    const config = readFileSync(join(ROOT, 'vitest.config.ts'), 'utf8');
    const list = /const MOCKS_MODULES = \[([\s\S]*?)\];/.exec(config)?.[1];
    expect(list, 'vitest.config.ts declares MOCKS_MODULES').toBeDefined();
    const listed = [...(list ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1] as string).sort();

    const mocking: string[] = [];
    for await (const file of glob('test/**/*.test.ts', { cwd: ROOT })) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      if (/\bvi\.(do)?[mM]ock\(/.test(text)) mocking.push(file);
    }
    expect(mocking.length).toBeGreaterThan(0);
    expect(listed).toEqual(mocking.sort());
  });
});
