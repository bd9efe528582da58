/**
 * The answers stamp follows the code (docs/warehouse.md, "Answers applied"): the stamp a
 * business's answers are recorded under (`APPLIED_BY`) names the write path's output, the
 * digests test/warehouse/write-path-equality.test.ts compares against. A change that makes
 * the same bodies write different rows records new digests there; without a new stamp,
 * every unchanged answer would be taken as applied and the new rows would never be built.
 *
 * So each stamp is pinned to the outputs it was given for, newest last. When the write
 * path's output changes on purpose (`WRITE_PATH_SNAPSHOT=record`), either raise
 * `APPLIED_BY` in src/warehouse/applied-answers.ts and append the new stamp here with the
 * digest this test prints, or, when the same bodies still write the same rows (a new read
 * model its migration fills from the stored rows), add the digest to the current stamp's
 * outputs with the reason. Never edit an earlier entry: a stamp is what a deployed
 * warehouse's rows say.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { APPLIED_BY } from '../../src/warehouse/applied-answers.ts';

interface WritePath {
  stamp: string;
  /** The first output the stamp was given for, then any it kept, each with its reason. */
  outputs: readonly [{ digest: string }, ...{ digest: string; kept: string }[]];
}

const WRITE_PATHS: readonly WritePath[] = [
  {
    stamp: 'write-path-2',
    outputs: [
      { digest: 'e6f43d8bc68531cfc4915d51f6207c8da98f6a79ab20b2f4390b718d1a279160' },
      {
        digest: 'a840e1f6abed6a301ec192b5e9b7c2a549adeb1820a88abe09f339b9b336a78f',
        kept:
          'review_backlog (migration 0021) is a read model of the stored reviews, filled by ' +
          'its migration: the same bodies write the same rows',
      },
      {
        digest: 'ebaa2d8e954af276cda0a7d0f72c56b8c55febf8971bcc4c703505354b9713f7',
        kept:
          "the sandbox's business names changed (English singulars: Bakery, not Bakerie), " +
          'so its bodies did, not the write path: row counts are the same',
      },
    ],
  },
];

/** One digest of the whole snapshot: per relation, its name, row count and rows' SHA-256. */
function outputDigest(): string {
  const file = join(import.meta.dirname, '../warehouse/write-path-equality.expected.json');
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as Record<
    string,
    { rows: number; sha256: string }
  >;
  const lines = Object.keys(snapshot)
    .sort()
    .map((relation) => `${relation} ${snapshot[relation]?.rows} ${snapshot[relation]?.sha256}`);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

describe('the answers stamp', () => {
  it('names the write path whose output the equality snapshot holds', () => {
    const digest = outputDigest();
    const current = WRITE_PATHS.at(-1);
    expect(
      { stamp: APPLIED_BY, given: current?.outputs.some((o) => o.digest === digest) },
      `the write path's output is ${digest}; if it changed on purpose, raise APPLIED_BY in ` +
        'src/warehouse/applied-answers.ts and append {stamp, outputs: [{digest}]} to ' +
        'WRITE_PATHS here (or, if the same bodies still write the same rows, add the digest ' +
        'to the current stamp with the reason)',
    ).toEqual({ stamp: current?.stamp, given: true });
  });

  it('gives every output one stamp, and every stamp its own name', () => {
    const digests = WRITE_PATHS.flatMap((p) => p.outputs.map((o) => o.digest));
    expect(new Set(digests).size).toBe(digests.length);
    expect(new Set(WRITE_PATHS.map((p) => p.stamp)).size).toBe(WRITE_PATHS.length);
  });
});
