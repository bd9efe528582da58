/**
 * The answers stamp follows the code (docs/warehouse.md, "Answers applied"): the stamp a
 * business's answers are recorded under (`APPLIED_BY`, src/warehouse/write/applied-answers.ts)
 * names the write path's output, the digests test/warehouse/write-path-equality.test.ts
 * compares against. A change that makes the same bodies write different rows records new
 * digests there; without a new stamp, every unchanged answer would be taken as applied and
 * the new rows would never be built.
 *
 * The stamp is the write path's name plus, when the records' shapes moved since it was
 * named, their digest: a column added to a shape moves it with no hand edit. Which stamp was
 * given for which output is the snapshot's history (`stamps`, appended by
 * `WRITE_PATH_SNAPSHOT=record`, test/warehouse/write-path-snapshot.ts), and this test holds
 * `APPLIED_BY` and the current output to it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { businessShape, listingShape, recordShape } from '../../src/api/index.ts';
import {
  APPLIED_BY,
  shapesDigest,
  stampOf,
  WRITE_PATH,
} from '../../src/warehouse/write/applied-answers.ts';
import { outputDigest, readSnapshot, type StampEntry, withStamp } from './write-path-snapshot.ts';

/**
 * The stamps deployed warehouses hold, with the outputs they were given for: the history
 * starts with them, unedited (a warehouse whose rows say `write-path-2` is read as this
 * write path's).
 */
const DEPLOYED: readonly StampEntry[] = [
  {
    stamp: 'write-path-2',
    digest: 'e6f43d8bc68531cfc4915d51f6207c8da98f6a79ab20b2f4390b718d1a279160',
  },
  {
    stamp: 'write-path-2',
    digest: 'a840e1f6abed6a301ec192b5e9b7c2a549adeb1820a88abe09f339b9b336a78f',
    kept:
      'review_backlog (migration 0021) is a read model of the stored reviews, filled by ' +
      'its migration: the same bodies write the same rows',
  },
  {
    stamp: 'write-path-2',
    digest: 'ebaa2d8e954af276cda0a7d0f72c56b8c55febf8971bcc4c703505354b9713f7',
    kept:
      "the sandbox's business names changed (English singulars: Bakery, not Bakerie), " +
      'so its bodies did, not the write path: row counts are the same',
  },
];

describe('the answers stamp', () => {
  it('names the write path whose output the equality snapshot holds', () => {
    const { stamps, relations } = readSnapshot();
    const digest = outputDigest(relations);
    expect(
      {
        stamp: APPLIED_BY,
        given: stamps.some((e) => e.stamp === APPLIED_BY && e.digest === digest),
      },
      `the write path's output is ${digest} and the stamp ${APPLIED_BY} (shapes ` +
        `${shapesDigest()}); record the snapshot (WRITE_PATH_SNAPSHOT=record npx vitest run ` +
        'test/warehouse/write-path-equality.test.ts), which appends the stamp to its history',
    ).toEqual({ stamp: stamps.at(-1)?.stamp, given: true });
  });

  it('keeps the stamps deployed warehouses hold, and gives each stamp once, in one run', () => {
    const { stamps } = readSnapshot();
    expect(stamps.slice(0, DEPLOYED.length)).toEqual(DEPLOYED);
    const pairs = stamps.map((e) => `${e.stamp} ${e.digest}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    stamps.forEach((entry, i) => {
      const before = stamps[i - 1];
      const again = before?.stamp === entry.stamp;
      // A stamp's later outputs each say why; a stamp is not given again after another.
      expect({ stamp: entry.stamp, kept: again }).toEqual({
        stamp: entry.stamp,
        kept: entry.kept !== undefined,
      });
      if (!again) expect(stamps.slice(0, i).map((e) => e.stamp)).not.toContain(entry.stamp);
    });
  });

  it('is the write path name while the shapes are those it was named with', () => {
    expect(stampOf(WRITE_PATH, WRITE_PATH.shapes)).toBe(WRITE_PATH.name);
    expect(stampOf(WRITE_PATH, 'abc')).toBe(`${WRITE_PATH.name}+shapes-abc`);
    expect(APPLIED_BY).toBe(stampOf(WRITE_PATH, shapesDigest()));
  });

  it('moves with a column added to a shape, and with nothing else of it', () => {
    const withColumn = recordShape<{ siteCategory: string | null }>()({
      siteCategory: listingShape.columns.orderStatus,
    });
    const listingWithColumn = {
      ...listingShape,
      fields: [...listingShape.fields, 'siteCategory'],
      columns: { ...listingShape.columns, siteCategory: withColumn.columns.siteCategory },
    };
    const today = shapesDigest({ listingShape });
    expect(shapesDigest({ listingShape: { ...listingShape } })).toBe(today);
    expect(shapesDigest({ listingShape: listingWithColumn })).not.toBe(today);
    const renamed = {
      ...listingShape,
      columns: { ...listingShape.columns, city: listingShape.columns.city.as('town') },
    };
    expect(shapesDigest({ listingShape: renamed })).not.toBe(today);
    // Values that are not shapes are not read.
    expect(shapesDigest({ listingShape, OTHER: { fields: 1 } })).toBe(today);
  });

  it('stays for what decides no row: a record type reworded, retyped or described', () => {
    const city = listingShape.columns.city;
    const described = {
      ...listingShape,
      columns: {
        ...listingShape.columns,
        city: { ...city, record: z.string().max(80).nullable().describe('the town, reworded') },
      },
    };
    const today = shapesDigest({ listingShape });
    expect(shapesDigest({ listingShape: described })).toBe(today);
  });

  it("moves with a list column's element shape (a business's hours, kept as JSON rows)", () => {
    const hours = businessShape.columns.businessHours;
    const element = hours.of as NonNullable<typeof hours.of>;
    const renamedElement = {
      ...element,
      columns: { ...element.columns, day: element.columns.day.as('weekday') },
    };
    const today = shapesDigest({ businessShape });
    const moved = {
      ...businessShape,
      columns: { ...businessShape.columns, businessHours: { ...hours, of: renamedElement } },
    };
    expect(shapesDigest({ businessShape: moved })).not.toBe(today);
  });
});

describe('recording the snapshot', () => {
  const history: StampEntry[] = [{ stamp: 's1', digest: 'd1' }];

  it('appends a new stamp with its output, and nothing for an output it was given', () => {
    expect(withStamp(history, 's1', 'd1')).toEqual(history);
    expect(withStamp(history, 's2', 'd2')).toEqual([...history, { stamp: 's2', digest: 'd2' }]);
    // A stamp moved with the shapes over the same output: given too.
    expect(withStamp(history, 's2', 'd1')).toEqual([...history, { stamp: 's2', digest: 'd1' }]);
  });

  it('refuses a new output under a given stamp without a reason, and a stamp given before', () => {
    expect(() => withStamp(history, 's1', 'd2')).toThrow(/Raise WRITE_PATH.name/);
    expect(withStamp(history, 's1', 'd2', 'a read model its migration fills')).toEqual([
      ...history,
      { stamp: 's1', digest: 'd2', kept: 'a read model its migration fills' },
    ]);
    const later = [...history, { stamp: 's2', digest: 'd2' }];
    expect(() => withStamp(later, 's1', 'd3', 'why')).toThrow(/never given again/);
  });
});
