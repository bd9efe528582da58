/**
 * The raw zone's kept form of a body (docs/warehouse.md, "Raw zone"), computed once for
 * the capture and the sync's answers check: both must see what each alone would compute;
 * and its compressed form, which any brotli decoder reads back.
 */
import { createHash } from 'node:crypto';
import { brotliDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  BODY_ENCODING,
  brotliWindowBits,
  compressBody,
  decompressBody,
  keptBody,
} from '../../src/raw/body.ts';

/** What a kept body holds in place of a secret (docs/warehouse.md, "Raw zone"). */
const KEPT_OUT_MARKER = '[kept out of the raw zone]';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('keptBody', () => {
  const body = '{"success":true,"result":[{"id":1,"site_password":"hunter2","note":"tok-123"}]}';
  const masked = `{"success":true,"result":[{"id":1,"site_password":${JSON.stringify(KEPT_OUT_MARKER)},"note":${JSON.stringify(KEPT_OUT_MARKER)}}]}`;

  it('gives both users of a response the masked text and its sha256', () => {
    const first = keptBody(body, ['tok-123']);
    const second = keptBody(body, ['tok-123']);
    expect(first).toEqual({ text: masked, hash: sha256(masked) });
    expect(second).toEqual(first);
    // The pair is done: a third use computes again, to the same answer.
    expect(keptBody(body, ['tok-123'])).toEqual(first);
  });

  it('never hands one credential the form kept for another', () => {
    const mine = keptBody(body, ['tok-123']);
    const theirs = keptBody(body, ['other-token']);
    expect(mine.text).not.toContain('tok-123');
    expect(theirs.text).toContain('tok-123');
    expect(theirs.hash).toBe(sha256(theirs.text));
  });
});

describe('compressBody', () => {
  it('sizes the window to the body, within brotli’s 10 to 24 bits', () => {
    expect(brotliWindowBits(0)).toBe(10);
    expect(brotliWindowBits(1008)).toBe(10);
    expect(brotliWindowBits(1009)).toBe(11);
    expect(brotliWindowBits(20_000)).toBe(15);
    expect(brotliWindowBits(64 * 1024 * 1024)).toBe(24);
  });

  it('keeps bodies of every size whole, past the largest window too', () => {
    const row = (i: number) => `{"id":${i},"name":"Listing ${i % 97}","status":"Accurate"},`;
    for (const size of [0, 1, 1008, 1009, 20_000, 17 * 1024 * 1024]) {
      let text = '';
      for (let i = 0; text.length < size; i++) text += row(i);
      text = text.slice(0, size);
      const bytes = compressBody(text);
      expect(decompressBody(BODY_ENCODING, bytes) === text, `${size} bytes`).toBe(true);
      // Read by a decoder told nothing of the window: it is the stream's own.
      expect(brotliDecompressSync(bytes).toString('utf8') === text, `${size} bytes`).toBe(true);
    }
  });
});
