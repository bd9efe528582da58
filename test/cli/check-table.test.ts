/**
 * `check` with a configuration of several problems: the table keeps one short row, and
 * each problem is printed on its own line below it, as every other command prints them.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderChecks, runChecks } from '../../src/cli/commands/check-rows.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

describe('check with a bad configuration', () => {
  it('prints one line per problem under the table, not one long cell', async () => {
    const rows = await runChecks(() => {
      throw new ConfigError(
        'ALERT_RULES_FILE "rules.yaml" is not valid:\n- rule "rank_drop", field "top": must be a whole number from 1 to 100\n- rule "listing_inaccurate": unknown field flap',
      );
    });
    const text = renderChecks(rows);
    const lines = text.trimEnd().split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'check          result  detail',
      '-------------  ------  -------------------------------------------',
      'configuration  FAILED  ALERT_RULES_FILE "rules.yaml" is not valid:',
    ]);
    expect(lines.slice(3)).toEqual([
      '',
      '- rule "rank_drop", field "top": must be a whole number from 1 to 100',
      '- rule "listing_inaccurate": unknown field flap',
    ]);
  });

  it('fails on a misspelt setting: naming both where check reads it, as a warning elsewhere', async () => {
    const [typo] = await runChecks(() =>
      loadConfig({ DATABSE_URL: 'postgres://u:hunter2@db/w' }, { command: 'check' }),
    );
    expect(typo).toMatchObject({ check: 'configuration', ok: false });
    expect(typo?.detail).toContain(
      'DATABSE_URL is set, but listings-sync reads no such variable: did you mean DATABASE_URL? `check` reads DATABASE_URL',
    );
    expect(typo?.detail).not.toContain('hunter2');

    // `check` reads no PORT: the configuration loads, and the row still fails.
    const dataDir = join(mkdtempSync(join(tmpdir(), 'ls-check-typo-')), 'pglite');
    const rows = await runChecks(() =>
      loadConfig({ PROT: '9000', PGLITE_DATA_DIR: dataDir }, { command: 'check' }),
    );
    expect(rows[0]).toEqual({
      check: 'configuration',
      ok: false,
      detail:
        'PROT is set, but listings-sync reads no such variable: did you mean PORT? (PORT is not set, so its default applies)',
    });
  });
});
