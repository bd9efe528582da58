/**
 * A closed pipe ends any command quietly (docs/running.md, "Signals"): a real process
 * whose standard output is closed by its reader before it writes (`listings-sync … |
 * head -1` once head has gone) exits with its own code and no EPIPE stack on standard
 * error; a long-running command stops as on SIGTERM.
 */
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli.ts';

/** Starts the command with its standard output's reader already gone. */
function withStdoutClosed(args: string[], env: Record<string, string> = {}) {
  const spawned = spawnCli(args, env);
  // Closed before the child has started, so its first write meets EPIPE.
  spawned.child.stdout?.destroy();
  return spawned.done;
}

function expectQuiet(stderr: string): void {
  expect(stderr).not.toContain('EPIPE');
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toContain('Unhandled');
}

describe('a command whose standard output is closed', () => {
  it('`sandbox --help` exits 0 without a stack', async () => {
    const ran = await withStdoutClosed(['sandbox', '--help']);
    expect(ran.code, ran.stderr).toBe(0);
    expectQuiet(ran.stderr);
  });

  it('`config` exits 0 without a stack', async () => {
    const ran = await withStdoutClosed(['config']);
    expect(ran.code, ran.stderr).toBe(0);
    expectQuiet(ran.stderr);
  });

  it('a long-running `sandbox` stops as on SIGTERM, and exits 0', async () => {
    const ran = await withStdoutClosed(['sandbox', '--port', '0', '--businesses', '2']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain('sandbox stopped');
    expectQuiet(ran.stderr);
  });
});
