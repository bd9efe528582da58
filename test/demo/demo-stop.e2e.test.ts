/**
 * Ctrl-C on the demo, as a process: SIGINT once a day's sync has begun. The demo stops
 * that day's run, says it was stopped, on which day and how many days were synced in
 * full, writes no report, and exits 130 (128 + SIGINT's 2), as a shell reports a process
 * Ctrl-C ended (docs/running.md, "The demo"). How long it takes to stop is measured
 * outside the suite (docs/running.md, "Signals"), never asserted on a busy machine; the
 * test's timeout is only a hang guard.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnCli, waitForStderr } from '../helpers/cli.ts';
import { createPgliteDataDir } from '../helpers/database.ts';

describe('Ctrl-C on listings-sync demo', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stops the day in flight, says so, writes no report and exits 130', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ls-e2e-demo-stop-'));
    // The demo's own directory, migrated from the suite's template: the migrations are not
    // what this test is about.
    await createPgliteDataDir(join(dir, '.data/demo'));
    // Enough businesses that a day's sync is still going when the signal lands.
    const demo = spawnCli(['demo', '--days', '3', '--businesses', '4'], {}, { cwd: dir });
    await waitForStderr(demo.child, '"number":2,"total":4,"msg":"demo day started"');
    demo.child.kill('SIGINT');
    const ended = await demo.done;
    expect(ended.code, ended.stderr).toBe(130);
    // Stopped on day 2, or on a later one had day 2 ended before the signal: the days
    // before it synced in full, never all four.
    const said =
      /^Stopped by Ctrl-C \(SIGINT\) on (\d{4}-\d\d-\d\d), day ([234]) of the 4 to sync: ([123]) day\(s\) synced in full \((\d{4}-\d\d-\d\d) … (\d{4}-\d\d-\d\d)\) in \d+s; \1 is synced again when the demo is run again/m.exec(
        ended.stdout,
      );
    expect(said, ended.stdout).not.toBeNull();
    const [, day, number, inFull, first, lastInFull] = said as unknown as string[];
    expect(Number(inFull)).toBe(Number(number) - 1);
    expect(ended.stdout).toContain(
      `Warehouse after ${first} … ${lastInFull}, the days synced in full`,
    );
    // The log says the same: no `demo day synced` for the day that was stopped.
    expect(ended.stderr).not.toContain(`"day":"${day}","done"`);
    expect(ended.stderr.match(/"msg":"demo day synced"/g)?.length).toBe(Number(inFull));
    expect(ended.stdout).not.toMatch(/^\d+ day\(s\) synced in/m);
    expect(ended.stdout).toContain('No report written: the demo was stopped.');
    expect(existsSync(join(dir, 'report.html'))).toBe(false);
  }, 180_000);
});
