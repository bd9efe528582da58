/**
 * deploy/systemd (docs/deploy.md, "systemd"): `systemd-analyze verify` on the units where
 * it is installed (skipped, with the reason printed, where not), and what the docs say
 * of them: the process entry (which brings its own V8 flags), real commands, `migrate` first, SIGTERM with time to
 * stop, `--exit-zero-on-partial` on the timer's sync, the timer at 03:00 UTC.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const DIR = join(ROOT, 'deploy/systemd');
const UNITS = [
  'listings-sync-serve.service',
  'listings-sync-sync.service',
  'listings-sync-sync.timer',
];
const ANALYZE = '/usr/bin/systemd-analyze';
const hasAnalyze = existsSync(ANALYZE);
if (!hasAnalyze) {
  process.stdout.write(
    'test/deploy/systemd.test.ts: verify skipped, systemd-analyze is not installed\n',
  );
}

/** `Key=value` lines of a unit, by key (a key may repeat). */
function directives(unit: string): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const line of readFileSync(join(DIR, unit), 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) map.set(match[1]!, [...(map.get(match[1]!) ?? []), match[2]!]);
  }
  return map;
}

const verify = (paths: string[]) =>
  spawnSync(ANALYZE, ['verify', ...paths], {
    encoding: 'utf8',
    env: { ...process.env, SYSTEMD_LOG_COLOR: '0' },
  });

describe.skipIf(!hasAnalyze)('deploy/systemd: systemd-analyze verify', () => {
  it('passes the three units, with no warning', () => {
    const result = verify(UNITS.map((unit) => join(DIR, unit)));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('and fails a misspelt directive', () => {
    const dir = mkdtempSync(join(tmpdir(), 'systemd-'));
    try {
      const unit = join(dir, 'listings-sync-serve.service');
      const text = readFileSync(join(DIR, 'listings-sync-serve.service'), 'utf8');
      writeFileSync(unit, text.replace('TimeoutStopSec=', 'TimeoutStpSec='));
      expect(verify([unit]).stderr).toContain("Unknown key 'TimeoutStpSec'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/systemd: what docs/deploy.md says of the units', () => {
  const commands = (unit: string) =>
    [
      ...(directives(unit).get('ExecStartPre') ?? []),
      ...(directives(unit).get('ExecStart') ?? []),
    ].map((line) => line.split(/\s+/));

  it.each(UNITS.filter((u) => u.endsWith('.service')))(
    '%s migrates first, then runs the process entry, which brings its own V8 flags',
    (unit) => {
      const lines = commands(unit);
      expect(lines).toHaveLength(2);
      for (const [node, entry] of lines) {
        expect(node).toBe('/usr/bin/node');
        // No flag of its own: bin/listings-sync.mjs holds them (docs/sizing.md, "The V8 flags").
        expect(entry).toBe('bin/listings-sync.mjs');
      }
      const subcommand = (line: string[]) => line[line.indexOf('bin/listings-sync.mjs') + 1];
      expect(subcommand(lines[0]!)).toBe('migrate');
      const d = directives(unit);
      expect(d.get('WorkingDirectory')).toEqual(['/opt/listings-sync']);
      expect(d.get('EnvironmentFile')).toEqual(['/etc/listings-sync/listings-sync.env']);
      expect(d.get('KillSignal')).toEqual(['SIGTERM']);
      expect(Number(d.get('TimeoutStopSec')?.[0])).toBeGreaterThanOrEqual(60);
      expect(d.get('DynamicUser')).toEqual(['yes']);
      expect(d.get('NoNewPrivileges')).toEqual(['yes']);
      // A DynamicUser's home is not writable: the compile cache goes to the unit's own
      // cache directory (docs/running.md, "The compile cache"), one per unit.
      const own = `listings-sync/${unit.replace(/^listings-sync-|\.service$/g, '')}`;
      expect(d.get('CacheDirectory')).toEqual([own]);
      expect(d.get('Environment')).toContain(`NODE_COMPILE_CACHE=%C/${own}`);
    },
  );

  it("serve runs serve; the timer's sync exits 0 on a partial night", () => {
    const serve = commands('listings-sync-serve.service')[1]!;
    expect(serve.slice(serve.indexOf('bin/listings-sync.mjs') + 1)).toEqual(['serve']);
    const sync = commands('listings-sync-sync.service')[1]!;
    expect(sync.slice(sync.indexOf('bin/listings-sync.mjs') + 1)).toEqual([
      'sync',
      '--exit-zero-on-partial',
    ]);
    expect(directives('listings-sync-sync.service').get('Type')).toEqual(['oneshot']);
    const timer = directives('listings-sync-sync.timer');
    expect(timer.get('OnCalendar')).toEqual(['*-*-* 03:00:00 UTC']);
    expect(timer.get('Persistent')).toEqual(['true']);
    // The flag is one the sync command defines.
    const sync_ts = readFileSync(join(ROOT, 'src/cli/commands/sync.ts'), 'utf8');
    expect(sync_ts).toContain("'--exit-zero-on-partial'");
  });
});
