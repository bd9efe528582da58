/**
 * The raw zone's kept form of a body (docs/warehouse.md, "Raw zone"), computed once for
 * the capture and the sync's answers check: both must see what each alone would compute.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keptBody } from '../../src/raw/body.ts';

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
