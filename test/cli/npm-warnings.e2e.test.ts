/**
 * What npm itself prints around `npx listings-sync …`, as a user's shell runs it: npm on
 * the machine's own Node (not this project's Node 24 devDependency), and a first run,
 * where npx links the project into a fresh npx cache. On a machine whose Node is older
 * than "engines" (Node 20 here), npm checked the project against it and printed ten
 * EBADENGINE lines before the help, though the command runs on Node 24. The project's
 * .npmrc keeps npm to errors (docs/troubleshooting.md, "npm warns EBADENGINE"): no
 * warning line, and an error still prints.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliCacheEnv } from '../helpers/cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The user's PATH without the node_modules/.bin entries npm or vitest put first. */
const userPath = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((dir) => dir && !dir.endsWith(`node_modules${sep}.bin`))
  .join(delimiter);
const npx = userPath.split(delimiter).find((dir) => existsSync(join(dir, 'npx')));

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe.skipIf(!npx)('npm around npx listings-sync', () => {
  let cache: string;
  beforeAll(() => {
    cache = mkdtempSync(join(tmpdir(), 'ls-e2e-npm-cache-'));
  });
  afterAll(() => {
    if (cache) rmSync(cache, { recursive: true, force: true });
  });

  /** npm as a user runs it, on a cache of this test's own, never asking the registry. */
  async function npm(command: 'npx' | 'npm', args: string[]): Promise<Ran> {
    try {
      const { stdout, stderr } = await promisify(execFile)(join(npx!, command), args, {
        cwd: ROOT,
        env: {
          PATH: userPath,
          HOME: process.env['HOME'] ?? '',
          ...cliCacheEnv(),
          TMPDIR: tmpdir(),
          npm_config_cache: cache,
          npm_config_offline: 'true',
          npm_config_audit: 'false',
          npm_config_fund: 'false',
          npm_config_update_notifier: 'false',
        },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return {
        code: typeof failed.code === 'number' ? failed.code : -1,
        stdout: failed.stdout ?? '',
        stderr: failed.stderr ?? '',
      };
    }
  }

  it('the first `npx listings-sync --help` prints the help and no npm warning', async () => {
    const ran = await npm('npx', ['listings-sync', '--help']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('Usage: listings-sync');
    expect(ran.stderr).not.toContain('EBADENGINE');
    expect(ran.stderr).not.toMatch(/^npm warn/m);
  });

  it('npm reads loglevel=error from the project, whatever its Node', async () => {
    const ran = await npm('npm', ['config', 'get', 'loglevel']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.trim()).toBe('error');
  });

  it('an npm error still prints', async () => {
    const ran = await npm('npm', ['run', 'no-such-script']);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('npm error Missing script: "no-such-script"');
  });
});
