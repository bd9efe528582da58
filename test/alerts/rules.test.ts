/**
 * ALERT_RULES_FILE: JSON or YAML, validated with errors that name the rule and the field;
 * the built-in defaults keep the behaviour from before rules; and a bad file stops the
 * process with exit 1 before it does anything (no warehouse is even created).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AlertRulesError,
  DEFAULT_ALERT_RULES,
  loadAlertRulesFile,
  parseAlertRules,
} from '../../src/alerts/rules.ts';
import { loadConfig } from '../../src/config/index.ts';
import { runCli } from '../helpers/cli.ts';

function file(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ls-rules-')), name);
  writeFileSync(path, text);
  return path;
}

function problems(document: unknown): string[] {
  try {
    parseAlertRules(document, 'rules.json');
  } catch (error) {
    expect(error).toBeInstanceOf(AlertRulesError);
    return (error as Error).message.split('\n').slice(1);
  }
  throw new Error('the rules were accepted');
}

describe('alert rules', () => {
  it('defaults to the behaviour before rules: listings and failed responses only, Slack digests', () => {
    expect(loadConfig({}).alertRules).toBe(DEFAULT_ALERT_RULES);
    expect(DEFAULT_ALERT_RULES).toMatchObject({
      listingInaccurate: { enabled: true, flapWindowMs: 0 },
      reviewResponseFailed: { enabled: true },
      rankDrop: { enabled: false },
      lowRatingReview: { enabled: false },
      syncFailed: { enabled: false },
      syncStale: { enabled: false },
      // Issue 19: an empty answer is held, not believed, unless the file turns it off.
      volumeDrop: { enabled: true, share: 0.5, minRows: 3 },
      sinks: { slack: { mode: 'digest', worst: 10 }, webhook: { mode: 'each' } },
    });
  });

  it('volume_drop: its thresholds come from the file, in percent, and are checked', () => {
    const rules = parseAlertRules(
      { rules: { volume_drop: { removedPercent: 80, minRows: 10 } } },
      'rules.json',
    );
    expect(rules.volumeDrop).toEqual({ enabled: true, share: 0.8, minRows: 10 });
    expect(
      parseAlertRules({ rules: { volume_drop: { enabled: false } } }, 'rules.json').volumeDrop,
    ).toEqual({ enabled: false, share: 0.5, minRows: 3 });
    expect(
      problems({ rules: { volume_drop: { removedPercent: 150, minRows: 0, share: 0.5 } } }),
    ).toEqual([
      '- rule "volume_drop", field "removedPercent": must be a percentage from 0 to 100',
      '- rule "volume_drop", field "minRows": must be a whole number from 1 to 1000000',
      '- rule "volume_drop": unknown field share (known: enabled, removedPercent, minRows)',
    ]);
  });

  it('reads YAML and JSON files, filling what they leave out', () => {
    const yaml = file(
      'rules.yaml',
      [
        'rules:',
        '  listing_inaccurate:',
        '    flapWindowHours: 48',
        '  rank_drop:',
        '    enabled: true',
        '    top: 3',
        '    sites: [Google_new.local]',
        '  sync_stale:',
        '    enabled: true',
        '    hours: 30',
        'sinks:',
        '  slack: { mode: each }',
      ].join('\n'),
    );
    const rules = loadConfig({ ALERT_RULES_FILE: yaml }).alertRules;
    expect(rules).toMatchObject({
      listingInaccurate: { enabled: true, flapWindowMs: 48 * 3_600_000 },
      rankDrop: { enabled: true, top: 3, worsenBy: 5, sites: ['Google_new.local'], keywords: [] },
      syncStale: { enabled: true, afterMs: 30 * 3_600_000 },
      sinks: { slack: { mode: 'each', worst: 10 } },
      source: yaml,
    });
    const json = file(
      'rules.json',
      JSON.stringify({ rules: { low_rating_review: { enabled: true, maxRating: 1 } } }),
    );
    expect(loadAlertRulesFile(json).lowRatingReview).toEqual({
      enabled: true,
      maxRating: 1,
      sites: [],
    });
  });

  it('names the rule and the field of every problem', () => {
    expect(
      problems({
        rules: {
          rank_drop: { top: 0, worsenBy: 'five', sites: 'Google' },
          listing_inaccurate: { flapWindowHours: -1, flap: 3 },
          sync_failed: { statuses: ['broken'] },
        },
        sinks: { slack: { mode: 'flood' } },
      }),
    ).toEqual([
      '- rule "listing_inaccurate", field "flapWindowHours": must be a number of hours from 0 to 2160',
      '- rule "listing_inaccurate": unknown field flap (known: enabled, flapWindowHours)',
      '- rule "rank_drop", field "top": must be a whole number from 1 to 100',
      '- rule "rank_drop", field "worsenBy": must be a whole number from 1 to 100',
      '- rule "rank_drop", field "sites": must be a list of names',
      '- rule "sync_failed", field "statuses.0": must be failed, partial or interrupted',
      '- sink "slack", field "mode": must be digest or each',
    ]);
    expect(problems({ rules: { rank_dorp: { enabled: true } } })).toEqual([
      '- "rules": unknown rule rank_dorp (known: listing_inaccurate, rank_drop, low_rating_review, review_response_failed, sync_failed, sync_stale, volume_drop, listing_broken_again)',
    ]);
    expect(problems({ rulez: {} })).toEqual([
      '- the file: unknown section rulez (known: rules, sinks)',
    ]);
  });

  it('a bad file exits 1 before anything is done, naming the rule and field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ls-rules-cli-'));
    const dataDir = join(dir, 'pglite');
    const rules = file(
      'rules.yml',
      'rules:\n  low_rating_review:\n    enabled: true\n    maxRating: 9\n',
    );
    const result = await runCli(['migrate'], { PGLITE_DATA_DIR: dataDir, ALERT_RULES_FILE: rules });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`ALERT_RULES_FILE "${rules}" is not valid:`);
    expect(result.stderr).toContain(
      '- rule "low_rating_review", field "maxRating": must be a whole number from 1 to 5',
    );
    expect(existsSync(dataDir)).toBe(false);

    const broken = file('rules.json', '{"rules": ');
    const unreadable = await runCli(['migrate'], {
      PGLITE_DATA_DIR: dataDir,
      ALERT_RULES_FILE: broken,
    });
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toContain(`ALERT_RULES_FILE "${broken}" is not valid JSON`);
    const missing = await runCli(['migrate'], {
      PGLITE_DATA_DIR: dataDir,
      ALERT_RULES_FILE: join(dir, 'nope.json'),
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot be read (ENOENT)');
    expect(existsSync(dataDir)).toBe(false);
  });
});
