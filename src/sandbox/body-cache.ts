/**
 * A least-recently-used cache of serialized response bodies, bounded by their total
 * size, so that a sync of 10,000 businesses serves repeated reads from memory without
 * ever holding the whole world. Keys name (stream, business, day, version, fault rate).
 */

export interface CachedBody {
  body: string;
  /** Malformed records the body carries, counted each time it is served. */
  malformed: number;
}

export interface BodyCache {
  get(key: string): CachedBody | undefined;
  set(key: string, value: CachedBody): void;
  clear(): void;
}

/** 64 MiB of JSON text (two bytes a character, roughly): a few thousand bodies. */
export const DEFAULT_CACHE_CHARACTERS = 32 * 1024 * 1024;

export function createBodyCache(maxCharacters = DEFAULT_CACHE_CHARACTERS): BodyCache {
  // A Map iterates in insertion order: re-inserting on a hit makes its head the LRU entry.
  const entries = new Map<string, CachedBody>();
  let size = 0;
  return {
    get(key) {
      const hit = entries.get(key);
      if (hit) {
        entries.delete(key);
        entries.set(key, hit);
      }
      return hit;
    },
    set(key, value) {
      if (value.body.length > maxCharacters / 4) return;
      const old = entries.get(key);
      if (old) {
        size -= old.body.length;
        entries.delete(key);
      }
      entries.set(key, value);
      size += value.body.length;
      while (size > maxCharacters) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        size -= entries.get(oldest.value)?.body.length ?? 0;
        entries.delete(oldest.value);
      }
    },
    clear() {
      entries.clear();
      size = 0;
    },
  };
}
