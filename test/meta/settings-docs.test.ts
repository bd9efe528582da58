/**
 * docs/configuration.md's "Settings" table is the one the table of settings generates
 * (`npx node src/config/print-docs-table.ts` prints it, to paste).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, settingsMarkdown } from '../../src/config/index.ts';

describe('docs/configuration.md, "Settings"', () => {
  it('holds the table generated from the settings', () => {
    const docs = readFileSync(join(import.meta.dirname, '../../docs/configuration.md'), 'utf8');
    const start = docs.indexOf('| variable | meaning | default | secret | read by |');
    expect(start).toBeGreaterThan(-1);
    const end = docs.indexOf('\n\n', start);
    expect(docs.slice(start, end)).toBe(settingsMarkdown());
  });

  it('has a row per variable', () => {
    const rows = settingsMarkdown().split('\n').slice(2);
    expect(rows.map((row) => row.split('`')[1])).toEqual(CONFIG_VARIABLES);
  });
});
