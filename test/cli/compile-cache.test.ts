/**
 * Where the CLI keeps V8's compile cache (src/cli/compile-cache.ts; docs/running.md, "The
 * compile cache"): the user's own cache directory, never one other users can write.
 */
import { describe, expect, it } from 'vitest';
import { compileCacheDirectory } from '../../src/cli/compile-cache.ts';

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
