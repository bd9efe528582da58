/**
 * The JS values both backends answer with: int8 and numeric as numbers, date as a
 * `YYYY-MM-DD` string, timestamptz as a Date (pg's parsers adjusted to PGlite's).
 */
import pg from 'pg';

// Type OIDs, from pg_type.
const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;
const INT8_ARRAY = 1016;
const NUMERIC_ARRAY = 1231;
const TEXT_ARRAY = 1009;

/** Ids are below 2^53 upstream, so a JS number is exact and friendlier than a bigint. */
const toNumber = (value: string): number => Number(value);

/** pg's own parser for any type OID (its typings only list the scalar built-ins). */
const defaultParser = pg.types.getTypeParser as (
  oid: number,
  format?: 'text' | 'binary',
) => (value: string) => unknown;

/** The pg driver's parsers, adjusted to match PGlite's (and ours). */
export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format === 'binary') return defaultParser(oid, 'binary');
    if (oid === INT8 || oid === NUMERIC) return toNumber;
    // pg parses a date as local midnight; keep it a calendar day, as PGlite does below.
    if (oid === DATE) return (value: string) => value;
    if (oid === INT8_ARRAY || oid === NUMERIC_ARRAY) {
      const parseTextArray = defaultParser(TEXT_ARRAY, 'text');
      return (value: string) =>
        (parseTextArray(value) as (string | null)[]).map((item) =>
          item === null ? null : Number(item),
        );
    }
    return defaultParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

/** PGlite already returns safe int8 values as numbers; numeric and date need the same treatment as pg. */
export const pgliteParsers = {
  [INT8]: toNumber,
  [NUMERIC]: toNumber,
  [DATE]: (value: string) => value,
};
