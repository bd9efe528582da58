/**
 * Seeded randomness for the sandbox. Every generated value is a pure function of
 * (seed, business id, stream, day, index): `hash32` turns such a tuple into 32 bits, and
 * `createRng` expands those bits into a short stream of draws. Nothing reads
 * `Math.random`, so the same seed and day always serve the same bytes.
 */

/** Mix one 32-bit word into the running hash (MurmurHash3's block step). */
function mixWord(hash: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  let h = hash ^ k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** MurmurHash3's finaliser: spreads every input bit over the output. */
function finalise(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A 32-bit hash of a tuple of non-negative integers. Values may exceed 32 bits (business
 * ids reach 10^10), so each is mixed in as two words.
 */
export function hash32(...parts: number[]): number {
  let h = 0x9e3779b9 | 0;
  for (const part of parts) {
    h = mixWord(h, part >>> 0);
    h = mixWord(h, Math.floor(part / 4294967296) >>> 0);
  }
  return finalise(h ^ parts.length);
}

/** FNV-1a of a string, for naming streams and hashing free text. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A hash as a fraction in [0, 1). */
export function unit(hash: number): number {
  return hash / 4294967296;
}

/** Two hex digits per byte value: formatting hex is the hot spot of generating reviews. */
const BYTE_HEX: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);

/** A 32-bit word as 8 lowercase hex digits. */
export function hex8(word: number): string {
  return (
    BYTE_HEX[(word >>> 24) & 0xff]! +
    BYTE_HEX[(word >>> 16) & 0xff]! +
    BYTE_HEX[(word >>> 8) & 0xff]! +
    BYTE_HEX[word & 0xff]!
  );
}

export interface Rng {
  /** A fraction in [0, 1). */
  next(): number;
  /** An integer from `min` to `max`, both included. */
  int(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** `length` lowercase hex digits. */
  hex(length: number): string;
  /** A version-4-shaped UUID. */
  uuid(): string;
}

/** mulberry32: tiny, fast and good enough for fake data; state is one 32-bit word. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const hex = (length: number): string => {
    let out = '';
    while (out.length < length) out += hex8(Math.floor(next() * 4294967296));
    return out.length === length ? out : out.slice(0, length);
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability) => next() < probability,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    hex,
    uuid: () => {
      const h = hex(32);
      const variant = ((Number.parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
    },
  };
}

/**
 * The first day (>= `from`) on which an event with daily probability `p` happens, drawn
 * in O(1) by inverting the geometric distribution, so "archived on day N" needs no
 * day-by-day replay.
 */
export function geometricDay(hash: number, p: number, from: number): number {
  const u = (hash + 0.5) / 4294967296;
  return from + Math.floor(Math.log(u) / Math.log(1 - p));
}
