import { describe, expect, it } from 'vitest';
import { canonicalJson, contentHash, fieldsHash } from '../../src/warehouse/write/content-hash.ts';
import { mergeWriteStats } from '../../src/warehouse/write/write-stats.ts';

describe('contentHash', () => {
  it('ignores key order and treats undefined as null', () => {
    expect(contentHash({ a: 1, b: { d: [1, 2], c: 'x' } })).toBe(
      contentHash({ b: { c: 'x', d: [1, 2] }, a: 1 }),
    );
    expect(canonicalJson({ b: undefined, a: new Date('2025-03-01T00:00:00Z') })).toBe(
      '{"a":"2025-03-01T00:00:00.000Z","b":null}',
    );
  });

  it('differs when any value differs, including array order', () => {
    expect(contentHash({ a: [1, 2] })).not.toBe(contentHash({ a: [2, 1] }));
    expect(contentHash({ rating: 4 })).not.toBe(contentHash({ rating: 5 }));
    expect(contentHash({})).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe('fieldsHash', () => {
  it('depends on the values and their order, with undefined as null', () => {
    const at = new Date('2025-03-01T00:00:00Z');
    expect(fieldsHash([1, 'a', at, undefined, [at]])).toBe(
      fieldsHash([1, 'a', new Date(at.getTime()), null, [new Date(at.getTime())]]),
    );
    expect(fieldsHash([at])).not.toBe(fieldsHash([new Date(at.getTime() + 1)]));
    expect(fieldsHash([1, 2])).not.toBe(fieldsHash([2, 1]));
    expect(fieldsHash([null, 'x'])).not.toBe(fieldsHash(['x', null]));
    expect(fieldsHash([])).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe('mergeWriteStats', () => {
  it('adds counts per table', () => {
    const into = { listings: { inserted: 1, updated: 0, unchanged: 2, deleted: 0 } };
    mergeWriteStats(into, {
      listings: { inserted: 1, updated: 1, unchanged: 0, deleted: 3 },
      alerts: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
    });
    expect(into).toEqual({
      listings: { inserted: 2, updated: 1, unchanged: 2, deleted: 3 },
      alerts: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
    });
  });
});
