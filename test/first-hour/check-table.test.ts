/**
 * `check` with a configuration of several problems: the table keeps one short row, and
 * each problem is printed on its own line below it, as every other command prints them.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/index.ts';
import { renderChecks, runChecks } from '../../src/sync/check-command.ts';

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
});
