/**
 * The process entry (src/cli/main.ts, src/cli/process-io.ts) as `npx listings-sync` runs
 * it: a real Node process whose exit code is the command's (0 ok, 1 fatal, 2 usage), its
 * output on the real standard streams. What the commands do is tested in-process.
 */
import { describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli.ts';

describe('listings-sync as a process', () => {
  it('--version exits 0 and prints the package version', async () => {
    const ran = await spawnCli(['--version'], {}).done;
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('a usage error exits 2 with the hint on standard error', async () => {
    const ran = await spawnCli(['sync', '--shard', 'nine'], {}).done;
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('--shard must look like I/N');
    expect(ran.stderr).toContain('(run with --help for usage)');
    expect(ran.stdout).toBe('');
  });

  it('a bad configuration exits 1, naming the variable', async () => {
    const ran = await spawnCli(['sync'], { SYNC_CONCURRENCY: 'many' }).done;
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('SYNC_CONCURRENCY must be a whole number');
  });
});
