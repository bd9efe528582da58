/**
 * Facts the documents repeat from the code, checked against the code so that they cannot
 * drift apart again: the image tag in docs/deploy.md, the migration numbers
 * docs/warehouse.md explains, and the webhook identity docs/upstream.md describes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('documents that repeat the code', () => {
  it("docs/deploy.md tags the image with package.json's version", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    const deploy = read('docs/deploy.md');
    const tags = [
      ...deploy.matchAll(/listings-sync:(\d+\.\d+\.\d+)\b/g),
      ...deploy.matchAll(/newTag: (\S+)/g),
    ].map((m) => m[1]);
    expect(tags.length).toBeGreaterThanOrEqual(3);
    expect(new Set(tags)).toEqual(new Set([version]));
  });

  it('docs/warehouse.md says why each unused migration number is unused', () => {
    const numbers = readdirSync(join(ROOT, 'migrations'))
      .map((file) => /^(\d{4})_/.exec(file)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number);
    const highest = Math.max(...numbers);
    const gaps: string[] = [];
    for (let n = 1; n < highest; n++) {
      if (!numbers.includes(n)) gaps.push(String(n).padStart(4, '0'));
    }
    const changes = read('docs/warehouse.md').split('## Changes')[1]!.split('\n## ')[0]!;
    for (const gap of gaps) {
      expect(changes, `migration number ${gap} is missing from migrations/`).toMatch(
        new RegExp(`\`${gap}\`[^\\n]*never used`),
      );
    }
  });

  it('docs/upstream.md keys webhook deliveries as the warehouse does (<event>:<id>)', () => {
    const upstream = read('docs/upstream.md');
    expect(upstream).not.toMatch(/identified by `data\.ad_run_id`/);
    expect(upstream).toContain('`<event>:<id>`');
  });
});
