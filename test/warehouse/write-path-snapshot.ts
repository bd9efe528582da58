/**
 * The write path's equality snapshot (`write-path-equality.expected.json`): per documented
 * relation, its row count and the SHA-256 of its rows (`relations`), and the history of the
 * answers stamps (`stamps`): which `APPLIED_BY` (src/warehouse/write/applied-answers.ts) was given
 * for which output digest, oldest first. test/warehouse/write-path-equality.test.ts records it
 * (`WRITE_PATH_SNAPSHOT=record`) and compares against it; test/warehouse/answers-stamp.test.ts
 * holds `APPLIED_BY` to its history.
 *
 * The history is the guard that a change of the write path's output cannot keep its stamp
 * (without a new stamp, answers unchanged since the last run are taken as applied and the
 * new rows are never built): recording appends `{stamp, digest}`, and refuses a new digest
 * under a stamp already given another one unless `WRITE_PATH_SNAPSHOT_KEPT` says why the same
 * bodies still write the same rows; a stamp given before a later one is never given again.
 * An entry is never edited or removed: a stamp is what a deployed warehouse's rows say.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface RelationDigest {
  rows: number;
  sha256: string;
}

/** A stamp given for an output: the first output a stamp was given for has no `kept`. */
export interface StampEntry {
  stamp: string;
  digest: string;
  /** Why the same bodies still write the same rows under this stamp. */
  kept?: string;
}

export interface WritePathSnapshot {
  stamps: StampEntry[];
  relations: Record<string, RelationDigest>;
}

export const SNAPSHOT_FILE = join(import.meta.dirname, 'write-path-equality.expected.json');

export function readSnapshot(file = SNAPSHOT_FILE): WritePathSnapshot {
  return JSON.parse(readFileSync(file, 'utf8')) as WritePathSnapshot;
}

/** One digest of the whole output: per relation, its name, row count and rows' SHA-256. */
export function outputDigest(relations: Record<string, RelationDigest>): string {
  const lines = Object.keys(relations)
    .sort()
    .map((relation) => `${relation} ${relations[relation]?.rows} ${relations[relation]?.sha256}`);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/**
 * The history with the output `digest` recorded under `stamp`: unchanged when the stamp was
 * given for it already. Throws when the stamp was given another output and no reason is
 * `kept`, or when the stamp was given before a later stamp.
 */
export function withStamp(
  history: readonly StampEntry[],
  stamp: string,
  digest: string,
  kept?: string,
): StampEntry[] {
  const current = history.at(-1)?.stamp;
  const given = history.filter((e) => e.stamp === stamp);
  if (given.some((e) => e.digest === digest)) return [...history];
  if (given.length > 0 && stamp !== current) {
    throw new Error(
      `the stamp ${stamp} was given before ${current}: a stamp is never given again ` +
        '(raise WRITE_PATH.name in src/warehouse/write/applied-answers.ts)',
    );
  }
  if (given.length > 0 && !kept) {
    throw new Error(
      `the write path's output is ${digest}, and the stamp ${stamp} was given for ` +
        `${given.map((e) => e.digest).join(', ')}: without a new stamp, answers unchanged ` +
        'since the last run are taken as applied and the new rows are never built. Raise ' +
        'WRITE_PATH.name in src/warehouse/write/applied-answers.ts, or, if the same bodies still ' +
        'write the same rows, record with WRITE_PATH_SNAPSHOT_KEPT="<why>"',
    );
  }
  return [
    ...history,
    given.length > 0 ? { stamp, digest, kept: kept as string } : { stamp, digest },
  ];
}

/** Writes the snapshot: `relations` as built, the history with their digest under `stamp`. */
export function recordSnapshot(
  relations: Record<string, RelationDigest>,
  stamp: string,
  kept: string | undefined,
  file = SNAPSHOT_FILE,
): void {
  const history = existsSync(file) ? readSnapshot(file).stamps : [];
  const stamps = withStamp(history, stamp, outputDigest(relations), kept);
  writeFileSync(file, `${JSON.stringify({ stamps, relations }, null, 2)}\n`);
}
