/**
 * Where the CLI keeps V8's compile cache (src/cli/compile-cache.ts; docs/running.md, "The
 * compile cache"): the user's own cache directory, never one other users can write.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileCacheDirectory, resolvedPath } from '../../src/cli/compile-cache.ts';

const home = () => '/home/ada';

describe('compileCacheDirectory', () => {
  it('is under XDG_CACHE_HOME when it is an absolute path', () => {
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/var/cache/ada' }, home)).toBe(
      '/var/cache/ada/listings-sync/node-compile-cache',
    );
  });

  it('is under ~/.cache otherwise, a relative XDG_CACHE_HOME being invalid', () => {
    const expected = '/home/ada/.cache/listings-sync/node-compile-cache';
    expect(compileCacheDirectory({}, home)).toBe(expected);
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '' }, home)).toBe(expected);
    expect(compileCacheDirectory({ XDG_CACHE_HOME: 'cache' }, home)).toBe(expected);
  });

  it('is none under /proc, where Node would hang making it', () => {
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/proc' }, home)).toBeUndefined();
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/proc/self' }, home)).toBeUndefined();
    expect(compileCacheDirectory({}, () => '/proc')).toBeUndefined();
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/processes' }, home)).toBe(
      '/processes/listings-sync/node-compile-cache',
    );
  });

  it('is none where a symlink leads under /proc (/dev/fd is /proc/self/fd)', () => {
    // The path decision alone, with symlinks given: nothing is made, so nothing can hang.
    const links: Record<string, string> = { '/dev/fd': '/proc/self/fd', '/home/ada': '/home/ada' };
    const realpath = (path: string) => {
      const target = links[path];
      if (target === undefined)
        throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
      return target;
    };
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/dev/fd' }, home, realpath)).toBeUndefined();
    expect(compileCacheDirectory({}, () => '/dev/fd', realpath)).toBeUndefined();
    expect(compileCacheDirectory({}, home, realpath)).toBe(
      '/home/ada/.cache/listings-sync/node-compile-cache',
    );
    expect(resolvedPath('/dev/fd/listings-sync/node-compile-cache', realpath)).toBe(
      '/proc/self/fd/listings-sync/node-compile-cache',
    );
    // And this machine's own /dev/fd, where it has one.
    if (existsSync('/dev/fd')) {
      expect(compileCacheDirectory({ XDG_CACHE_HOME: '/dev/fd' }, home)).toBeUndefined();
    }
  });

  it('is none without a home to put it in, rather than a shared or relative directory', () => {
    expect(compileCacheDirectory({}, () => '')).toBeUndefined();
    expect(compileCacheDirectory({}, () => 'relative')).toBeUndefined();
    expect(
      compileCacheDirectory({}, () => {
        throw new Error('no passwd entry');
      }),
    ).toBeUndefined();
  });
});
