/**
 * The CLI's own compile cache (src/cli/compile-cache.ts; docs/running.md, "The compile
 * cache"), as `npx listings-sync` starts: the first process writes the compiled modules
 * into the user's cache directory, the next one reads them (Node's own trace,
 * `NODE_DEBUG_NATIVE=COMPILE_CACHE`, says so); turned off, or in a directory that cannot
 * be made, the command runs as it would without one.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli.ts';

const TRACE = { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };
const ACCEPTED = /V8 code cache for ESM file:\/\/\S+\/src\/cli\/program\.ts was accepted/;

describe("the CLI's compile cache", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ls-cli-cache-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is written under XDG_CACHE_HOME by one start and read by the next', async () => {
    const env = { XDG_CACHE_HOME: dir };
    const first = await spawnCli(['--version'], env).done;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('');
    const cache = join(dir, 'listings-sync', 'node-compile-cache');
    // One directory per Node version and V8 flags, holding an entry per module.
    const [version] = await readdir(cache);
    expect((await readdir(join(cache, version as string))).length).toBeGreaterThan(100);

    const second = await spawnCli(['--version'], { ...env, ...TRACE }).done;
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(second.stderr).toMatch(ACCEPTED);
    expect(second.stderr).not.toMatch(/src\/\S+ was rejected/);
  });

  it('is left to NODE_COMPILE_CACHE when it is set, and off with NODE_DISABLE_COMPILE_CACHE', async () => {
    const set = join(dir, 'set');
    const xdg = join(dir, 'xdg');
    const ran = await spawnCli(['--version'], { XDG_CACHE_HOME: xdg, NODE_COMPILE_CACHE: set })
      .done;
    expect(ran.code, ran.stderr).toBe(0);
    expect(await readdir(set)).toHaveLength(1);
    expect(existsSync(xdg)).toBe(false);

    const off = await spawnCli(['--version'], {
      XDG_CACHE_HOME: xdg,
      NODE_DISABLE_COMPILE_CACHE: '1',
    }).done;
    expect(off.code, off.stderr).toBe(0);
    expect(off.stderr).toBe('');
    expect(existsSync(xdg)).toBe(false);
  });

  it('a cache directory that cannot be made costs nothing but the cache', async () => {
    // A file where the directory would go: Node cannot make it.
    const blocked = join(dir, 'file');
    await writeFile(blocked, 'not a directory');
    const ran = await spawnCli(['--version'], { XDG_CACHE_HOME: blocked }).done;
    expect(ran.code).toBe(0);
    expect(ran.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(ran.stderr).toBe('');
  });
});
