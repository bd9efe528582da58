/**
 * One shape per record (src/api/record-shape.ts, docs/contributing.md "Adding a column"):
 * a column added to a record's schema and shape reaches the row, the table's column list
 * and the Airbyte record's JSON schema with nothing else edited; and the type checker
 * (`npx tsc --noEmit -p .`, which covers this file) refuses a shape, a writer's table or a
 * catalog record that is out of step with its record. The `@ts-expect-error` lines below
 * are the refusals: were one of them accepted, tsc would fail on the unused directive.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Selectable } from 'kysely';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import * as api from '../../src/api/index.ts';
import {
  type AnyShape,
  type businessShape,
  columns,
  columnTypesOf,
  type countryShape,
  isRecordShape,
  type keywordShape,
  type Listing,
  listingShape,
  type RecordOf,
  type rankObservationShape,
  recordOf,
  recordSchemaOf,
  recordSchemaParts,
  recordShape,
  type reviewResponseShape,
  type reviewShape,
  rowOf,
  type stateShape,
  type subCategoryShape,
} from '../../src/api/index.ts';
import { listingSchema } from '../../src/api/listings.ts';
import { text } from '../../src/api/schemas.ts';
import type { businessRecord } from '../../src/streams/businesses.ts';
import { STREAM_DESCRIPTORS } from '../../src/streams/index.ts';
import type { keywordRecord } from '../../src/streams/keywords.ts';
import { listingRecord } from '../../src/streams/listings.ts';
import type { rankingRecord } from '../../src/streams/rankings.ts';
import type { countryRecord, stateRecord, subCategoryRecord } from '../../src/streams/reference.ts';
import type { reviewRecord, reviewResponseRecord } from '../../src/streams/reviews.ts';
import type { TableColumns } from '../../src/warehouse/database.ts';
import type { BusinessesTable } from '../../src/warehouse/tables/businesses.ts';
import type { KeywordsTable } from '../../src/warehouse/tables/keywords.ts';
import type { ListingsTable } from '../../src/warehouse/tables/listings.ts';
import type { RankSeriesTable } from '../../src/warehouse/tables/rankings.ts';
import type {
  CountriesTable,
  StatesTable,
  SubCategoriesTable,
} from '../../src/warehouse/tables/reference-data.ts';
import type { ReviewResponsesTable, ReviewsTable } from '../../src/warehouse/tables/reviews.ts';

// A copy of the listing schema with one more field, as a contributor adds `site_language`.
const listingWithCategorySchema = z.unknown().transform((input) => ({
  ...listingSchema.parse(input),
  siteLanguage: z.object({ site_language: text }).parse(input).site_language,
}));
type ListingWithCategory = z.output<typeof listingWithCategorySchema>;
const listingWithCategoryShape = recordShape<ListingWithCategory>()({
  ...listingShape.columns,
  siteLanguage: columns.maybeText,
});

const upstreamListing = {
  id: 7,
  site_name: 'Yelp',
  status: 'Accurate',
  sync_status: 'success',
  name: 'Cafe',
  name_valid: true,
  site_username: 'login',
  site_language: 'fr',
};

describe('a column added to a record', () => {
  const listing = listingWithCategorySchema.parse(upstreamListing);

  it('is in the row, after the columns it had, under its snake_case name', () => {
    const row = rowOf(listingWithCategoryShape, listing);
    const before = rowOf(listingShape, listingSchema.parse(upstreamListing));
    expect(row).toEqual({ ...before, site_language: 'fr' });
    expect(Object.keys(row)).toEqual([...Object.keys(before), 'site_language']);
    expect(row.listing_id).toBe(7);
    expect(row.has_site_credentials).toBe(true);
    expect(row).not.toHaveProperty('site_username');
  });

  it("is in the table's column list with its SQL type", () => {
    const types = columnTypesOf(listingWithCategoryShape);
    expect(types).toEqual({ ...columnTypesOf(listingShape), site_language: 'text' });
    expect(columnTypesOf(listingShape)).not.toHaveProperty('site_language');
  });

  it("is in the Airbyte record and its JSON schema, typed as the column's kind", () => {
    const prefix = { account: z.string(), business_id: z.int() };
    const schema = recordSchemaOf(listingWithCategoryShape, prefix);
    const json = z.toJSONSchema(schema) as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(json.properties['site_language']).toEqual({ type: ['string', 'null'] });
    expect(json.required).toContain('site_language');
    const before = z.toJSONSchema(listingRecord) as { properties: Record<string, unknown> };
    // The same JSON schema as the listing's other optional text, `order_status`.
    expect(json.properties['site_language']).toEqual(before.properties['order_status']);
    expect(Object.keys(json.properties)).toEqual([
      ...Object.keys(before.properties),
      'site_language',
    ]);
    const record = { account: 'a', business_id: 1, ...recordOf(listingWithCategoryShape, listing) };
    expect(schema.parse(record)).toEqual(record);
    expect(record.site_language).toBe('fr');
    expect(record.id).toBe(7);
  });
});

describe('the Airbyte catalog', () => {
  it("lists each record's shape, under the stream's own keys, and nothing else", () => {
    const exported = new Set(Object.values(api).filter(isRecordShape));
    const catalog: { name: string; schema: z.ZodObject }[] = STREAM_DESCRIPTORS.flatMap(
      (d): readonly { name: string; schema: z.ZodObject }[] => d.catalog,
    );
    expect(catalog.length).toBeGreaterThanOrEqual(9);
    for (const stream of catalog) {
      // Made by recordSchemaOf from a shape src/api exports, not written by hand.
      const parts = recordSchemaParts(stream.schema);
      expect(parts, stream.name).toBeDefined();
      const { shape, keys } = parts!;
      expect(exported.has(shape), stream.name).toBe(true);
      const fields = shape.fields.map((f) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
      expect(Object.keys(stream.schema.shape).sort(), stream.name).toEqual(
        [...keys, ...fields].sort(),
      );
      expect(
        keys.filter((k) => fields.includes(k)),
        stream.name,
      ).toEqual([]);
    }
    // The streams' own keys: the account first, then what places a record in it.
    const keysOf = Object.fromEntries(
      catalog.map((c) => [c.name, recordSchemaParts(c.schema)?.keys]),
    );
    expect(keysOf['listings']).toEqual(['account', 'business_id']);
    expect(keysOf['rankings']).toEqual(['account', 'business_id', 'day']);
    expect(keysOf['countries']).toEqual([]);
    // A schema written by hand is not taken for a shape's.
    expect(recordSchemaParts(z.object({ id: z.int() }))).toBeUndefined();
  });
});

describe('the type checker', () => {
  it('refuses a shape that misses a field, has one more, or types one differently', () => {
    // @ts-expect-error: `siteLanguage` has no column.
    recordShape<ListingWithCategory>()(listingShape.columns);
    recordShape<ListingWithCategory>()({
      ...listingShape.columns,
      // @ts-expect-error: text for a field that may be null.
      siteLanguage: columns.text,
    });
    recordShape<Listing>()({
      ...listingShape.columns,
      // @ts-expect-error: a column for a field `Listing` lacks.
      siteLanguage: columns.maybeText,
    });
    recordShape<Listing>()({
      ...listingShape.columns,
      // @ts-expect-error: a number for a text field.
      siteName: columns.id,
    });
    expect(listingShape.fields).toContain('siteName');
  });

  it("holds each writer's table to its record's shape", () => {
    // Every column the shape derives is in the table, typed as the shape types it.
    type Stores<Table, S extends AnyShape> =
      Pick<Table, keyof TableColumns<S> & keyof Table> extends TableColumns<S>
        ? TableColumns<S> extends Pick<Table, keyof TableColumns<S> & keyof Table>
          ? true
          : false
        : false;
    expectTypeOf<Stores<ListingsTable, typeof listingShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<ReviewsTable, typeof reviewShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<ReviewResponsesTable, typeof reviewResponseShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<KeywordsTable, typeof keywordShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<BusinessesTable, typeof businessShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<RankSeriesTable, typeof rankObservationShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<CountriesTable, typeof countryShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<StatesTable, typeof stateShape>>().toEqualTypeOf<true>();
    expectTypeOf<Stores<SubCategoriesTable, typeof subCategoryShape>>().toEqualTypeOf<true>();
    // A table that lacks a column of its shape, or types one differently, is refused.
    interface StaleListings extends Omit<ListingsTable, 'claimed'> {}
    expectTypeOf<Stores<StaleListings, typeof listingShape>>().toEqualTypeOf<false>();
    interface MistypedListings extends Omit<ListingsTable, 'claimed'> {
      claimed: string;
    }
    expectTypeOf<Stores<MistypedListings, typeof listingShape>>().toEqualTypeOf<false>();
    expectTypeOf<Selectable<ListingsTable>['site_name']>().toEqualTypeOf<string>();
  });

  it("holds each catalog record to its record's shape", () => {
    type Shows<
      Schema extends z.ZodType,
      S extends AnyShape,
    > = keyof RecordOf<S> extends keyof z.output<Schema>
      ? RecordOf<S> extends Pick<z.output<Schema>, keyof RecordOf<S> & keyof z.output<Schema>>
        ? Pick<z.output<Schema>, keyof RecordOf<S> & keyof z.output<Schema>> extends RecordOf<S>
          ? true
          : false
        : false
      : false;
    expectTypeOf<Shows<typeof listingRecord, typeof listingShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof reviewRecord, typeof reviewShape>>().toEqualTypeOf<true>();
    expectTypeOf<
      Shows<typeof reviewResponseRecord, typeof reviewResponseShape>
    >().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof keywordRecord, typeof keywordShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof businessRecord, typeof businessShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof rankingRecord, typeof rankObservationShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof countryRecord, typeof countryShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof stateRecord, typeof stateShape>>().toEqualTypeOf<true>();
    expectTypeOf<Shows<typeof subCategoryRecord, typeof subCategoryShape>>().toEqualTypeOf<true>();
    // A hand-written record that misses a field is refused.
    const stale = z.object({ account: z.string(), id: z.int(), name: z.string() });
    expectTypeOf<Shows<typeof stale, typeof businessShape>>().toEqualTypeOf<false>();
  });
});

describe('rows and records as built', () => {
  /** The oracle: each field under its name, through its conversion, one key at a time. */
  function oneKeyAtATime(shape: AnyShape, value: Record<string, unknown>, as: 'row' | 'record') {
    const out: [string, unknown][] = [];
    for (const field of shape.fields) {
      const c = shape.columns[field] as AnyShape['columns'][string];
      if (as === 'row' && !c.inRow) continue;
      const snake = field.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);
      const convert = as === 'row' ? c.toRow : c.toRecord;
      out.push([
        as === 'row' ? (c.name ?? snake) : snake,
        convert ? convert(value[field]) : value[field],
      ]);
    }
    return out;
  }

  /**
   * A value of the shape: each plain field its own text, each converted one the first of
   * null, an empty list and an empty object that both its conversions take.
   */
  function sample(shape: AnyShape): Record<string, unknown> {
    const value: Record<string, unknown> = { notAField: 'left out' };
    for (const field of shape.fields) {
      const c = shape.columns[field] as AnyShape['columns'][string];
      if (!c.toRow && !c.toRecord) {
        value[field] = `value of ${field}`;
        continue;
      }
      value[field] = [null, [], {}].find((candidate) => {
        try {
          c.toRow?.(candidate);
          c.toRecord?.(candidate);
          return true;
        } catch {
          return false;
        }
      });
    }
    return value;
  }

  it("gives every exported shape's row and record, in order, as one key at a time would", () => {
    const shapes = Object.values(api).filter(isRecordShape);
    expect(shapes.length).toBeGreaterThanOrEqual(9);
    for (const shape of shapes) {
      const value = sample(shape);
      // biome-ignore lint/suspicious/noExplicitAny: any shape's value
      expect(Object.entries(rowOf(shape, value as any))).toEqual(
        oneKeyAtATime(shape, value, 'row'),
      );
      // biome-ignore lint/suspicious/noExplicitAny: any shape's value
      expect(Object.entries(recordOf(shape, value as any))).toEqual(
        oneKeyAtATime(shape, value, 'record'),
      );
    }
  });

  it('gives the same rows in a process that may not compile code from strings', () => {
    const script = `
      import { listingShape, rowOf } from './src/api/index.ts';
      import { listingSchema } from './src/api/listings.ts';
      const listing = listingSchema.parse(${JSON.stringify(upstreamListing)});
      process.stdout.write(JSON.stringify(Object.entries(rowOf(listingShape, listing))));
    `;
    const child = spawnSync(
      process.execPath,
      ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script],
      { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8' },
    );
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual(
      Object.entries(rowOf(listingShape, listingSchema.parse(upstreamListing))),
    );
  });

  it('refuses a field named __proto__, which a literal would take for the prototype', () => {
    const odd = recordShape<{ ['__proto__']: string }>()({
      ['__proto__']: columns.text,
    } as never);
    expect(() => rowOf(odd, { ['__proto__']: 'x' } as never)).toThrow(/__proto__/);
  });
});
