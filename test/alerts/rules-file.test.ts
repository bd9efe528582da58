/**
 * ALERT_RULES_FILE's size is capped before the file is read (a 50 MB file once ran the
 * CLI out of memory), and an empty or `null` file, almost surely a mistake, is a warning.
 */
import { closeSync, ftruncateSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ALERT_RULES_FILE_MAX_BYTES,
  ConfigError,
  DEFAULT_ALERT_RULES,
  loadConfig,
} from '../../src/config/index.ts';

function file(name: string, text: string, size?: number): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ls-rules-size-')), name);
  writeFileSync(path, text);
  if (size !== undefined) {
    // Sparse: the size without writing 50 MB.
    const fd = openSync(path, 'r+');
    ftruncateSync(fd, size);
    closeSync(fd);
  }
  return path;
}

describe('ALERT_RULES_FILE', () => {
  it('refuses a file over the cap, naming the file, its size and the cap', () => {
    const big = file('rules.yaml', 'rules: {}\n', 50 * 1024 * 1024);
    let error: unknown;
    try {
      loadConfig({ ALERT_RULES_FILE: big });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `ALERT_RULES_FILE "${big}" is 52428800 bytes, more than the 1048576-byte (1 MiB) cap: ` +
        'a rules file is a few hundred bytes; check that the variable names the rules file.',
    );
  });

  it('takes a file at the cap', () => {
    const padded = '{}'.padEnd(ALERT_RULES_FILE_MAX_BYTES, ' ');
    const config = loadConfig({ ALERT_RULES_FILE: file('rules.json', padded) });
    expect(config.alertRules.source).toContain('rules.json');
    expect(config.warnings).toEqual([]);
  });

  it('warns about an empty or null file, naming it, and applies the built-in rules', () => {
    for (const [name, text, what] of [
      ['rules.yaml', '', 'empty'],
      ['rules.json', '  \n', 'empty'],
      ['rules.json', 'null', 'null'],
      ['rules.yml', '~\n', 'null'],
    ] as const) {
      const path = file(name, text);
      const config = loadConfig({ ALERT_RULES_FILE: path });
      expect(config.warnings).toEqual([
        `ALERT_RULES_FILE "${path}" is ${what}, so the built-in alert rules apply; unset ALERT_RULES_FILE for them, or fill the file in.`,
      ]);
      expect({ ...config.alertRules, source: '' }).toEqual({
        ...DEFAULT_ALERT_RULES,
        source: '',
      });
    }
  });
});
